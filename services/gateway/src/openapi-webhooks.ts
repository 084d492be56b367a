import {
  EXTRACT_FORMATS, EXTRACTION_FAILURES, WEBHOOK_EVENT_TYPES, webhookMessageOf,
  type CloudEvent, type WebhookMessageType, type WebhookPayload,
} from '@docshare/contracts';

/*
 * The OpenAPI document's top-level `webhooks` (OpenAPI 3.1): what docshare POSTs to a creator's
 * endpoints (issue 23). One entry per message type, its payload schema as
 * libs/contracts/src/webhooks.ts builds it (the truth: services/gateway/test/openapi-webhooks.test.ts
 * validates webhookMessageOf's output against these schemas, objects closed), the three Standard
 * Webhooks headers, and what the receiver's answer means. The examples are webhookMessageOf's
 * own output for example events, so they cannot say other than what is sent.
 */

type Obj = Record<string, unknown>;

const ref = (kind: 'schemas' | 'parameters', name: string): Obj => ({ $ref: `#/components/${kind}/${name}` });
const id: Obj = { type: 'integer', minimum: 1 };
const time: Obj = { type: 'string', format: 'date-time' };
const obj = (properties: Record<string, Obj>, required = Object.keys(properties)): Obj => ({ type: 'object', properties, required });

/** The tag of the catalogue (TAGS in openapi.ts). */
export const WEBHOOK_MESSAGES_TAG = 'Webhook messages';

/** Every message type an endpoint can be sent: the six it may subscribe to, and the test message. */
export const WEBHOOK_MESSAGE_TYPES: readonly WebhookMessageType[] = [...WEBHOOK_EVENT_TYPES, 'webhook.test'];

/** A message's schema name in components/schemas: `WebhookFileUploaded`, ..., `WebhookTest`. */
const schemaName = (type: WebhookMessageType): string =>
  type === 'webhook.test' ? 'WebhookTest' : `Webhook${type.split(/[._]/).map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')}`;

/** The message's operationId in the catalogue: `fileUploadedMessage`, ..., `webhookTestMessage`. */
const operationIdOf = (type: WebhookMessageType): string =>
  `${type.split(/[._]/).map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('')}Message`;

/** Each message type's `data` (libs/contracts/src/webhooks.ts, `WebhookDataByType`). */
const DATA: Record<WebhookMessageType, { summary: string; description: string; data: Obj }> = {
  'file.uploaded': {
    summary: 'One of your files was uploaded',
    description: 'A file was recorded (a form upload, or a resumable upload completed). Its text is not extracted yet: `file.processed` follows.',
    data: obj({
      file_id: id, owner_id: id, title: { type: 'string' }, file_name: { type: 'string', description: 'The original file name.' },
      content_type: { type: 'string', description: 'The stored content type (sniffed from the bytes where known).' },
      size: { type: 'integer', minimum: 0, description: 'Bytes.' }, category_id: id, uploaded_at: time,
    }),
  },
  'file.processed': {
    summary: 'Text extraction of one of your files ended',
    description: 'Sent after the extractor\'s outcome is recorded and the read models have it: search and the file\'s page already show the text when this arrives. `status` says whether text was extracted.',
    data: obj({
      file_id: id, owner_id: id,
      status: { type: 'string', enum: ['extracted', 'failed'] },
      format: { type: ['string', 'null'], enum: [...EXTRACT_FORMATS, null], description: 'The format read; null when it was not recognised.' },
      characters: { type: 'integer', minimum: 0, description: 'Characters of text extracted (0 when failed).' },
      truncated: { type: 'boolean', description: 'The document held more text than the cap.' },
      language: { type: ['string', 'null'], description: 'ISO 639-3 code of the text\'s language; null when too short, unclear or failed.' },
      reason: { type: ['string', 'null'], enum: [...EXTRACTION_FAILURES, null], description: 'Why no text was extracted; null when extracted.' },
      processed_at: time,
    }),
  },
  'file.updated': {
    summary: 'One of your files was changed',
    description: '`changes` holds only what changed: title, description, tags, enabled, for_sale, price.',
    data: obj({
      file_id: id, owner_id: id,
      changes: obj({
        title: { type: 'string' }, description: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } },
        enabled: { type: 'boolean' }, for_sale: { type: 'boolean' }, price: { type: 'number', minimum: 0 },
      }, []),
      updated_at: time,
    }),
  },
  'file.deleted': {
    summary: 'One of your files was deleted',
    description: 'The file left search, lists and downloads; its bytes are removed.',
    data: obj({ file_id: id, owner_id: id, deleted_at: time }),
  },
  'comment.received': {
    summary: 'A comment was posted on one of your files',
    description: 'Sent to the file\'s owner (whoever wrote it, the owner included).',
    data: obj({ comment_id: id, file_id: id, owner_id: { ...id, description: 'The file\'s owner: you.' }, author_id: id, comment: { type: 'string' }, posted_at: time }),
  },
  'sale.completed': {
    summary: 'One of your files was bought',
    description: 'A buyer\'s first purchase of the file (a repeated purchase records nothing).',
    data: obj({ sale_id: id, file_id: id, owner_id: id, buyer_id: id, price: { type: 'number', minimum: 0 }, purchased_at: time }),
  },
  'webhook.test': {
    summary: 'A test message',
    description: 'Sent by `POST /api/V1/users/api-webhooks/{webhookId}/test`, to that endpoint only (even when it is disabled); never subscribed to.',
    data: obj({ webhook_id: id, owner_id: id, requested_at: time }),
  },
};

