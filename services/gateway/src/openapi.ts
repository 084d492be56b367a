import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LICENSES, LIMITS, M, WEBHOOK_DISABLE_REASONS, WEBHOOK_EVENT_TYPES } from '@docshare/contracts';
import { ROUTES, type Route } from './routes.ts';
import { CORS_ALLOWED_HEADERS, CORS_ALLOWED_METHODS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS } from './cors.ts';
import { API_PREFIX, DOCS_ASSET_FILES, DOCS_ASSET_VERSION, DOCS_PATH, LOCAL_ROUTES, OPENAPI_PATH, indexBody } from './docs-ui.ts';
import { WEBHOOK_HEADER_PARAMETERS, WEBHOOK_MESSAGE_SCHEMAS, WEBHOOK_MESSAGES_TAG, WEBHOOK_MESSAGE_TYPES, webhookCatalogue } from './openapi-webhooks.ts';

/*
 * The gateway's OpenAPI 3.1 document, built from the route table (routes.ts) and the gateway's own
 * routes (docs-ui.ts), so that it cannot drift from them. Every request body, parameter and
 * response carries an example; every error example is a message of `M`, worded as the API sends
 * it. services/gateway/test/openapi.test.ts validates each example against its schema, and
 * tests/conformance/openapi.test.ts sends examples to a running server and validates the answers.
 */

type Obj = Record<string, unknown>;

/**
 * The release's version (`info.version`): the root package.json's, which the release tool
 * (changesets) bumps; read when the gateway starts, never written here. The image keeps that file
 * at the same place relative to this one (/app/package.json).
 */
export const RELEASE_VERSION: string = (JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string }).version;

const ref = (kind: 'schemas' | 'headers' | 'parameters' | 'responses', name: string): Obj => ({ $ref: `#/components/${kind}/${name}` });
const schema = (name: string): Obj => ref('schemas', name);
const header = (name: string): Obj => ref('headers', name);
const param = (name: string): Obj => ref('parameters', name);

const str: Obj = { type: 'string' };
const int: Obj = { type: 'integer' };
const uri: Obj = { type: 'string', format: 'uri' };
const date: Obj = { type: 'string', format: 'date' };
const obj = (properties: Record<string, Obj>, required = Object.keys(properties)): Obj => ({ type: 'object', properties, required });
const success = (properties: Record<string, Obj> = {}, required?: string[]): Obj =>
  obj({ status: { const: 'success' }, ...properties }, required);

/* ---------- example values ---------- */

const TOKEN = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpYXQiOjE3NjM5MDU2MDAsImV4cCI6MTc2Mzk5MjAwMCwic3ViIjoiNDIifQ.5mhBHqs5_DTLdINd9p5m7ZJ6XD7Xc55kIaCRY5r6HM0';
const REQUEST_ID = '0f8fad5b-d9cb-469f-a165-70867728950e';
const IDEMPOTENCY_KEY = '8e03978e-40d5-43e8-bc93-6894a57f9324';
const SIGNATURE = '3f1c0d6b8e2a4f7c9b5e1d3a6c8f0b2e4d7a9c1e3b5f7d9a2c4e6b8d0f1a3c5e';
const EXPIRES = 1763906500;
const ETAG = '"q3L0Xw9c1nD8u2Jd5a7Rk1bT"';
const PAGE_ETAG = 'W/"Zf2m8Qx1KcP0tR4vLw7yNa3b"';
const LAST_MODIFIED = 'Sun, 23 Nov 2025 14:06:27 GMT';
const UPLOAD_ID = '3b241101-e2bb-4255-8caf-4136c566a962';
const PART_ETAG = '"5d41402abc4b2a76b9719d911017c592"';
const MIB = 1024 * 1024;
const WEBHOOK_SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD3fKcOGn9kLA=';
const WEBHOOK_SECRET_ROTATED = 'whsec_6dR1x0cmNHqvW9tbkL3CN7bOp3cZFpqI0wGd1n2mX8s=';
const MESSAGE_ID = 'msg_5f2b8c3e9a414d7bb1e60c8d2f4a6e19';
const EVENT_ID = '5f2b8c3e-9a41-4d7b-b1e6-0c8d2f4a6e19';
const ERASURE_ID = '9c4d2e7a-1b3f-4a6c-8d5e-2f7b9a1c3e50';
const EXPORT_ID = 'd1e8a3b5-7c2f-4e9a-b6d4-3a5c7e9f1b28';
const EXPORT_SHA256 = 'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9';
/** Webhook listings' `cursor`: only ever copied from a `next_cursor`. */
const WEBHOOK_CURSOR = 'eyJhdCI6MTc2MzkwNjc4NzAwMCwiaWQiOiIxOm1zZ181ZjJiIn0';

/** The name of a message in `M`, used as its example's key. */
const MESSAGE_KEY = new Map<string, string>(Object.entries(M).map(([key, text]) => [text, key]));

const errorExamples = (messages: readonly string[]): Obj => Object.fromEntries(messages.map((message) => {
  const key = MESSAGE_KEY.get(message);
  if (key === undefined) throw new Error(`not a message of M: ${message}`);
  return [key, { summary: message, value: { status: 'error', message } }];
}));

const one = (summary: string, value: unknown): Obj => ({ default: { summary, value } });

/* ---------- headers ---------- */

/** On every answer that passed the rate limit (every answer of a route but the HTTP layer's own refusals). */
const EDGE_HEADERS: Obj = {
  'X-Request-Id': header('XRequestId'),
  'RateLimit-Limit': header('RateLimitLimit'),
  'RateLimit-Remaining': header('RateLimitRemaining'),
  'RateLimit-Reset': header('RateLimitReset'),
  'RateLimit-Policy': header('RateLimitPolicy'),
  RateLimit: header('RateLimit'),
  'Access-Control-Allow-Origin': header('AccessControlAllowOrigin'),
  'Access-Control-Expose-Headers': header('AccessControlExposeHeaders'),
  Vary: header('Vary'),
};
/** JSON answers of the API: never stored by a cache. */
const JSON_HEADERS: Obj = { ...EDGE_HEADERS, 'Cache-Control': header('CacheControlNoStore') };
/** A write's answer. */
const WRITE_HEADERS: Obj = { ...JSON_HEADERS, 'X-Docshare-Consistency': header('XDocshareConsistency'), 'Idempotent-Replayed': header('IdempotentReplayed') };
/** Conditional GETs (the view page, a file's bytes). */
const CONTENT_VALIDATORS: Obj = { ETag: header('ETag'), 'Last-Modified': header('LastModified') };
const PAGE_VALIDATORS: Obj = { ETag: header('PageETag'), 'Last-Modified': header('LastModified') };

const HEADERS: Record<string, Obj> = {
  XRequestId: {
    description: 'The request\'s id: the one the client sent (1–128 visible ASCII characters), else a new UUID v4. In every log line of the request.',
    required: true, schema: { type: 'string', minLength: 1, maxLength: 128 }, example: REQUEST_ID,
  },
  RateLimitLimit: { description: 'Requests allowed per window (per user with a valid token, else per client IP).', required: true, schema: { type: 'integer', minimum: 0 }, example: 30 },
  RateLimitRemaining: { description: 'Requests left in the current window.', required: true, schema: { type: 'integer', minimum: 0 }, example: 29 },
  RateLimitReset: { description: 'Seconds until the window resets.', required: true, schema: { type: 'integer', minimum: 0 }, example: 60 },
  RateLimitPolicy: { description: 'The policy, as the IETF draft `RateLimit-Policy` field: quota `q` per window `w` seconds.', required: true, schema: str, example: '"default";q=30;w=60' },
  RateLimit: { description: 'The IETF draft `RateLimit` field: `r` requests remaining, `t` seconds to the reset.', required: true, schema: str, example: '"default";r=29;t=60' },
  RetryAfter: { description: 'Seconds to wait before trying again.', required: true, schema: { type: 'integer', minimum: 1 }, example: 5 },
  Allow: { description: 'The methods the path answers.', required: true, schema: str, example: 'POST' },
  CacheControlNoStore: { description: 'JSON answers of the API are never kept by a cache: `no-store`.', schema: str, example: 'no-store' },
  XDocshareConsistency: {
    description: 'The position of the write in the event log. The gateway makes your own later reads wait for it (at most 5 s); send it as a request header to read another user\'s write at once.',
    schema: { type: 'integer', minimum: 0 }, example: 1287,
  },
  IdempotentReplayed: {
    description: 'Present on an answer replayed for a repeated `Idempotency-Key`: the write was done once, by the first request.',
    schema: { type: 'string', enum: ['true'] }, example: 'true',
  },
  AccessControlAllowOrigin: { description: 'CORS: the request\'s `Origin`, when it is one of `CORS_ORIGINS`.', schema: str, example: 'https://app.example.com' },
  AccessControlExposeHeaders: { description: 'CORS: the response headers a browser script may read.', schema: str, example: CORS_EXPOSED_HEADERS.join(', ') },
  AccessControlAllowMethods: { description: 'CORS preflight: the methods allowed.', schema: str, example: CORS_ALLOWED_METHODS.join(', ') },
  AccessControlAllowHeaders: { description: 'CORS preflight: the request headers allowed.', schema: str, example: CORS_ALLOWED_HEADERS.join(', ') },
  AccessControlMaxAge: { description: 'CORS preflight: seconds a browser may keep this answer.', schema: { type: 'integer', minimum: 0 }, example: CORS_MAX_AGE_SECONDS },
  Vary: { description: 'The request headers the answer depends on.', schema: str, example: 'Origin' },
  PartETag: { description: 'The part\'s entity tag, quoted (as S3 gives it): send it back in `complete`.', required: true, schema: str, example: PART_ETAG },
  ETag: { description: 'Strong entity tag of the file\'s bytes (they never change): send it back in `If-None-Match`, or in `If-Range` with `Range`.', schema: str, example: ETAG },
  PageETag: { description: 'Weak entity tag of what the page shows: send it back in `If-None-Match`.', schema: str, example: PAGE_ETAG },
  LastModified: { description: 'When the file (its bytes: the upload; its page: its facts) last changed: send it back in `If-Modified-Since`.', schema: str, example: LAST_MODIFIED },
  ExportContentDisposition: { description: 'An attachment named after the export.', required: true, schema: str, example: `attachment; filename="docshare-export-${EXPORT_ID}.zip"` },
  ContentDisposition: { description: '`attachment` (or `inline` with `disposition=inline` for PDF, images and plain text) with the original file name.', required: true, schema: str, example: 'attachment; filename="README.md"' },
  AcceptRanges: { description: 'Byte ranges are supported.', schema: { type: 'string', enum: ['bytes'] }, example: 'bytes' },
  ContentRange: { description: 'The part sent, or (416) `bytes */<size>`.', required: true, schema: str, example: 'bytes 0-99/1024' },
  ContentSecurityPolicy: { description: 'The page\'s Content-Security-Policy.', schema: str, example: "default-src 'none'; script-src 'self'" },
  CacheControlContent: { description: 'A file\'s bytes and its page: only the client\'s own cache may keep them, and it asks again before each use (`private, no-cache`); a redirect or a 404 page is not kept (`no-store`).', schema: str, example: 'private, no-cache' },
  CacheControlImmutable: { description: 'A versioned static file: kept for a year.', required: true, schema: str, example: 'public, max-age=31536000, immutable' },
  CacheControlNoCache: { description: 'Revalidated on every use.', schema: str, example: 'no-cache' },
  XContentTypeOptions: { description: 'Never sniffed.', schema: { type: 'string', enum: ['nosniff'] }, example: 'nosniff' },
  Location: { description: 'Where the bytes are served (the blob store, when `BLOB_PUBLIC_URL` is set).', required: true, schema: uri, example: 'https://blobs.example.com/docshare/files/1?X-Amz-Signature=3f1c0d6b' },
};

/* ---------- parameters ---------- */

/*
 * Swagger UI's "Try it out" fills a parameter in with its `example` (or its schema's `example` or
 * `default`), and sends it unless the user clears it. That suits a value that works on a fresh
 * server (file 1, page 1); not a value that only an earlier answer gives (a write's consistency
 * position, an ETag, a signed link's expiry and signature) nor one that must be new on each request
 * (an Idempotency-Key): a made-up one makes the read wait 5 s, the write 422, the link 403. Those
 * carry their example in the schema's `examples` (JSON Schema), which the page shows and never fills.
 */
const shownOnly = (schemaObj: Obj, example: unknown): Obj => ({ ...schemaObj, examples: [example] });