/** The components/schemas of the catalogue: one payload schema per message type. */
export const WEBHOOK_MESSAGE_SCHEMAS: Record<string, Obj> = Object.fromEntries(WEBHOOK_MESSAGE_TYPES.map((type) => [schemaName(type), {
  ...obj({
    type: { const: type },
    timestamp: { ...time, description: 'When the event happened (the event\'s time, the same on every attempt).' },
    data: DATA[type].data,
  }),
  description: `The body of a \`${type}\` delivery (Standard Webhooks: \`{type, timestamp, data}\`).`,
}]));

/* ---------- examples: webhookMessageOf's output for example events ---------- */

const EVENT_ID = '5f2b8c3e-9a41-4d7b-b1e6-0c8d2f4a6e19';

const event = (type: string, data: unknown, time = '2025-11-23T14:06:27.000Z', eventId = EVENT_ID): CloudEvent => ({
  specversion: '1.0', id: eventId, source: '/docshare/docs-command', type, time, subject: 'file-1', datacontenttype: 'application/json',
  data, correlationid: '0f8fad5b-d9cb-469f-a165-70867728950e', causationid: '0f8fad5b-d9cb-469f-a165-70867728950e', streamversion: 1,
});

/** Example events of the log, by the message type they make (file.processed: both outcomes). */
export const WEBHOOK_EXAMPLE_EVENTS: Record<WebhookMessageType, Record<string, CloudEvent>> = {
  'file.uploaded': {
    default: event('docs.file.uploaded.v1', {
      fileId: 1, ownerId: 1, ownerName: 'Ada', title: 'Read me', description: 'The front door', tags: ['docs', 'intro'], categoryId: 1,
      categoryName: 'Documentation', license: 'CC BY', videoUrl: null, originalFileName: 'README.md', contentType: 'text/markdown', size: 20480,
      blobKey: 'files/1', uploadedAt: '2025-11-23T14:06:27.000Z',
    }),
  },
  'file.processed': {
    extracted: event('docs.file.content-extracted.v1', {
      fileId: 1, ownerId: 1, blobKey: 'files/1', format: 'markdown', extractor: 'marked@16.0.0', characters: 18342, truncated: false,
      language: 'eng', text: '# docshare …', durationMs: 41, extractedAt: '2025-11-23T14:06:28.000Z',
    }, '2025-11-23T14:06:28.000Z'),
    failed: event('docs.file.content-extraction-failed.v1', {
      fileId: 2, ownerId: 1, blobKey: 'files/2', format: 'pdf', reason: 'encrypted', detail: 'The PDF is encrypted', durationMs: 12,
      failedAt: '2025-11-23T14:07:02.000Z',
    }, '2025-11-23T14:07:02.000Z'),
  },
  'file.updated': {
    default: event('docs.file.updated.v1', { fileId: 1, ownerId: 1, changes: { forSale: true, price: 4.5 }, updatedAt: '2025-11-23T15:00:00.000Z' }, '2025-11-23T15:00:00.000Z'),
  },
  'file.deleted': {
    default: event('docs.file.deleted.v1', { fileId: 1, ownerId: 1, blobKey: 'files/1', deletedAt: '2025-11-24T09:30:00.000Z' }, '2025-11-24T09:30:00.000Z'),
  },
  'comment.received': {
    default: event('docs.comment.posted.v1', {
      commentId: 7, fileId: 1, fileOwnerId: 1, fileTitle: 'Read me', authorId: 2, comment: 'Very clear notes, thank you.', postedAt: '2025-11-23T16:12:45.000Z',
    }, '2025-11-23T16:12:45.000Z'),
  },
  'sale.completed': {
    default: event('docs.file.purchased.v1', {
      fileId: 1, ownerId: 1, saleId: 5, buyerId: 2, price: 4.5, purchasedAt: '2025-11-23T17:20:00.000Z',
    }, '2025-11-23T17:20:00.000Z'),
  },
  'webhook.test': {
    default: event('docs.webhook.test_requested.v1', { webhookId: 1, ownerId: 1, requestedAt: '2025-11-23T14:10:00.000Z' }, '2025-11-23T14:10:00.000Z'),
  },
};