const PARAMETERS: Record<string, Obj> = {
  XRequestId: {
    name: 'X-Request-Id', in: 'header', required: false,
    description: 'Your own id for the request (1–128 visible ASCII characters), echoed in the answer; another value is replaced by a new UUID.',
    schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,128}$' }, example: 'checkout-7f3a91',
  },
  IdempotencyKey: {
    name: 'Idempotency-Key', in: 'header', required: false,
    description: 'Makes a retry safe: the same key with the same request (per user) is done once, and a repeat replays the first answer with `Idempotent-Replayed: true` for 24 hours. 1–255 printable ASCII characters, bare or as a quoted string. The same key with another request is 422; while the first is still being worked on, 409. Use a new key for each new request (e.g. a fresh UUID); leave it empty when you do not mean to retry.',
    schema: shownOnly({ type: 'string', minLength: 1, maxLength: 257, pattern: '^[\\x20-\\x7e]+$' }, IDEMPOTENCY_KEY),
  },
  XDocshareConsistency: {
    name: 'X-Docshare-Consistency', in: 'header', required: false,
    description: 'The `X-Docshare-Consistency` header of a write\'s answer (e.g. another user\'s write), copied as it is: the read waits (at most 5 s) until it shows that write. Leave it empty otherwise: your own writes are awaited without it, and a position the server has not reached yet makes the read wait the whole 5 s.',
    schema: shownOnly({ type: 'integer', minimum: 0 }, 1287),
  },
  page: { name: 'page', in: 'query', required: false, description: 'Page number, from 1.', schema: { type: 'integer', minimum: 1, default: 1 }, example: 1 },
  uploadIdPath: { name: 'uploadId', in: 'path', required: true, description: 'The `upload_id` answered when the upload started.', schema: { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' }, example: UPLOAD_ID },
  partNumberPath: { name: 'partNumber', in: 'path', required: true, description: 'The part\'s number, from 1 to `part_count`.', schema: { type: 'string', pattern: '^[1-9][0-9]*$' }, example: '1' },
  fileIdPath: { name: 'fileId', in: 'path', required: true, description: 'The file\'s id.', schema: { type: 'string', pattern: '^[0-9]+$' }, example: '1' },
  erasureIdPath: { name: 'erasureId', in: 'path', required: true, description: 'The `erasure_id` of the erasure, part of its `status_url`.', schema: { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' }, example: ERASURE_ID },
  exportIdPath: { name: 'exportId', in: 'path', required: true, description: 'The `export_id` of the export, part of its `download_url`.', schema: { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' }, example: EXPORT_ID },
  webhookIdPath: { name: 'webhookId', in: 'path', required: true, description: 'The webhook\'s `id`, as registering it answered.', schema: { type: 'string', pattern: '^[0-9]+$' }, example: '1' },
  ...WEBHOOK_HEADER_PARAMETERS,
  Range: { name: 'Range', in: 'header', required: false, description: 'One byte range (e.g. `bytes=0-99`): 206 with that part. Empty: the whole file.', schema: shownOnly(str, 'bytes=0-99') },
  IfNoneMatch: { name: 'If-None-Match', in: 'header', required: false, description: 'The `ETag` of the copy you hold (or `*`): 304 when it still matches (weak comparison).', schema: shownOnly(str, ETAG) },
  IfModifiedSince: { name: 'If-Modified-Since', in: 'header', required: false, description: 'A `Last-Modified` you hold: 304 when nothing changed since (ignored with `If-None-Match`).', schema: shownOnly(str, LAST_MODIFIED) },
  IfRange: { name: 'If-Range', in: 'header', required: false, description: 'With `Range`: the part only while the file is still this `ETag` (strong match) or exactly this `Last-Modified`, else the whole file (200).', schema: shownOnly(str, ETAG) },
};

const perPage = (byDefault: number): Obj => ({
  name: 'per_page', in: 'query', required: false, description: `Items per page (1–${LIMITS.perPageMax}).`,
  schema: { type: 'integer', minimum: 1, maximum: LIMITS.perPageMax, default: byDefault }, example: byDefault,
});

/* ---------- schemas ---------- */

/** How unique viewers and downloaders are counted (the stats projector's sketches, design of issue 21). */
const UNIQUE_ACCURACY = 'Exact up to 1,024 distinct viewers of a file (or of all your files) in a day, a HyperLogLog estimate above (2^14 registers, standard error 0.81 %).';
/** Trending merges hourly sketches (2^12 registers each) over the window. */
const TRENDING_ACCURACY = 'Exact up to 256 distinct viewers of a file over the window, a HyperLogLog estimate above (2^12 registers, standard error 1.6 %).';
const SUMMED_UNIQUES = 'Unique viewers and downloaders are the sums of the days\' (an anonymous viewer\'s key changes every UTC day, so one cannot be followed from day to day).';
const count = (description: string): Obj => ({ type: 'integer', minimum: 0, description });
/** The counters of a day (and of a range's totals). */
const DAY_COUNTS: Record<string, Obj> = {
  views: count('Views of the file pages, the owner\'s included.'),
  unique_viewers: count(`Distinct viewers: signed-in users by id, others by an anonymous key of the day; the owner not counted. ${UNIQUE_ACCURACY}`),
  downloads: count('Downloads authorised (api-download), the owner\'s included.'),
  unique_downloaders: count('Distinct users who downloaded; the owner not counted. Counted like unique_viewers.'),
  sales: count('First purchases of a file by a buyer.'),
  comments: count('Comments received.'),
};

const SCHEMAS: Record<string, Obj> = {
  Error: {
    ...obj({ status: { const: 'error' }, message: { type: 'string', description: 'What went wrong, worded as listed for each status.' } }),
    description: 'Every error answer: `status` is `error` and `message` says why.',
  },
  Token: {
    ...success({ message: str, user_id: int, token: { type: 'string', description: 'JWT; send it as `X-Authorization: Bearer <token>`.' } }),
  },
  RegisterRequest: obj({
    name: { type: 'string', maxLength: LIMITS.name },
    email: { type: 'string', format: 'email', maxLength: LIMITS.email },
    password: { type: 'string', minLength: LIMITS.passwordMin, maxLength: LIMITS.password },
  }),
  LoginRequest: obj({ email: str, password: str }),
  // Each field's `examples` is what Swagger UI's form is filled with ("Try it out"): the README's
  // upload, into a new category (category_id empty) or the one of that name if it exists.
  UploadForm: obj({
    file: { type: 'string', contentMediaType: 'application/octet-stream', description: `The file; at most MAX_UPLOAD_BYTES (default 100 MiB), within the user's storage quota.` },
    title: { type: 'string', maxLength: LIMITS.title, examples: ['Read me'] },
    description: { type: 'string', maxLength: LIMITS.description, examples: ['The front door'] },
    tags: { type: 'string', maxLength: LIMITS.tags, description: 'Comma-separated.', examples: ['docs,intro'] },
    category_id: { type: 'string', description: 'An existing category (see api-categories); wins over new_category_name. Empty: none.', examples: ['', '1'] },
    new_category_name: { type: 'string', maxLength: LIMITS.categoryName, description: 'Used when category_id is absent; an existing name (ignoring case) is reused.', examples: ['Documentation'] },
    category_description: { type: 'string', maxLength: LIMITS.categoryDescription, description: 'A new category\'s description.', examples: ['How to use docshare'] },
    category_tags: { type: 'string', description: 'A new category\'s tags, comma-separated.', examples: ['docs'] },
    cc_license: { type: 'string', enum: [...LICENSES], description: 'Matched ignoring case and extra spaces.', examples: ['CC BY'] },
    video: { type: 'string', maxLength: LIMITS.videoUrl, description: 'An http(s) URL; may be empty.', examples: ['', 'https://video.example.com/watch/quick-start'] },
  }, ['file', 'title', 'description', 'tags', 'cc_license']),
  CreateUploadRequest: obj({
    file_name: { type: 'string', minLength: 1, description: 'The file\'s name (as a form upload\'s file part names it).', examples: ['engine-notes.pdf'] },
    size: { type: ['integer', 'string'], description: 'The file\'s size in bytes: a positive integer, as a number or a string of digits; at most MAX_RESUMABLE_BYTES (default 5 GiB), within your storage quota (open uploads count against it until they end).', examples: [12582912] },
    content_type: { type: 'string', description: '`type/subtype`; used when the bytes are not of a known format (default `application/octet-stream`).', examples: ['application/pdf'] },
    title: { type: 'string', maxLength: LIMITS.title, examples: ['Read me'] },
    description: { type: 'string', maxLength: LIMITS.description, examples: ['The front door'] },
    tags: { type: 'string', maxLength: LIMITS.tags, description: 'Comma-separated.', examples: ['docs,intro'] },
    category_id: { type: ['string', 'integer'], description: 'An existing category; wins over new_category_name.', examples: ['1'] },
    new_category_name: { type: 'string', maxLength: LIMITS.categoryName, description: 'Used when category_id is absent; an existing name (ignoring case) is reused.', examples: ['Documentation'] },
    category_description: { type: 'string', maxLength: LIMITS.categoryDescription, description: 'A new category\'s description.', examples: ['How to use docshare'] },
    category_tags: { type: 'string', description: 'A new category\'s tags, comma-separated.', examples: ['docs'] },
    cc_license: { type: 'string', enum: [...LICENSES], description: 'Matched ignoring case and extra spaces.', examples: ['CC BY'] },
    video: { type: 'string', maxLength: LIMITS.videoUrl, description: 'An http(s) URL; may be empty.', examples: [''] },
  }, ['file_name', 'size', 'title', 'description', 'tags', 'cc_license']),
  UploadPartUrl: obj({
    part_number: { type: 'integer', minimum: 1 },
    url: { ...uri, description: 'Where to PUT the part\'s bytes, until `expires_at`: opaque (a presigned URL of the blob store, or docshare\'s signed part URL); needs no token.' },
  }),
  UploadStarted: success({
    message: str,
    upload_id: { type: 'string', format: 'uuid' },
    part_size: { type: 'integer', minimum: 5 * MIB, description: 'Every part is this many bytes but the last (the remainder).' },
    part_count: { type: 'integer', minimum: 1 },
    expires_at: { type: 'string', format: 'date-time', description: 'When the upload expires (UPLOAD_SESSION_TTL_SECONDS after its start, default 24 h): its parts are removed and its quota released.' },
    parts: { type: 'array', items: schema('UploadPartUrl'), description: 'Every part, 1 to part_count.' },
  }),
  ReceivedPart: obj({ part_number: { type: 'integer', minimum: 1 }, size: { type: 'integer', minimum: 0 }, etag: str }),
  UploadState: success({
    upload: obj({
      upload_id: { type: 'string', format: 'uuid' },
      state: { type: 'string', enum: ['pending', 'completed', 'aborted', 'expired'] },
      file_name: str, size: { type: 'integer', minimum: 1 }, part_size: { type: 'integer', minimum: 1 }, part_count: { type: 'integer', minimum: 1 },
      expires_at: { type: 'string', format: 'date-time' },
      received: { type: 'array', items: schema('ReceivedPart'), description: 'The parts the store holds, ascending.' },
      parts: { type: 'array', items: schema('UploadPartUrl'), description: 'Pending: the parts not received yet, with fresh URLs. Otherwise empty.' },
      file_id: { type: 'string', pattern: '^[0-9]+$', description: 'The file recorded, once completed.' },
    }, ['upload_id', 'state', 'file_name', 'size', 'part_size', 'part_count', 'expires_at', 'received', 'parts']),
  }),
  CompleteUploadRequest: obj({
    parts: {
      type: 'array', description: 'Every part with the ETag its PUT answered. Absent: every part received.',
      items: obj({ part_number: { type: 'integer', minimum: 1 }, etag: str }),
    },
  }, []),
  PartReceived: success({ message: str, part_number: { type: 'integer', minimum: 1 }, etag: str }),
  Uploaded: success({ message: str, file_id: { type: 'string', pattern: '^[0-9]+$' }, category_id: { type: 'string', pattern: '^[0-9]+$' }, category_name: str }),
  DownloadReady: success({
    message: str, original_file_name: str,
    download_url: { ...uri, description: 'Signed, expiring link to the bytes (GET /files/{fileId}/content); needs no token.' },
  }),
  Message: success({ message: str }),
  EraseAccountRequest: {
    ...obj({ password: { type: 'string', description: 'Your password: erasing cannot be undone, so it is asked again.' } }),
  },
  ErasureAccepted: success({
    message: str,
    erasure_id: { type: 'string', format: 'uuid' },
    status_url: { ...uri, description: 'A signed link to the erasure\'s state: needs no token (yours stop working at once), valid 7 days.' },
  }),
  ErasureStatus: success({
    erasure_id: { type: 'string', format: 'uuid' },
    state: { type: 'string', enum: ['pending', 'done'] },
    files_deleted: count('Files of the account deleted (0 while pending).'),
    comments_redacted: count('Comments the account wrote, kept for the files\' owners and counted, their text now `[deleted]` (0 while pending).'),
  }),
  ExportAccepted: success({ message: str, export_id: { type: 'string', format: 'uuid' } }),
  ExportStatus: success({
    export: {
      oneOf: [
        obj({ state: { const: 'pending' } }),
        obj({
          state: { const: 'ready' },
          download_url: { ...uri, description: 'A signed link to the ZIP: needs no token, valid until `expires_at`.' },
          sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the ZIP (hex).' },
          bytes: count('Size of the ZIP.'),
          expires_at: { type: 'string', format: 'date-time', description: 'When the export is removed (7 days after it was made).' },
        }),
      ],
    },
  }),
  FileIdRequest: obj({ file_id: { type: ['string', 'integer'], description: 'A positive integer, as a number or a string of digits.' } }),
  DeleteRequest: obj({ id: { type: ['string', 'integer'], description: 'The file\'s id.' } }),
  CommentRequest: obj({ file_id: { type: ['string', 'integer'] }, comment: { type: 'string', maxLength: LIMITS.comment } }),
  CommentPosted: success({ message: str, comment_id: int }),
  UpdateRequest: {
    ...obj({
      id: { type: ['string', 'integer'] }, for_sale: { type: 'boolean' }, price: { type: 'number', minimum: 0 }, enabled: { type: 'boolean' },
      title: { type: 'string', maxLength: LIMITS.title }, description: { type: 'string', maxLength: LIMITS.description }, tags: { type: 'string', maxLength: LIMITS.tags },
    }, ['id']),
    description: 'The file\'s id and at least one change.',
  },
  Purchased: success({
    message: str, sale_id: int,
    download_url: { ...uri, description: 'Signed, expiring link to the bytes bought (GET /files/{fileId}/content?sale=…); needs no token, works while the file is for sale.' },
  }),
  Purchase: obj({
    id: { ...int, description: 'The file\'s id.' }, title: str, sale_id: int,
    purchased_at: { type: 'string', format: 'date-time' },
    download_url: { ...uri, description: 'Signed, expiring link to the bytes; a fresh one on every read.' },
  }),
  Purchases: success({ data: { type: 'array', items: schema('Purchase') }, total: int, page: int, per_page: int }),
  Category: obj({ id: int, name: str, description: str, tags: { type: 'string', description: 'Comma-separated.' } }),
  Categories: success({ data: { type: 'array', items: schema('Category') }, total: int, page: int, per_page: int }),
  SearchRequest: obj({
    search: { type: 'string', maxLength: LIMITS.searchTerm, description: 'Matched against title, tags, category, description and the text extracted from the file (in that order of weight), tolerant of small typos.' },
    page: { type: 'integer', minimum: 1, description: 'Ignored with `cursor`. Pages reach the first 10,000 matches; a cursor goes on.' },
    per_page: { type: 'integer', minimum: 1, maximum: LIMITS.perPageMax, default: LIMITS.perPageDefault },
    facets: { type: 'boolean', default: false, description: 'Add `facets`: counts per category, licence and tag over every match.' },
    filters: {
      type: 'object',
      description: 'Every filter given must hold; tags compare without case, and a file must carry every tag listed.',
      properties: {
        category_id: { type: ['string', 'integer'] },
        license: { type: 'string', enum: [...LICENSES] },
        tags: { type: 'array', items: str, maxItems: 20 },
      },
    },
    cursor: { type: 'string', description: '`next_cursor` of the previous page, with the same `search` and `filters`: the following page, from the same snapshot of the index, each file as it is now (one deleted or disabled since is left out). Expires 5 minutes after its last use, and 15 minutes after the first page at the latest.' },
  }, ['search']),
  SearchHit: obj({
    id: str, title: str, link: uri, description: str, category: str, tag: { type: 'string', description: 'Comma-separated.' },
    snippet: { type: 'string', description: 'HTML: an escaped excerpt around the best match, matched words in <mark>…</mark>.' },
  }),
  Facets: obj({
    category: { type: 'array', items: obj({ id: str, name: str, count: int }) },
    license: { type: 'array', items: obj({ value: str, count: int }) },
    tag: { type: 'array', items: obj({ value: str, count: int }) },
  }),
  SearchResults: success({
    results: { type: 'array', items: schema('SearchHit') }, total: int, page: int, per_page: int,
    facets: schema('Facets'),
    next_cursor: { type: 'string', description: 'Present while more matches follow this page.' },
  }, ['status', 'results', 'total', 'page', 'per_page']),
  Stats: success({ data: obj({ total_comments: int, total_files: int, total_views: int, total_downloads: int, total_sales: int }) }),
  DayCounts: obj({ date: { ...date, description: 'The UTC day.' }, ...DAY_COUNTS }),
  DayTotals: { ...obj(DAY_COUNTS), description: `The range's sums. ${SUMMED_UNIQUES}` },
  DailyStats: success({
    timezone: { const: 'UTC', description: 'Days are UTC days.' }, from: date, to: date,
    days: { type: 'array', items: schema('DayCounts'), description: 'Every day of the range, ascending, zeros included.' },
    totals: schema('DayTotals'),
  }),
  TopFile: obj({
    id: { type: 'string', pattern: '^[0-9]+$' }, title: str, link: { ...uri, description: 'The file\'s public page.' },
    value: { type: 'integer', minimum: 1, description: 'The metric summed over the days (unique viewers: the sum of each day\'s).' },
  }),
  TopFiles: success({ results: { type: 'array', items: schema('TopFile'), description: 'Highest value first, then by id; files with a value of 0 are left out.' } }),
  TrendingFile: obj({
    id: { type: 'string', pattern: '^[0-9]+$' }, title: str, link: { ...uri, description: 'The file\'s public page.' },
    category: { type: 'string', description: 'The category\'s name.' },
    unique_viewers: { type: 'integer', minimum: 0, description: `Distinct viewers over the whole window (the owner not counted). ${TRENDING_ACCURACY}` },
    views: { type: 'integer', minimum: 1, description: 'Views over the window, the owner\'s included.' },
  }),
  TrendingFiles: success({ results: { type: 'array', items: schema('TrendingFile'), description: 'Most unique viewers first, then most views, then by id.' } }),
  UserFile: obj({ file_id: int, upload_date: date, title: str, description: str, file_url: uri }),
  UserFiles: success({ user: obj({ id: int, name: str }), files: { type: 'array', items: schema('UserFile') }, total: int, page: int, per_page: int }),
  PageRequest: obj({ page: { type: 'integer', minimum: 1 }, per_page: { type: 'integer', minimum: 1, maximum: LIMITS.perPageMax } }, []),
  ReceivedComment: obj({ comment_id: int, submission_date: date, title: str, comment: str, link: uri }),
  ReceivedComments: success({ data: { type: 'array', items: schema('ReceivedComment') }, total: int, page: int, per_page: int }),
  WebhookEventType: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES], description: 'A message type an endpoint may subscribe to (the catalogue: this document\'s `webhooks`).' },
  Webhook: obj({
    id: { type: 'integer', minimum: 1 },
    url: { ...uri, description: 'Where messages are POSTed.' },
    events: { type: 'array', items: schema('WebhookEventType'), description: 'The message types sent to it.' },
    description: { type: 'string', maxLength: 500 },
    enabled: { type: 'boolean', description: 'False: nothing is sent to it (messages meanwhile are kept, and can be replayed once it is enabled again).' },
    disabled_reason: { type: ['string', 'null'], enum: [...WEBHOOK_DISABLE_REASONS, null], description: 'Why docshare disabled it: `gone` (it answered 410), `failing` (every attempt failed for WEBHOOK_DISABLE_AFTER, default 5 days). Null when enabled, or disabled by you.' },
    created_at: { type: 'string', format: 'date-time' },
  }),
  CreateWebhookRequest: obj({
    url: { type: 'string', maxLength: 2048, description: '`https` (`http` only where WEBHOOK_ALLOW_HTTP is set), no user or password, and a host that resolves only to public addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS lifts that): checked now, and again at every connection.', examples: ['https://hooks.example.com/docshare'] },
    events: { type: 'array', minItems: 1, uniqueItems: true, items: schema('WebhookEventType'), examples: [['file.uploaded', 'file.processed', 'comment.received']] },
    description: { type: 'string', maxLength: 500, description: 'Yours to recognise it by; default empty.', examples: ['Index new files'] },
  }, ['url', 'events']),
  UpdateWebhookRequest: {
    ...obj({
      url: { type: 'string', maxLength: 2048, description: 'Checked as on registration.' },
      events: { type: 'array', minItems: 1, uniqueItems: true, items: schema('WebhookEventType') },
      description: { type: 'string', maxLength: 500 },
      enabled: { type: 'boolean', description: '`true` enables an endpoint docshare disabled (`disabled_reason` is cleared); `false` stops deliveries.' },
    }, []),
    description: 'At least one change.',
  },
  WebhookRegistered: success({
    message: str, webhook: schema('Webhook'),
    secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]+=*$', description: 'The signing secret (Standard Webhooks): shown this once. Keep it where your receiver verifies signatures.' },
  }),
  WebhookList: success({ webhooks: { type: 'array', items: schema('Webhook'), description: 'Oldest first; deleted ones are not listed.' } }),
  WebhookOne: success({ webhook: schema('Webhook') }),
  WebhookChanged: success({ message: str, webhook: schema('Webhook') }),
  WebhookSecretRotated: success({
    message: str,
    secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]+=*$', description: 'The new signing secret: shown this once.' },
    previous_secret_expires_at: { type: 'string', format: 'date-time', description: 'Until then messages carry a signature by each secret (the new one first).' },
  }),
  WebhookTestQueued: success({ message: str, message_id: { type: 'string', pattern: '^msg_[0-9a-f]{32}$', description: 'The `webhook-id` of the test message.' } }),
  WebhookDelivery: obj({
    message_id: { type: 'string', pattern: '^msg_[0-9a-f]{32}$', description: 'The `webhook-id` sent.' },
    event_id: { type: 'string', format: 'uuid', description: 'The event of the log the message was made from.' },
    event_type: { type: 'string', enum: [...WEBHOOK_MESSAGE_TYPES] },
    attempt: { type: 'integer', minimum: 1, description: 'The attempt\'s number (a replay counts from 1 again).' },
    attempted_at: { type: 'string', format: 'date-time' },
    outcome: { type: 'string', enum: ['succeeded', 'failed'], description: 'A 410 is `failed` (and disabled the endpoint).' },
    http_status: { type: ['integer', 'null'], description: 'The status the endpoint answered; null when none came (timeout, connection refused, a private address refused).' },
    latency_ms: { type: 'integer', minimum: 0, description: 'From the request\'s start to the end of the answer (or the failure).' },
    error: { type: ['string', 'null'], description: 'Why it failed, in short (`HTTP 500`, `timeout after 15000 ms`, `connection refused`...); null when it succeeded.' },
  }),
  WebhookDeliveries: success({
    deliveries: { type: 'array', items: schema('WebhookDelivery'), description: 'Attempts, newest first.' },
    next_cursor: { type: ['string', 'null'], description: 'Send it as `cursor` for the next page; null on the last.' },
  }),
  WebhookDeadLetter: obj({
    message_id: { type: 'string', pattern: '^msg_[0-9a-f]{32}$' },
    event_id: { type: 'string', format: 'uuid' },
    event_type: { type: 'string', enum: [...WEBHOOK_MESSAGE_TYPES] },
    event_time: { type: 'string', format: 'date-time', description: 'When the event happened (what a replay\'s `since` and `until` compare).' },
    attempts: { type: 'integer', minimum: 0, description: 'Attempts made before giving up (0: the endpoint was deleted meanwhile).' },
    last_http_status: { type: ['integer', 'null'] },
    last_error: { type: ['string', 'null'] },
    dead_at: { type: 'string', format: 'date-time' },
  }),
  WebhookDeadLetters: success({
    dead_letters: { type: 'array', items: schema('WebhookDeadLetter'), description: 'Newest first.' },
    next_cursor: { type: ['string', 'null'], description: 'Send it as `cursor` for the next page; null on the last.' },
  }),
  ReplayWebhookRequest: {
    ...obj({
      since: { type: 'string', format: 'date-time', description: 'Replay the messages of events from this time (included)...' },
      until: { type: 'string', format: 'date-time', description: '...to this one (excluded); default: now.' },
      message_ids: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'string', pattern: '^msg_[0-9a-f]{32}$' }, description: 'Or: these messages (their `webhook-id`s).' },
    }, []),
    description: '`since` (and `until`), or `message_ids`.',
  },
  WebhookReplayQueued: success({ message: str, replay_id: { type: 'string', format: 'uuid', description: 'The replay\'s id: the id of the event that records it.' } }),
  ...WEBHOOK_MESSAGE_SCHEMAS,
  Index: success({
    message: str, api: { type: 'string', description: 'The prefix of the API\'s paths.' },
    docs: { type: 'string', description: 'The API reference (HTML).' }, openapi: { type: 'string', description: 'This document.' },
    health: { type: 'array', items: str, description: 'Health probes (liveness, readiness).' },
  }),
  OpenApiDocument: {
    type: 'object', required: ['openapi', 'info', 'paths'],
    properties: {
      openapi: { type: 'string', pattern: '^3\\.1\\.\\d+$' }, info: { type: 'object' }, servers: { type: 'array' }, paths: { type: 'object' },
      components: { type: 'object' },
    },
    additionalProperties: true,
    description: 'An OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0).',
  },
  Html: { type: 'string', contentMediaType: 'text/html' },
};