const payloadOf = (e: CloudEvent): WebhookPayload => {
  const message = webhookMessageOf(e);
  if (message === null) throw new Error(`no webhook message for ${e.type}`);
  return message.payload;
};

/* ---------- the Standard Webhooks headers ---------- */

/** components/parameters: the headers of every delivery. */
export const WEBHOOK_HEADER_PARAMETERS: Record<string, Obj> = {
  WebhookId: {
    name: 'webhook-id', in: 'header', required: true,
    description: 'The message\'s id, `msg_` and 32 hex digits, derived from the event\'s: the same on every retry, replay and re-send after a crash. Your deduplication key.',
    schema: { type: 'string', pattern: '^msg_[0-9a-f]{32}$' }, example: `msg_${EVENT_ID.replaceAll('-', '')}`,
  },
  WebhookTimestamp: {
    name: 'webhook-timestamp', in: 'header', required: true,
    description: 'Unix seconds of this attempt (not of the event). Refuse a timestamp too far from your clock (the Standard Webhooks libraries allow 5 minutes) against replayed requests.',
    schema: { type: 'string', pattern: '^[0-9]+$' }, example: '1763906787',
  },
  WebhookSignature: {
    name: 'webhook-signature', in: 'header', required: true,
    description: 'Space-separated signatures `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the base64-decoded part of your secret after `whsec_`. During a rotation there are two (the new secret\'s first) for 24 h: accept the message when any one verifies (compare in constant time).',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$' },
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,5i8kM2d0c0u7w5S3Y3oQ1k5m6n7o8p9q0r1s2t3u4v8=',
  },
};

const DELIVERY = `Delivery follows the Standard Webhooks specification (https://www.standardwebhooks.com): a POST with \`content-type: application/json\`, \`user-agent: docshare-webhooks/1\`, the headers \`webhook-id\`, \`webhook-timestamp\` and \`webhook-signature\`, and the body \`{type, timestamp, data}\`. Verify it with a Standard Webhooks library (npm \`standardwebhooks\`: \`new Webhook(secret).verify(body, headers)\`) or docshare's SDK verifier, on the raw body.

**Your answer.** Any 2xx within 15 s (WEBHOOK_TIMEOUT_MS) is a delivery; its body is ignored (at most 64 KiB is read). \`410 Gone\` disables the endpoint (re-enable it with PATCH \`enabled: true\`). Anything else fails and is retried: another status, a redirect (never followed), a timeout, a refused connection. Retries after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h (±10 %; a longer \`Retry-After\` is honoured, up to 24 h; WEBHOOK_RETRY_SCHEDULE), with the same \`webhook-id\`; then the message is a dead letter (listed, replayable). An endpoint that fails every attempt for 5 days (WEBHOOK_DISABLE_AFTER) is disabled.

**Order and duplicates.** An endpoint's messages are sent one at a time in the order of the event log (WEBHOOK_ENDPOINT_CONCURRENCY); a message being retried holds the ones after it. A message can come more than once (a replay, a re-send after a crash): deduplicate on \`webhook-id\`.`;

/** The document's `webhooks`: one POST per message type. */
export const webhookCatalogue = (): Obj => Object.fromEntries(WEBHOOK_MESSAGE_TYPES.map((type) => [type, {
  post: {
    operationId: operationIdOf(type), tags: [WEBHOOK_MESSAGES_TAG], summary: `${type}: ${DATA[type].summary}`,
    description: `${DATA[type].description}\n\n${DELIVERY}`,
    parameters: [ref('parameters', 'WebhookId'), ref('parameters', 'WebhookTimestamp'), ref('parameters', 'WebhookSignature')],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: ref('schemas', schemaName(type)),
          examples: Object.fromEntries(Object.entries(WEBHOOK_EXAMPLE_EVENTS[type]).map(([name, e]) => [name, { summary: `${type} (${name})`, value: payloadOf(e) }])),
        },
      },
    },
    responses: {
      '2XX': { description: 'Delivered: nothing more is sent for this message (the body is ignored).' },
      410: { description: 'Gone: the endpoint is disabled (docs.webhook.disabled.v1, reason `gone`); nothing more is sent to it until it is enabled again.' },
      default: { description: 'Failed (any other status, a redirect, or no answer within 15 s): retried on the schedule, then kept as a dead letter.' },
    },
    security: [],
  },
}]));