/* ---------- responses ---------- */

const json = (schemaObj: Obj, examples: Obj): Obj => ({ 'application/json': { schema: schemaObj, examples } });
const html = (examples: Obj): Obj => ({ 'text/html': { schema: schema('Html'), examples } });

const errorResponse = (description: string, messages: readonly string[], headers: Obj = {}): Obj => ({
  description, headers: { ...JSON_HEADERS, ...headers }, content: json(schema('Error'), errorExamples(messages)),
});

const RESPONSES: Record<string, Obj> = {
  MethodNotAllowed: errorResponse('The path does not answer this method; `Allow` lists those it does.', [M.invalidMethod], { Allow: header('Allow') }),
  TooManyRequests: errorResponse('Over the rate limit: wait `Retry-After` seconds.', [M.rateLimited], { 'Retry-After': header('RetryAfter') }),
  NotFound: errorResponse('No such route (paths are case-sensitive), or no such file.', [M.notFound]),
  RequestTimeout: {
    description: 'The request (its headers, or a body that stopped arriving) did not arrive in time; the connection is closed.',
    headers: { 'X-Request-Id': header('XRequestId') }, content: json(schema('Error'), errorExamples([M.requestTimeout])),
  },
  HeadersTooLarge: {
    description: 'Request headers over 16 KiB; the connection is closed.',
    headers: { 'X-Request-Id': header('XRequestId') }, content: json(schema('Error'), errorExamples([M.headersTooLarge])),
  },
  BadRequest: {
    description: 'A request HTTP cannot parse (request line, headers, framing, no `Host`); the connection is closed.',
    headers: { 'X-Request-Id': header('XRequestId') }, content: json(schema('Error'), errorExamples([M.badRequest])),
  },
  NotModified: { description: 'Your copy (`If-None-Match` / `If-Modified-Since`) is current: no body.', headers: { ...EDGE_HEADERS, ETag: header('ETag'), 'Last-Modified': header('LastModified'), 'Cache-Control': header('CacheControlContent') } },
};

/* ---------- operations ---------- */

/** json: a JSON body (its parse errors); multipart: a form; bytes: raw bytes (a part). */
type BodyKind = 'json' | 'multipart' | 'bytes';

interface OperationSpec {
  tag: string;
  description?: string;
  parameters?: Obj[];
  requestBody?: Obj;
  /** The request's body: adds the body errors (malformed, too large, timeout). */
  body?: BodyKind;
  /** A write: takes `Idempotency-Key`. */
  write?: boolean;
  /** Reads of a user's data: take `X-Docshare-Consistency`. */
  read?: boolean;
  /** Success (and non-error) answers, by status. */
  answers: Record<number, Obj>;
  /** Error messages by status, in the order they are checked. */
  errors?: Record<number, readonly string[]>;
  /** Error answers that are not the JSON envelope (the view page's 404). */
  rawErrors?: Record<number, Obj>;
}

const jsonAnswer = (description: string, schemaName: string, example: unknown, headers: Obj = JSON_HEADERS): Obj => ({
  description, headers, content: json(schema(schemaName), one(description, example)),
});

const jsonBody = (schemaName: string, examples: Obj, required = true, description?: string): Obj => ({
  required, ...(description === undefined ? {} : { description }), content: json(schema(schemaName), examples),
});

/* ---------- webhooks (issue 23) ---------- */

const WEBHOOK = {
  id: 1, url: 'https://hooks.example.com/docshare', events: ['file.uploaded', 'file.processed', 'comment.received'], description: 'Index new files',
  enabled: true, disabled_reason: null, created_at: '2025-11-23T14:06:27.000Z',
};
/** The body's checks, in the order they run: the fields given, in this order. */
const WEBHOOK_FIELD_ERRORS = [M.webhookUrlRequired, M.webhookEventsRequired, M.webhookEventUnknown, M.webhookDescriptionInvalid, M.webhookDescriptionTooLong];
/** The URL's own checks, after the body's (registration, and a PATCH that changes the URL): syntax, then the addresses its host resolves to. */
const WEBHOOK_URL_ERRORS = [M.webhookUrlInvalid, M.webhookUrlTooLong, M.webhookUrlCredentials, M.webhookUrlScheme, M.webhookUrlPrivate, M.webhookUrlUnresolvable];
const WEBHOOK_CHANGE_HEADERS: Obj = { ...JSON_HEADERS, 'X-Docshare-Consistency': header('XDocshareConsistency') };
const cursorParameter: Obj = {
  name: 'cursor', in: 'query', required: false, description: 'The `next_cursor` of the previous page, copied as it is; empty for the first page.', schema: shownOnly(str, WEBHOOK_CURSOR),
};
const listLimit: Obj = {
  name: 'limit', in: 'query', required: false, description: 'How many at most (1–100; more is 100; anything else is the default).', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 }, example: 50,
};

/** The operations on `/api/V1/users/api-webhooks…`: each user's own endpoints (at most WEBHOOK_MAX_PER_USER, default 10). */
const webhookOperations = (): Record<string, OperationSpec> => ({
  createWebhook: {
    tag: 'Webhooks', body: 'json', write: true,
    description: 'Registers an endpoint for the message types listed (the catalogue: this document\'s `webhooks`): from now on docshare POSTs it a signed message for each such event about your own files. The answer holds the signing `secret`, shown this once. At most WEBHOOK_MAX_PER_USER endpoints per user (default 10). The URL must be `https` (unless WEBHOOK_ALLOW_HTTP) and its host must resolve only to public addresses (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS, which a laptop\'s `npm start` and the tests set): loopback, private, link-local and other special addresses are refused now, and again at every connection.',
    requestBody: jsonBody('CreateWebhookRequest', one('An endpoint for new files and comments', { url: WEBHOOK.url, events: WEBHOOK.events, description: WEBHOOK.description })),
    answers: { 201: jsonAnswer(M.webhookRegistered, 'WebhookRegistered', { status: 'success', message: M.webhookRegistered, webhook: WEBHOOK, secret: WEBHOOK_SECRET }, WRITE_HEADERS) },
    errors: {
      400: [...WEBHOOK_FIELD_ERRORS, ...WEBHOOK_URL_ERRORS],
      409: [M.webhookLimitReached],
    },
  },
  listWebhooks: {
    tag: 'Webhooks',
    description: 'Your endpoints, oldest first (deleted ones are not listed). Secrets are never shown again.',
    answers: { 200: jsonAnswer('Your webhooks, oldest first', 'WebhookList', { status: 'success', webhooks: [WEBHOOK] }) },
  },
  getWebhook: {
    tag: 'Webhooks',
    description: 'One of your endpoints. Another user\'s, a deleted one or a malformed id is not found.',
    parameters: [param('webhookIdPath')],
    answers: { 200: jsonAnswer('The webhook', 'WebhookOne', { status: 'success', webhook: WEBHOOK }) },
    errors: { 404: [M.webhookNotFound] },
  },
  updateWebhook: {
    tag: 'Webhooks', body: 'json',
    description: 'Changes any of `url`, `events`, `description`, `enabled` (checked as on registration). Enabling an endpoint docshare disabled (410, or failing for days) clears `disabled_reason`; messages kept meanwhile can be replayed.',
    parameters: [param('webhookIdPath')],
    requestBody: jsonBody('UpdateWebhookRequest', {
      events: { summary: 'Subscribe to more events', value: { events: ['file.uploaded', 'file.processed', 'file.updated', 'file.deleted', 'comment.received', 'sale.completed'], description: 'Everything about my files' } },
      enable: { summary: 'Enable it again', value: { enabled: true } },
    }),
    answers: {
      200: jsonAnswer(M.webhookUpdated, 'WebhookChanged', {
        status: 'success', message: M.webhookUpdated,
        webhook: { ...WEBHOOK, events: ['file.uploaded', 'file.processed', 'file.updated', 'file.deleted', 'comment.received', 'sale.completed'], description: 'Everything about my files' },
      }, WEBHOOK_CHANGE_HEADERS),
    },
    errors: {
      400: [...WEBHOOK_FIELD_ERRORS, M.webhookEnabledInvalid, M.webhookNothingToUpdate, ...WEBHOOK_URL_ERRORS],
      404: [M.webhookNotFound],
    },
  },
  deleteWebhook: {
    tag: 'Webhooks',
    description: 'Deletes the endpoint: nothing more is sent to it, messages being retried included. Its id is not used again.',
    parameters: [param('webhookIdPath')],
    answers: { 200: jsonAnswer(M.webhookDeleted, 'Message', { status: 'success', message: M.webhookDeleted }, WEBHOOK_CHANGE_HEADERS) },
    errors: { 404: [M.webhookNotFound] },
  },
  rotateWebhookSecret: {
    tag: 'Webhooks', write: true, body: 'json',
    description: 'A new signing secret, shown this once. For 24 hours every message carries two signatures, by the new secret and by the old one, so your receiver can switch at its own pace; then the old one stops. No request body.',
    parameters: [param('webhookIdPath')],
    answers: {
      200: jsonAnswer(M.webhookSecretRotated, 'WebhookSecretRotated', {
        status: 'success', message: M.webhookSecretRotated, secret: WEBHOOK_SECRET_ROTATED, previous_secret_expires_at: '2025-11-24T14:06:27.000Z',
      }, WRITE_HEADERS),
    },
    errors: { 404: [M.webhookNotFound] },
  },
  testWebhook: {
    tag: 'Webhooks', write: true, body: 'json',
    description: 'Queues one `webhook.test` message to this endpoint (even a disabled one), delivered, retried and listed like any. No request body.',
    parameters: [param('webhookIdPath')],
    answers: { 202: jsonAnswer(M.webhookTestQueued, 'WebhookTestQueued', { status: 'success', message: M.webhookTestQueued, message_id: MESSAGE_ID }, WRITE_HEADERS) },
    errors: { 404: [M.webhookNotFound] },
  },
  listWebhookDeliveries: {
    tag: 'Webhooks',
    description: 'Every delivery attempt to the endpoint, newest first: the message and its event, when, the outcome, the HTTP status, the latency and the error. Attempts are kept WEBHOOK_RETENTION_DAYS (default 30) days. Pages by `cursor`.',
    parameters: [
      param('webhookIdPath'),
      { name: 'status', in: 'query', required: false, description: 'Only the attempts that failed, or only those that succeeded (default: all).', schema: { type: 'string', enum: ['failed', 'succeeded'] }, example: 'failed' },
      cursorParameter, listLimit,
    ],
    answers: {
      200: jsonAnswer('Attempts, newest first', 'WebhookDeliveries', {
        status: 'success',
        deliveries: [
          { message_id: MESSAGE_ID, event_id: EVENT_ID, event_type: 'file.uploaded', attempt: 2, attempted_at: '2025-11-23T14:06:33.000Z', outcome: 'succeeded', http_status: 204, latency_ms: 87, error: null },
          { message_id: MESSAGE_ID, event_id: EVENT_ID, event_type: 'file.uploaded', attempt: 1, attempted_at: '2025-11-23T14:06:27.000Z', outcome: 'failed', http_status: 500, latency_ms: 112, error: 'HTTP 500' },
        ],
        next_cursor: null,
      }),
    },
    errors: { 400: [M.deliveriesStatusInvalid, M.invalidCursor], 404: [M.webhookNotFound] },
  },
  listWebhookDeadLetters: {
    tag: 'Webhooks',
    description: 'The messages whose retries were exhausted, newest first: never dropped, kept WEBHOOK_RETENTION_DAYS (default 30) days, and sent again by `replay`. Pages by `cursor`.',
    parameters: [param('webhookIdPath'), cursorParameter, listLimit],
    answers: {
      200: jsonAnswer('Dead letters, newest first', 'WebhookDeadLetters', {
        status: 'success',
        dead_letters: [{
          message_id: MESSAGE_ID, event_id: EVENT_ID, event_type: 'file.uploaded', event_time: '2025-11-23T14:06:27.000Z', attempts: 10,
          last_http_status: 503, last_error: 'HTTP 503', dead_at: '2025-11-27T05:31:40.000Z',
        }],
        next_cursor: null,
      }),
    },
    errors: { 400: [M.invalidCursor], 404: [M.webhookNotFound] },
  },
  replayWebhook: {
    tag: 'Webhooks', body: 'json', write: true,
    description: 'Delivers again, from the event log, the endpoint\'s messages of events in [`since`, `until`) (ISO 8601 times; `until` defaults to now), or the messages listed by id (at most 100): dead letters, delivered ones and those skipped while it was disabled alike, each with its original `webhook-id`, in log order. Only messages of the types the endpoint subscribes to, within the retention. A disabled endpoint must be enabled first.',
    parameters: [param('webhookIdPath')],
    requestBody: jsonBody('ReplayWebhookRequest', {
      range: { summary: 'A time range', value: { since: '2025-11-23T00:00:00Z', until: '2025-11-24T00:00:00Z' } },
      messages: { summary: 'Messages by id', value: { message_ids: [MESSAGE_ID] } },
    }),
    answers: { 202: jsonAnswer(M.webhookReplayQueued, 'WebhookReplayQueued', { status: 'success', message: M.webhookReplayQueued, replay_id: EVENT_ID }, WRITE_HEADERS) },
    errors: {
      400: [M.replayRangeRequired, M.replayTimeInvalid, M.replayRangeOrder, M.replayMessageIdsInvalid],
      404: [M.webhookNotFound],
      409: [M.webhookDisabled],
    },
  },
});

/* ---------- leaving: erasure and export (issue 24) ---------- */

/** The query of a signed account link (an erasure's status, an export's ZIP): copied from the link, never made up. */
const accountLinkParameters = (what: string): Obj[] => [
  { name: 'user', in: 'query', required: true, description: `The user the link was signed for: copy it from the ${what}.`, schema: shownOnly({ type: 'string', pattern: '^[1-9][0-9]*$' }, '42') },
  { name: 'expires', in: 'query', required: true, description: `Unix time the link expires: copy it from the ${what}.`, schema: shownOnly(int, EXPIRES) },
  { name: 'signature', in: 'query', required: true, description: `HMAC-SHA256 of the path, the user and the expiry (hex): copy it from the ${what}.`, schema: shownOnly(str, SIGNATURE) },
];

/** The operations on `/api/V1/users/api-erase…` and `/api/V1/users/api-export…`: leaving with one's data, and without a trace. */
const accountOperations = (base: string): Record<string, OperationSpec> => ({
  eraseAccount: {
    tag: 'Leaving', body: 'json',
    description: `Erases your account, for good. It stops working at once: its tokens answer 401 \`${M.invalidToken}\`, login \`${M.badCredentials}\`. Then, in the background, every file of yours is deleted (bytes, lists, search), your webhooks, stored answers and sessions are removed, and the key your personal data is encrypted under is destroyed, so your name, e-mail, titles, descriptions, comments and documents' text can no longer be read anywhere (backups and the event log included). Comments you wrote stay counted for the files' owners and read \`[deleted]\`; your purchases stay counted as sales. \`status_url\` says when it is done (no token needed). Asked again while pending or done: the same \`erasure_id\`.`,
    requestBody: jsonBody('EraseAccountRequest', one('Your password', { password: 'correct horse battery' })),
    answers: {
      202: jsonAnswer(M.erasureAccepted, 'ErasureAccepted', {
        status: 'success', message: M.erasureAccepted, erasure_id: ERASURE_ID,
        status_url: `${base}/api/V1/users/api-erase/status/${ERASURE_ID}?user=42&expires=${EXPIRES}&signature=${SIGNATURE}`,
      }),
    },
    errors: { 400: [M.passwordRequired], 403: [M.passwordIncorrect] },
  },
  erasureStatus: {
    tag: 'Leaving',
    description: 'The state behind an erasure\'s `status_url`: needs no token, the signature is the credential (valid 7 days). `pending` while files are being deleted; `done` once the key is destroyed, with what was done. **Not counted by the rate limit** while the link is genuine (no RateLimit headers); a forged one is, and 403.',
    parameters: [param('erasureIdPath'), ...accountLinkParameters('`status_url`')],
    answers: {
      200: jsonAnswer('The erasure\'s state', 'ErasureStatus', { status: 'success', erasure_id: ERASURE_ID, state: 'done', files_deleted: 12, comments_redacted: 3 }),
    },
    errors: { 403: [M.badErasureLink], 404: [M.erasureNotFound] },
  },
  exportAccount: {
    tag: 'Leaving',
    description: 'Starts an export of your account: a ZIP with `account.json`, `files.json`, `comments_written.json`, `purchases.json`, `stats.json` (and `daily.json` where there are daily statistics), every file\'s bytes under `originals/`, and `manifest.json` with each original\'s SHA-256. It is built in the background and kept 7 days; `api-export?export_id=` says when it is ready. No request body.',
    answers: { 202: jsonAnswer(M.exportAccepted, 'ExportAccepted', { status: 'success', message: M.exportAccepted, export_id: EXPORT_ID }) },
  },
  exportStatus: {
    tag: 'Leaving',
    description: 'An export of yours: `pending` while it is built; `ready` with a signed `download_url` (no token needed), the ZIP\'s SHA-256 and size, and when it is removed. Another user\'s, an expired or an unknown export is not found.',
    parameters: [{ name: 'export_id', in: 'query', required: true, description: 'The `export_id` answered when the export started.', schema: shownOnly({ type: 'string', format: 'uuid' }, EXPORT_ID) }],
    answers: {
      200: {
        description: 'The export\'s state', headers: JSON_HEADERS,
        content: json(schema('ExportStatus'), {
          ready: {
            summary: 'Ready', value: {
              status: 'success',
              export: {
                state: 'ready', download_url: `${base}/api/V1/users/api-export/${EXPORT_ID}/content?user=42&expires=${EXPIRES}&signature=${SIGNATURE}`,
                sha256: EXPORT_SHA256, bytes: 1_048_576, expires_at: '2025-11-30T14:06:27.000Z',
              },
            },
          },
          pending: { summary: 'Being built', value: { status: 'success', export: { state: 'pending' } } },
        }),
      },
    },
    errors: { 400: [M.exportIdRequired], 404: [M.exportNotFound] },
  },
  exportContent: {
    tag: 'Leaving',
    description: 'The ZIP behind an export\'s `download_url`: needs no token, the signature is the credential (valid until the export expires), `Content-Disposition: attachment; filename="docshare-export-<exportId>.zip"`. **Not counted by the rate limit** while the link is genuine (no RateLimit headers); a forged one is, and 403.',
    parameters: [param('exportIdPath'), ...accountLinkParameters('`download_url`')],
    answers: {
      200: {
        description: 'The ZIP',
        headers: { ...EDGE_HEADERS, 'Content-Disposition': header('ExportContentDisposition'), 'Cache-Control': header('CacheControlNoStore') },
        content: { 'application/zip': { schema: { type: 'string', contentMediaType: 'application/zip' }, examples: one('A ZIP', 'PK\u0003\u0004…') } },
      },
    },
    errors: { 403: [M.badExportLink], 404: [M.exportNotFound] },
  },
});

const operations = (base: string): Record<string, OperationSpec> => {
  const fileUrl = `${base}/docs/1`;
  return {
    register: {
      tag: 'Account', body: 'json', write: true,
      description: 'No token needed. The answer carries a JWT for the new user.',
      // Not Ada of the README's "Try it" (she exists once it ran): a second user, who can buy Ada's file.
      requestBody: jsonBody('RegisterRequest', one('A new user', { name: 'Grace Hopper', email: 'grace@example.com', password: 'correct horse battery' })),
      answers: { 201: jsonAnswer(M.registered, 'Token', { status: 'success', message: M.registered, user_id: 2, token: TOKEN }, WRITE_HEADERS) },
      errors: {
        400: [M.nameRequired, M.nameTooLong, M.nameInvalidCharacters, M.emailRequired, M.invalidEmail, M.passwordRequired, M.passwordTooShort, M.passwordTooLong],
        409: [M.emailTaken],
      },
    },
    login: {
      tag: 'Account', body: 'json',
      requestBody: jsonBody('LoginRequest', one('Credentials', { email: 'ada@example.com', password: 'correct horse battery' })),
      answers: { 200: jsonAnswer(M.loggedIn, 'Token', { status: 'success', message: M.loggedIn, user_id: 1, token: TOKEN }) },
      errors: { 400: [M.emailRequired, M.passwordRequired], 401: [M.badCredentials] },
    },
    upload: {
      tag: 'Files', body: 'multipart', write: true,
      description: 'The file streams to storage; a category is chosen by `category_id` or made from `new_category_name`. New files are enabled and not for sale.',
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: schema('UploadForm'),
            encoding: { file: { contentType: 'application/octet-stream, */*' } },
            examples: {
              newCategory: {
                summary: 'A text file in a new category',
                value: {
                  file: '# docshare\n\nEvent-sourced CQRS document-sharing backend…', title: 'Read me', description: 'The front door',
                  tags: 'docs,intro', new_category_name: 'Documentation', category_description: 'How to use docshare', category_tags: 'docs',
                  cc_license: 'CC BY', video: '',
                },
              },
              existingCategory: {
                summary: 'A PDF in an existing category, with a video',
                value: {
                  file: '%PDF-1.7 …', title: 'Quick start', description: 'The first steps, printable', tags: 'docs,pdf',
                  category_id: '1', cc_license: 'CC BY-NC-ND', video: 'https://video.example.com/watch/quick-start',
                },
              },
            },
          },
        },
      },
      answers: { 201: jsonAnswer(M.uploaded, 'Uploaded', { status: 'success', message: M.uploaded, file_id: '1', category_id: '1', category_name: 'Documentation' }, WRITE_HEADERS) },
      errors: {
        400: [M.malformedMultipart, M.fileRequired, M.titleRequired, M.titleTooLong, M.titleInvalidCharacters, M.descriptionRequired,
          M.descriptionTooLong, M.descriptionInvalidCharacters, M.tagsRequired, M.tagsTooLong, M.tagsInvalidCharacters, M.invalidLicense,
          M.categoryRequired, M.categoryNameTooLong, M.categoryNameInvalidCharacters, M.categoryDescriptionInvalidCharacters,
          M.categoryTagsInvalidCharacters, M.invalidVideo],
        404: [M.categoryNotFound],
        413: [M.fileTooLarge, M.storageQuotaExceeded],
        // Beside the rate limit's: the user's uploads in flight (HTTP_MAX_UPLOADS_PER_USER).
        429: [M.tooManyUploads],
      },
    },
    createUpload: {
      tag: 'Resumable uploads', body: 'json', write: true,
      description: 'Starts a resumable upload of `size` bytes (up to MAX_RESUMABLE_BYTES, default 5 GiB) with the metadata of a form upload, checked the same way: answers the layout and a URL per part. PUT each part\'s bytes to its URL (in parallel, in any order), then `complete`. `part_size` is at least 5 MiB (UPLOAD_PART_BYTES, default 8 MiB, larger for files over 10,000 parts); every part is `part_size` bytes but the last. The open upload counts against your storage quota until it completes, is aborted or expires.',
      requestBody: jsonBody('CreateUploadRequest', {
        newCategory: {
          summary: 'A 12 MiB PDF in a new category',
          value: {
            file_name: 'engine-notes.pdf', size: 12582912, content_type: 'application/pdf', title: 'Read me', description: 'The front door',
            tags: 'docs,intro', new_category_name: 'Documentation', category_description: 'How to use docshare', category_tags: 'docs', cc_license: 'CC BY',
          },
        },
        existingCategory: {
          summary: 'A 5 MiB file in an existing category',
          value: { file_name: 'quick-start.pdf', size: '5242880', title: 'Quick start', description: 'The first steps, printable', tags: 'docs,pdf', category_id: '1', cc_license: 'CC BY-NC-ND', video: '' },
        },
      }),
      answers: {
        201: jsonAnswer(M.uploadStarted, 'UploadStarted', {
          status: 'success', message: M.uploadStarted, upload_id: UPLOAD_ID, part_size: 8 * MIB, part_count: 2, expires_at: '2025-11-24T14:06:27.000Z',
          parts: [1, 2].map((n) => ({ part_number: n, url: `${base}/api/V1/docs/api-uploads/${UPLOAD_ID}/parts/${n}?expires=${EXPIRES}&signature=${SIGNATURE}` })),
        }, WRITE_HEADERS),
      },
      errors: {
        400: [M.fileNameRequired, M.invalidUploadSize, M.invalidContentType, M.titleRequired, M.titleTooLong, M.titleInvalidCharacters, M.descriptionRequired,
          M.descriptionTooLong, M.descriptionInvalidCharacters, M.tagsRequired, M.tagsTooLong, M.tagsInvalidCharacters, M.invalidLicense,
          M.categoryRequired, M.categoryNameTooLong, M.categoryNameInvalidCharacters, M.categoryDescriptionInvalidCharacters,
          M.categoryTagsInvalidCharacters, M.invalidVideo],
        404: [M.categoryNotFound],
        413: [M.resumableTooLarge, M.storageQuotaExceeded],
      },
    },
    getUpload: {
      tag: 'Resumable uploads',
      description: 'Your upload\'s state: the parts received (with their ETags) and, while pending, fresh URLs for the parts still missing: one call to resume after a crash. Another user\'s upload is not found.',
      parameters: [param('uploadIdPath')],
      answers: {
        200: jsonAnswer('The upload', 'UploadState', {
          status: 'success',
          upload: {
            upload_id: UPLOAD_ID, state: 'pending', file_name: 'engine-notes.pdf', size: 12582912, part_size: 8 * MIB, part_count: 2,
            expires_at: '2025-11-24T14:06:27.000Z', received: [{ part_number: 1, size: 8 * MIB, etag: PART_ETAG }],
            parts: [{ part_number: 2, url: `${base}/api/V1/docs/api-uploads/${UPLOAD_ID}/parts/2?expires=${EXPIRES}&signature=${SIGNATURE}` }],
          },
        }),
      },
      errors: { 404: [M.uploadNotFound] },
    },
    completeUpload: {
      tag: 'Resumable uploads', body: 'json', write: true,
      description: 'Assembles the parts and records the file, as a form upload would (its type sniffed from its bytes, its SHA-256 recorded): answers what api-upload answers. Again: the same answer. A received part whose size is not the layout\'s (the declared `size` was not true) aborts the upload: 413, its parts removed, nothing recorded.',
      parameters: [param('uploadIdPath')],
      requestBody: jsonBody('CompleteUploadRequest', {
        listed: { summary: 'The parts and their ETags', value: { parts: [{ part_number: 1, etag: PART_ETAG }, { part_number: 2, etag: '"7d793037a0760186574b0282f2f435e7"' }] } },
        received: { summary: 'Every part received', value: {} },
      }, false, 'Optional: without `parts`, every part received.'),
      answers: { 201: jsonAnswer(M.uploaded, 'Uploaded', { status: 'success', message: M.uploaded, file_id: '1', category_id: '1', category_name: 'Documentation' }, WRITE_HEADERS) },
      errors: {
        400: [M.invalidParts], 404: [M.uploadNotFound],
        409: [M.partsMissing, M.uploadWasAborted, M.uploadExpired],
        413: [M.sizeMismatch, M.storageQuotaExceeded],
      },
    },
    abortUpload: {
      tag: 'Resumable uploads',
      description: 'Ends the upload: its parts are removed and its share of your quota released. An upload already aborted or expired answers the same.',
      parameters: [param('uploadIdPath')],
      answers: { 200: jsonAnswer(M.uploadAborted, 'Message', { status: 'success', message: M.uploadAborted }, { ...JSON_HEADERS, 'X-Docshare-Consistency': header('XDocshareConsistency') }) },
      errors: { 404: [M.uploadNotFound], 409: [M.uploadCompleted] },
    },
    uploadPart: {
      tag: 'Resumable uploads', body: 'bytes',
      description: 'docshare\'s part URL (when the blob store is not reachable by clients): needs no token, the signature is the credential. Send exactly the part\'s bytes with `Content-Length`; a part sent again replaces the earlier one. **Not counted by the rate limit** (no RateLimit headers): the bytes per second of each user\'s parts are bounded instead (UPLOAD_PART_BYTES_PER_SECOND). A presigned URL of the blob store answers its own 200 with an empty body and the `ETag` header, which is all a client needs from either.',
      parameters: [
        param('uploadIdPath'), param('partNumberPath'),
        { name: 'expires', in: 'query', required: true, description: 'Unix time the URL expires: part of the URL, never made up.', schema: shownOnly(int, EXPIRES) },
        { name: 'signature', in: 'query', required: true, description: 'HMAC-SHA256 of the upload, the part and the expiry (hex): part of the URL, never made up.', schema: shownOnly(str, SIGNATURE) },
      ],
      requestBody: {
        required: true, description: 'The part\'s bytes: `part_size` bytes, the last part the remainder.',
        content: { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' }, examples: one('A part', '%PDF-1.7 …') } },
      },
      answers: {
        200: jsonAnswer(M.partReceived, 'PartReceived', { status: 'success', message: M.partReceived, part_number: 1, etag: PART_ETAG }, { ...JSON_HEADERS, ETag: header('PartETag') }),
      },
      errors: { 400: [M.partSizeMismatch], 403: [M.badUploadLink], 404: [M.uploadNotFound], 413: [M.sizeMismatch], 409: [M.uploadWasAborted, M.uploadExpired, M.uploadCompleted] },
    },
    download: {
      tag: 'Files',
      description: 'Counts a download for the owner (with your user id as its downloader key: unique downloaders in api-daily) and answers a signed link to the bytes. Files for sale or disabled cannot be downloaded. HEAD is not served (405): it would count.',
      parameters: [{ name: 'file_id', in: 'query', required: true, description: 'The file\'s id.', schema: str, example: '1' }],
      answers: {
        200: jsonAnswer(M.downloadReady, 'DownloadReady', {
          status: 'success', message: M.downloadReady, original_file_name: 'README.md',
          download_url: `${base}/files/1/content?expires=${EXPIRES}&signature=${SIGNATURE}`,
        }, { ...JSON_HEADERS, 'X-Docshare-Consistency': header('XDocshareConsistency') }),
      },
      errors: { 400: [M.fileIdRequired], 403: [M.notDownloadable], 404: [M.fileNotFound] },
    },
    deleteFile: {
      tag: 'Files', body: 'json', write: true,
      description: 'Only the owner may delete. The file leaves search, lists and downloads; its bytes are removed.',
      requestBody: jsonBody('DeleteRequest', one('A file id', { id: '1' })),
      answers: { 200: jsonAnswer(M.deleted, 'Message', { status: 'success', message: M.deleted }, WRITE_HEADERS) },
      errors: { 400: [M.fileIdRequired], 403: [M.notOwner], 404: [M.fileNotFound] },
    },
    postComment: {
      tag: 'Comments', body: 'json', write: true,
      requestBody: jsonBody('CommentRequest', one('A comment', { file_id: '1', comment: 'Very clear notes, thank you.' })),
      answers: { 201: jsonAnswer(M.commentPosted, 'CommentPosted', { status: 'success', message: M.commentPosted, comment_id: 7 }, WRITE_HEADERS) },
      errors: { 400: [M.fileIdRequired, M.commentRequired, M.commentTooLong, M.commentInvalidCharacters], 404: [M.fileNotFound] },
    },
    updateFile: {
      tag: 'Files', body: 'json', write: true,
      description: 'Owner only: any of for_sale, price, enabled, title, description, tags.',
      requestBody: jsonBody('UpdateRequest', {
        sell: { summary: 'Put a file for sale', value: { id: '1', for_sale: true, price: 4.5 } },
        retitle: { summary: 'Change the title and tags', value: { id: '1', title: 'Read me first', tags: 'docs,intro,start' } },
      }),
      answers: { 200: jsonAnswer(M.updated, 'Message', { status: 'success', message: M.updated }, WRITE_HEADERS) },
      errors: {
        400: [M.fileIdRequired, M.nothingToUpdate, M.forSaleNotBoolean, M.enabledNotBoolean, M.invalidPrice, M.titleRequired, M.titleTooLong,
          M.titleInvalidCharacters, M.descriptionRequired, M.descriptionTooLong, M.descriptionInvalidCharacters, M.tagsRequired, M.tagsTooLong,
          M.tagsInvalidCharacters],
        403: [M.notOwner],
        404: [M.fileNotFound],
      },
    },
    purchase: {
      tag: 'Files', body: 'json', write: true,
      description: 'Records a sale of a file that is for sale (no payment is processed), and answers a signed link to its bytes. A buyer buys a file once: a repeat answers the first sale (200), whatever the file\'s price or sale now. Owners cannot buy their own files.',
      requestBody: jsonBody('FileIdRequest', one('A file id', { file_id: '1' })),
      answers: {
        201: jsonAnswer(M.purchased, 'Purchased', {
          status: 'success', message: M.purchased, sale_id: 5, download_url: `${base}/files/1/content?sale=5&expires=${EXPIRES}&signature=${SIGNATURE}`,
        }, WRITE_HEADERS),
        200: jsonAnswer(M.alreadyPurchased, 'Purchased', {
          status: 'success', message: M.alreadyPurchased, sale_id: 5, download_url: `${base}/files/1/content?sale=5&expires=${EXPIRES}&signature=${SIGNATURE}`,
        }, WRITE_HEADERS),
      },
      errors: { 400: [M.fileIdRequired], 403: [M.ownFilePurchase], 404: [M.fileNotFound], 409: [M.notForSale] },
    },
    listPurchases: {
      tag: 'Files', read: true,
      description: 'The files you bought, newest purchase first, each with a fresh signed `download_url` (valid while the file is for sale; `api-download` still refuses files for sale). A file disabled by its owner leaves the list until enabled again; a deleted file is gone.',
      parameters: [param('page'), perPage(LIMITS.perPageDefault)],
      answers: {
        200: jsonAnswer('Purchases, newest first', 'Purchases', {
          status: 'success',
          data: [{
            id: 1, title: 'Read me', sale_id: 5, purchased_at: '2025-11-23T14:06:27.000Z',
            download_url: `${base}/files/1/content?sale=5&expires=${EXPIRES}&signature=${SIGNATURE}`,
          }],
          total: 1, page: 1, per_page: 20,
        }),
      },
      errors: { 400: [M.invalidPage, M.invalidPerPage] },
    },
    listCategories: {
      tag: 'Files', read: true,
      description: 'The categories in use (a file anyone may see, enabled and not deleted, is in them), by id. An empty category still exists: its id is accepted on upload.',
      parameters: [param('page'), perPage(LIMITS.perPageMax)],
      answers: {
        200: jsonAnswer('Categories, by id', 'Categories', {
          status: 'success',
          data: [{ id: 1, name: 'Documentation', description: '', tags: '' }, { id: 2, name: 'Manuals', description: 'Printed manuals', tags: 'manual' }],
          total: 2, page: 1, per_page: 100,
        }),
      },
      errors: { 400: [M.invalidPage, M.invalidPerPage] },
    },
    search: {
      tag: 'Search and statistics', body: 'json', read: true,
      description: 'Full text, ranked by relevance; only enabled files. With `facets`, counts over every match; `next_cursor` walks past the first pages.',
      requestBody: jsonBody('SearchRequest', {
        simple: { summary: 'A term, with a typo', value: { search: 'fornt door' } },
        filtered: { summary: 'Filters, facets and paging', value: { search: 'front door', page: 1, per_page: 10, facets: true, filters: { license: 'CC BY', tags: ['docs'] } } },
      }),
      answers: {
        200: jsonAnswer('Matches, best first', 'SearchResults', {
          status: 'success',
          results: [{
            id: '1', title: 'Read me', link: fileUrl, description: 'The front door',
            category: 'Documentation', tag: 'docs,intro', snippet: 'The <mark>front</mark> <mark>door</mark>',
          }],
          total: 1, page: 1, per_page: 10,
          facets: {
            category: [{ id: '1', name: 'Documentation', count: 1 }], license: [{ value: 'CC BY', count: 1 }],
            tag: [{ value: 'docs', count: 1 }, { value: 'intro', count: 1 }],
          },
        }),
      },
      errors: {
        400: [M.searchTermRequired, M.searchTermTooLong, M.invalidPage, M.invalidPerPage, M.invalidCursor, M.invalidFilters, M.facetsNotBoolean],
        404: [M.noResults],
      },
    },
    stats: {
      tag: 'Search and statistics', read: true,
      description: 'The authenticated user\'s: files not deleted; views, downloads and sales of them; comments received. No request body.',
      answers: {
        200: jsonAnswer('Statistics', 'Stats', {
          status: 'success', data: { total_comments: 3, total_files: 2, total_views: 17, total_downloads: 5, total_sales: 1 },
        }),
      },
    },
    dailyStats: {
      tag: 'Search and statistics', read: true,
      description: `Your statistics per UTC day from \`from\` to \`to\` (both included, at most 366 days): every day of the range, zeros included, and the range's totals. Without \`file_id\`, all your files (a viewer of two of them is one unique viewer of the day); with it, that file only (another user's, unknown or deleted: 404). ${UNIQUE_ACCURACY} ${SUMMED_UNIQUES} Views and downloads are counted with a viewer key: the user with a valid token, else an anonymous key of the client address and User-Agent that changes every UTC day. Unknown query parameters are ignored; a repeated one is invalid.`,
      parameters: [
        { name: 'from', in: 'query', required: true, description: 'The first UTC day, `YYYY-MM-DD`.', schema: date, example: '2025-11-21' },
        { name: 'to', in: 'query', required: true, description: 'The last UTC day, `YYYY-MM-DD`, not before `from`, at most 365 days after it.', schema: date, example: '2025-11-23' },
        { name: 'file_id', in: 'query', required: false, description: 'One of your files (default: all of them).', schema: { type: 'string', pattern: '^[1-9][0-9]*$' }, example: '1' },
      ],
      answers: {
        200: jsonAnswer('Statistics per day', 'DailyStats', {
          status: 'success', timezone: 'UTC', from: '2025-11-21', to: '2025-11-23',
          days: [
            { date: '2025-11-21', views: 0, unique_viewers: 0, downloads: 0, unique_downloaders: 0, sales: 0, comments: 0 },
            { date: '2025-11-22', views: 12, unique_viewers: 7, downloads: 3, unique_downloaders: 2, sales: 1, comments: 1 },
            { date: '2025-11-23', views: 5, unique_viewers: 4, downloads: 2, unique_downloaders: 2, sales: 0, comments: 2 },
          ],
          totals: { views: 17, unique_viewers: 11, downloads: 5, unique_downloaders: 4, sales: 1, comments: 3 },
        }),
      },
      errors: { 400: [M.invalidFrom, M.invalidTo, M.fromAfterTo, M.rangeTooLong, M.invalidFileId], 404: [M.fileNotFound] },
    },
    topFiles: {
      tag: 'Search and statistics', read: true,
      description: `Your files (not deleted) ranked by \`metric\` summed over the last \`days\` UTC days, today included: highest first, then by id; a file with 0 is left out. ${SUMMED_UNIQUES} Unknown query parameters are ignored; a repeated one is invalid.`,
      parameters: [
        { name: 'metric', in: 'query', required: false, description: 'What to rank by.', schema: { type: 'string', enum: ['views', 'unique_viewers', 'downloads', 'sales', 'comments'], default: 'views' }, example: 'views' },
        { name: 'days', in: 'query', required: false, description: 'How many UTC days, ending today (1–90).', schema: { type: 'integer', minimum: 1, maximum: 90, default: 7 }, example: 7 },
        { name: 'limit', in: 'query', required: false, description: 'How many files at most (1–50).', schema: { type: 'integer', minimum: 1, maximum: 50, default: 10 }, example: 10 },
      ],
      answers: {
        200: jsonAnswer('Your files, best first', 'TopFiles', {
          status: 'success',
          results: [{ id: '1', title: 'Read me', link: fileUrl, value: 17 }, { id: '2', title: 'Quick start', link: `${base}/docs/2`, value: 4 }],
        }),
      },
      errors: { 400: [M.invalidMetric, M.invalidDays, M.invalidLimit] },
    },
    trendingFiles: {
      tag: 'Search and statistics', read: true,
      description: `Every user's files that anyone may see (enabled, not deleted) viewed in the last \`hours\` UTC hours, the current one included, ranked by distinct viewers over the whole window, then by views, then by id. ${TRENDING_ACCURACY} Unknown query parameters are ignored; a repeated one is invalid.`,
      parameters: [
        { name: 'hours', in: 'query', required: false, description: 'How many UTC hours, ending with the current one (1–168).', schema: { type: 'integer', minimum: 1, maximum: 168, default: 24 }, example: 24 },
        { name: 'category_id', in: 'query', required: false, description: 'Only files of this category (default: every category).', schema: { type: 'string', pattern: '^[1-9][0-9]*$' }, example: '1' },
        { name: 'limit', in: 'query', required: false, description: 'How many files at most (1–50).', schema: { type: 'integer', minimum: 1, maximum: 50, default: 10 }, example: 10 },
      ],
      answers: {
        200: jsonAnswer('Trending files, most unique viewers first', 'TrendingFiles', {
          status: 'success',
          results: [
            { id: '1', title: 'Read me', link: fileUrl, category: 'Documentation', unique_viewers: 50, views: 50 },
            { id: '2', title: 'Quick start', link: `${base}/docs/2`, category: 'Documentation', unique_viewers: 1, views: 500 },
          ],
        }),
      },
      errors: { 400: [M.invalidHours, M.invalidCategoryId, M.invalidLimit] },
    },
    listFiles: {
      tag: 'Files', read: true,
      description: 'Newest first. Others see only enabled files; the owner sees all of theirs.',
      parameters: [
        { name: 'user_id', in: 'query', required: false, description: 'Whose files; default: yours.', schema: str, example: '1' },
        param('page'), perPage(LIMITS.perPageDefault),
      ],
      answers: {
        200: jsonAnswer('Files, newest first', 'UserFiles', {
          status: 'success', user: { id: 1, name: 'Ada' },
          files: [{ file_id: 1, upload_date: '2025-11-23', title: 'Read me', description: 'The front door', file_url: fileUrl }],
          total: 1, page: 1, per_page: 20,
        }),
      },
      errors: { 400: [M.invalidPage, M.invalidPerPage], 404: [M.userNotFound] },
    },
    listComments: {
      tag: 'Comments', body: 'json', read: true,
      description: 'Comments received on your files, newest first. `page` / `per_page` in the body win over the query string.',
      parameters: [param('page'), perPage(LIMITS.perPageMax)],
      requestBody: jsonBody('PageRequest', one('A page', { page: 1, per_page: 50 }), false, 'Optional.'),
      answers: {
        200: jsonAnswer('Comments received, newest first', 'ReceivedComments', {
          status: 'success',
          data: [{ comment_id: 7, submission_date: '2025-11-23', title: 'Read me', comment: 'Very clear notes, thank you.', link: fileUrl }],
          total: 1, page: 1, per_page: 50,
        }),
      },
      errors: { 400: [M.invalidPage, M.invalidPerPage], 404: [M.userNotFound] },
    },
    ...webhookOperations(),
    ...accountOperations(base),
    viewPage: {
      tag: 'Public pages',
      description: 'Public HTML page of a file; each GET counts a view (HEAD does not), 304s included. The view is counted with a viewer key (unique viewers in api-daily and api-trending): your user id when the request carries a valid token, else an anonymous key of the day (an HMAC of the client address and User-Agent under a salt that changes every UTC day and is forgotten after two). Conditional GETs answer 304.',
      parameters: [param('fileIdPath'), { ...PARAMETERS.IfNoneMatch, schema: shownOnly(str, PAGE_ETAG) }, param('IfModifiedSince')],
      answers: {
        200: {
          description: 'The file\'s page',
          headers: {
            ...EDGE_HEADERS, ...PAGE_VALIDATORS, 'Cache-Control': header('CacheControlContent'),
            'Content-Security-Policy': header('ContentSecurityPolicy'), 'X-Content-Type-Options': header('XContentTypeOptions'),
          },
          content: html(one('A page', '<!doctype html><html lang="en"><head><title>Read me · docshare</title></head><body><h1>Read me</h1>…</body></html>')),
        },
        304: ref('responses', 'NotModified'),
      },
      errors: { 400: [M.malformedUrl] },
      rawErrors: {
        404: {
          description: 'No such file (or deleted, or disabled): an HTML page',
          headers: { ...EDGE_HEADERS, 'Content-Security-Policy': header('ContentSecurityPolicy') },
          content: html(one('Not found page', '<!doctype html><html lang="en"><head><title>File not found</title></head><body><h1>File not found</h1></body></html>')),
        },
      },
    },
    fileContent: {
      tag: 'Public pages',
      description: 'The bytes behind a `download_url`: needs no token, counts nothing, stored content type, `Content-Disposition: attachment` (or inline), HTTP Range and conditional requests.',
      parameters: [
        param('fileIdPath'),
        // The link's own values: copied from a download_url (api-download, api-purchase), never made up.
        { name: 'expires', in: 'query', required: true, description: 'Unix time the link expires: copy it from a `download_url`.', schema: shownOnly(int, EXPIRES) },
        { name: 'signature', in: 'query', required: true, description: 'HMAC-SHA256 of the file id (and sale) and the expiry (hex): copy it from a `download_url`.', schema: shownOnly(str, SIGNATURE) },
        { name: 'sale', in: 'query', required: false, description: 'A buyer\'s link (from api-purchase or api-purchases): the sale it was signed for, copied from its `download_url`. It opens the file while it is for sale. Empty for a link from api-download.', schema: shownOnly(str, '5') },
        { name: 'disposition', in: 'query', required: false, description: '`inline` shows PDF, images and plain text in the browser; any other type stays an attachment.', schema: { type: 'string', enum: ['inline'] }, example: 'inline' },
        param('Range'), param('IfRange'), param('IfNoneMatch'), param('IfModifiedSince'),
      ],
      answers: {
        200: {
          description: 'The file',
          headers: {
            ...EDGE_HEADERS, ...CONTENT_VALIDATORS, 'Content-Disposition': header('ContentDisposition'), 'Accept-Ranges': header('AcceptRanges'),
            'Cache-Control': header('CacheControlContent'), 'X-Content-Type-Options': header('XContentTypeOptions'),
          },
          content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' }, examples: one('A text file', '# docshare\n\nEvent-sourced CQRS document-sharing backend…') } },
        },
        206: {
          description: 'The range asked for',
          headers: {
            ...EDGE_HEADERS, ...CONTENT_VALIDATORS, 'Content-Range': header('ContentRange'), 'Content-Disposition': header('ContentDisposition'),
            'Accept-Ranges': header('AcceptRanges'), 'Cache-Control': header('CacheControlContent'), 'X-Content-Type-Options': header('XContentTypeOptions'),
          },
          content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' }, examples: one('The first bytes', '# docshare') } },
        },
        302: {
          description: 'The blob store serves the bytes itself (when BLOB_PUBLIC_URL is set): follow `Location`',
          headers: { ...EDGE_HEADERS, Location: header('Location'), 'Cache-Control': header('CacheControlContent') },
        },
        304: ref('responses', 'NotModified'),
      },
      errors: { 400: [M.malformedUrl], 403: [M.badDownloadLink, M.notDownloadable], 404: [M.fileNotFound], 416: [M.rangeNotSatisfiable] },
    },
  };
};

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is invalid', 401: 'No valid token', 403: 'Not allowed', 404: 'Not found', 409: 'Conflict',
  413: 'Too large', 416: 'The range is outside the file', 422: 'The Idempotency-Key belongs to another request',
  500: 'The service failed; the write may or may not have been recorded',
  503: 'A service or store is unavailable: nothing was done, retry after `Retry-After` seconds',
};

const TAGS = [
  { name: 'Account', description: 'Registration and login: both answer a JWT.' },
  { name: 'Files', description: 'Upload, download, change, sell and delete files; categories; a user\'s files.' },
  { name: 'Search and statistics', description: 'Full-text search; your statistics, in totals and per UTC day; your top files; trending files.' },
  { name: 'Resumable uploads', description: 'Large files in parts sent straight to storage: start, PUT each part, complete; resume with the upload\'s state.' },
  { name: 'Comments', description: 'Comment on files; read the comments on yours.' },
  { name: 'Leaving', description: 'Take your data away (a ZIP of everything), or erase your account: every file deleted and your personal data made unreadable everywhere.' },
  { name: 'Webhooks', description: 'Your endpoints for signed notifications about your own files: register, change, test, rotate the secret, see the deliveries and dead letters, replay.' },
  { name: WEBHOOK_MESSAGES_TAG, description: 'What docshare POSTs to your webhook endpoints (this document\'s `webhooks`): one message type each, signed as Standard Webhooks says.' },
  { name: 'Public pages', description: 'No token: a file\'s HTML page and its bytes behind a signed link.' },
  { name: 'Documentation', description: 'This document, its reference page and the index.' },
  { name: 'CORS', description: 'Preflight requests of browsers.' },
];

const DESCRIPTION = `Upload, download, delete and search documents with metadata; statistics, file lists and comments.

**Envelope.** Every answer of the API is JSON with \`status\` = \`success\` | \`error\`; an error carries \`message\`, worded as listed for each status (the examples). Exceptions: a file's page (\`/docs/{fileId}\`, HTML), a file's bytes, and this documentation (\`/\`, \`${DOCS_PATH}\`).

**Authentication.** \`X-Authorization: Bearer <JWT>\` (or \`Authorization: Bearer <JWT>\`) on every \`${API_PREFIX}\` path but register, login and the documentation. No token: 401 \`${M.missingToken}\`; a bad or expired one: 401 \`${M.invalidToken}\`.

**Every answer** carries \`X-Request-Id\` (yours when you send a valid one) and, but for a resumable upload's part PUTs (never counted), the rate limit: \`RateLimit-Limit\`, \`RateLimit-Remaining\`, \`RateLimit-Reset\`, \`RateLimit-Policy\` and \`RateLimit\`. Over the limit (\`RATE_LIMIT_POINTS\` per \`RATE_LIMIT_WINDOW_SECONDS\`, default 30 per 60 s, per user, else per client IP): 429 \`${M.rateLimited}\` with \`Retry-After\`.

**Order of checks:** request id, rate limit, route (unknown path: 404 \`${M.notFound}\`; another method: 405 \`${M.invalidMethod}\` with \`Allow\`), token, body (400 \`${M.malformedJson}\`, 413 \`${M.bodyTooLarge}\` over 1 MiB, 400 \`${M.malformedBody}\`), then the operation's own checks in the order of its messages.

**Safe retries.** Writes (register, upload, starting and completing a resumable upload, comment, update, purchase, delete) take an optional \`Idempotency-Key\`: repeating a request with the same key does it once and replays the first answer with \`Idempotent-Replayed: true\`.

**Failures.** A 503 (with \`Retry-After\`) means nothing was done and a retry is safe; a 500 means the outcome is unknown. The HTTP layer itself answers 400 \`${M.badRequest}\` (unparsable request), 408 \`${M.requestTimeout}\` and 431 \`${M.headersTooLarge}\`, and closes the connection.

**Large files.** \`api-upload\` takes one multipart body of at most MAX_UPLOAD_BYTES (default 100 MiB). A resumable upload (\`api-uploads\`, up to MAX_RESUMABLE_BYTES, default 5 GiB) costs three calls whatever the size: start, PUT each part to its URL (straight to the blob store when it is reachable by clients; never rate limited), complete; after an interruption, its state names the parts still missing.

**Caching.** JSON answers are \`Cache-Control: no-store\`. A file's page and bytes carry \`ETag\` and \`Last-Modified\` and answer conditional requests with 304.

**CORS.** Origins listed in \`CORS_ORIGINS\` may call the API from a browser (the answers then carry \`Access-Control-Allow-Origin\`, \`Access-Control-Expose-Headers\` and \`Vary: Origin\`); \`OPTIONS\` answers their preflights with 204. A part's \`ETag\` is exposed to browser scripts.

HEAD is answered wherever GET is (but on the download, which would count).`;

/** The headers of the rate limit (EDGE_HEADERS). */
const RATE_LIMIT_HEADERS = new Set(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'RateLimit']);

/**
 * An answer of a route the rate limit does not apply to (routes.ts `rateLimited: false`): without
 * the RateLimit headers, which it never carries. A shared answer ($ref: 405, 408) is not the
 * route's method's, so stays as it is.
 */
const withoutRateLimit = (answer: Obj): Obj => {
  const headers = answer.headers as Obj | undefined;
  if (headers === undefined) return answer;
  return { ...answer, headers: Object.fromEntries(Object.entries(headers).filter(([name]) => !RATE_LIMIT_HEADERS.has(name))) };
};

const openApiPath = (path: string): string => path.replace(/:(\w+)/g, '{$1}');

/** Paths a CORS preflight (OPTIONS) is answered on: every API path. */
export const corsPaths = (): string[] => [...new Set([...ROUTES.map((r) => r.path), OPENAPI_PATH])];

/** The path parameters a path names (`{fileId}`), as the operations on it declare them. */
const pathParameters = (openApi: string): Obj[] => [...openApi.matchAll(/\{(\w+)\}/g)].map(([, name]) => {
  if (name === 'fileId') return param('fileIdPath');
  if (name === 'uploadId') return param('uploadIdPath');
  if (name === 'partNumber') return param('partNumberPath');
  if (name === 'webhookId') return param('webhookIdPath');
  if (name === 'erasureId') return param('erasureIdPath');
  if (name === 'exportId') return param('exportIdPath');
  throw new Error(`no parameter for {${String(name)}} in ${openApi}`);
});

const preflight = (operationId: string, openApi: string): Obj => ({
  operationId: `${operationId}Preflight`, tags: ['CORS'], summary: 'CORS preflight', security: [],
  description: 'A browser\'s preflight (`Origin` and `Access-Control-Request-Method`), answered when `CORS_ORIGINS` is set, before the token and the rate limit. The Access-Control-Allow-* headers are present when `Origin` is one of `CORS_ORIGINS`. Any other OPTIONS request (or CORS off) is 405.',
  parameters: [
    ...pathParameters(openApi),
    { name: 'Origin', in: 'header', required: false, schema: str, example: 'https://app.example.com' },
    { name: 'Access-Control-Request-Method', in: 'header', required: false, schema: str, example: 'POST' },
    { name: 'Access-Control-Request-Headers', in: 'header', required: false, schema: str, example: 'x-authorization, content-type, idempotency-key' },
  ],
  responses: {
    204: {
      description: 'Preflight answered (no body)',
      headers: {
        'X-Request-Id': header('XRequestId'), 'Access-Control-Allow-Origin': header('AccessControlAllowOrigin'),
        'Access-Control-Allow-Methods': header('AccessControlAllowMethods'), 'Access-Control-Allow-Headers': header('AccessControlAllowHeaders'),
        'Access-Control-Max-Age': header('AccessControlMaxAge'), Vary: header('Vary'),
      },
    },
    405: ref('responses', 'MethodNotAllowed'),
  },
});

/** The OpenAPI 3.1 document of the gateway, built from the route table so it cannot drift from it. */
export const openApiDocument = (publicBaseUrl: string): Obj => {
  const specs = operations(publicBaseUrl);
  const paths: Record<string, Record<string, Obj>> = {};
  const common = [param('XRequestId')];

  for (const route of ROUTES as Route[]) {
    const spec = specs[route.operationId];
    if (!spec) throw new Error(`no OpenAPI operation for ${route.operationId}`);
    const errors = new Map<number, string[]>();
    const add = (status: number, ...messages: string[]) => errors.set(status, [...(errors.get(status) ?? []), ...messages]);
    if (route.auth) add(401, M.missingToken, M.invalidToken);
    for (const [status, messages] of Object.entries(spec.errors ?? {})) add(Number(status), ...messages);
    if (spec.body === 'json') {
      add(400, M.malformedJson, M.malformedBody);
      add(413, M.bodyTooLarge);
    }
    if (spec.write) {
      add(400, M.invalidIdempotencyKey);
      add(409, M.idempotencyKeyInFlight);
      add(422, M.idempotencyKeyReused);
    }
    add(500, route.failure ?? M.internal);
    add(503, route.failure ?? M.unavailable);

    const responses: Record<string, Obj> = {};
    for (const [status, answer] of Object.entries(spec.answers)) responses[status] = answer;
    for (const [status, messages] of [...errors].sort(([a], [b]) => a - b)) {
      if (status === 429) continue;
      responses[status] = errorResponse(ERROR_DESCRIPTIONS[status] ?? 'Error', [...new Set(messages)], status === 503 ? { 'Retry-After': header('RetryAfter') } : {});
    }
    for (const [status, answer] of Object.entries(spec.rawErrors ?? {})) responses[status] = answer;
    responses[405] = ref('responses', 'MethodNotAllowed');
    if (spec.body) responses[408] = ref('responses', 'RequestTimeout');
    // The rate limit's 429, plus the route's own reasons to say 429 (an upload's share in flight).
    const tooMany = errors.get(429);
    if (route.rateLimited !== false) responses[429] = tooMany === undefined ? ref('responses', 'TooManyRequests')
      : errorResponse('Over the rate limit, or over this route\'s own limit: wait `Retry-After` seconds.', [M.rateLimited, ...tooMany], { 'Retry-After': header('RetryAfter') });

    const parameters = [...common, ...(spec.write ? [param('IdempotencyKey')] : []), ...(spec.read ? [param('XDocshareConsistency')] : []), ...(spec.parameters ?? [])];
    (paths[openApiPath(route.path)] ??= {})[route.method] = {
      operationId: route.operationId, tags: [spec.tag], summary: route.summary,
      ...(spec.description === undefined ? {} : { description: spec.description }),
      parameters,
      ...(spec.requestBody === undefined ? {} : { requestBody: spec.requestBody }),
      responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b))
        .map(([status, answer]) => [status, route.rateLimited === false ? withoutRateLimit(answer) : answer])),
      security: route.auth ? [{ XAuthorization: [] }, { BearerAuth: [] }] : [],
    };
  }

  const local: Record<string, Obj> = {
    index: {
      description: 'JSON when `Accept` prefers `application/json`, else an HTML page with the same links.',
      responses: {
        200: {
          description: 'The index',
          headers: { ...EDGE_HEADERS, Vary: header('Vary') },
          content: {
            'application/json': { schema: schema('Index'), examples: one('The index', indexBody()) },
            'text/html': { schema: schema('Html'), examples: one('The index page', `<!doctype html><html lang="en"><head><title>docshare API</title></head><body><h1>docshare API</h1><ul><li><a href="${DOCS_PATH}">API reference</a></li></ul></body></html>`) },
          },
        },
      },
    },
    openapi: {
      responses: {
        200: {
          description: 'This document',
          headers: EDGE_HEADERS,
          content: json(schema('OpenApiDocument'), one('The document (abridged)', { openapi: '3.1.0', info: { title: 'docshare API', version: RELEASE_VERSION }, paths: {} })),
        },
      },
    },
    docsUi: {
      description: 'Swagger UI over this document, served from this origin only (no CDN).',
      responses: {
        200: {
          description: 'The reference page',
          headers: { ...EDGE_HEADERS, 'Content-Security-Policy': header('ContentSecurityPolicy'), 'Cache-Control': header('CacheControlNoCache') },
          content: html(one('The page', `<!doctype html><html lang="en"><head><title>docshare API reference</title></head><body><div id="swagger-ui" data-openapi-url="${OPENAPI_PATH}"></div></body></html>`)),
        },
      },
    },
    docsAsset: {
      description: 'The reference page\'s scripts, stylesheet and icon, at a path that changes with their content: cached for a year. gzip when accepted.',
      parameters: [
        { name: 'version', in: 'path', required: true, description: 'The files\' version, as the page names it.', schema: str, example: DOCS_ASSET_VERSION },
        { name: 'file', in: 'path', required: true, schema: { type: 'string', enum: [...DOCS_ASSET_FILES] }, example: 'swagger-ui.css' },
      ],
      responses: {
        200: {
          description: 'The file',
          headers: { ...EDGE_HEADERS, 'Cache-Control': header('CacheControlImmutable'), 'X-Content-Type-Options': header('XContentTypeOptions') },
          content: {
            'text/css': { schema: str, examples: one('The stylesheet', '.swagger-ui{color:#3b4151}') },
            'text/javascript': { schema: str, examples: one('A script', '\'use strict\';') },
            'image/png': { schema: { type: 'string', contentMediaType: 'image/png' }, examples: one('The icon', '\u0089PNG…') },
          },
        },
        404: ref('responses', 'NotFound'),
      },
    },
  };
  for (const route of LOCAL_ROUTES) {
    const spec = local[route.operationId] as Obj;
    const responses = { ...(spec.responses as Obj), 405: ref('responses', 'MethodNotAllowed'), 429: ref('responses', 'TooManyRequests') };
    (paths[openApiPath(route.path)] ??= {})[route.method] = {
      operationId: route.operationId, tags: ['Documentation'], summary: route.summary, ...spec,
      parameters: [...common, ...((spec.parameters as Obj[] | undefined) ?? [])], responses, security: [],
    };
  }

  for (const path of corsPaths()) {
    const methods = paths[openApiPath(path)];
    if (!methods) continue;
    const first = Object.values(methods)[0] as { operationId: string };
    methods.options = preflight(first.operationId, openApiPath(path));
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'docshare API', version: RELEASE_VERSION, description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    // Relative: the origin the document was fetched from, whatever host name reached it (localhost,
    // 127.0.0.1, a proxy's). The paths are whole (/api/V1/..., /docs/{fileId}), hence '/'.
    servers: [{ url: '/', description: 'This server (the origin this document was fetched from)' }],
    security: [{ XAuthorization: [] }, { BearerAuth: [] }],
    tags: TAGS,
    paths,
    webhooks: webhookCatalogue(),
    components: {
      securitySchemes: {
        XAuthorization: { type: 'apiKey', in: 'header', name: 'X-Authorization', description: '`Bearer <JWT>`, the token register and login answer.' },
        BearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
      schemas: SCHEMAS,
      headers: HEADERS,
      parameters: PARAMETERS,
      responses: RESPONSES,
    },
  };
};
