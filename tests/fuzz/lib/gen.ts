// The request generators of the fuzz suite (fast-check arbitraries). Each generator yields a Case:
// the exact bytes to write on one connection and what is owed in answer. Generation depends only
// on the seed and the fuzz context (ids and tokens made by the setup), so a seed replays the same
// requests.
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { signJwt, nowSeconds } from '../../support/jwt.ts';
import type { Wire } from './wire.ts';

export interface FuzzUser {
  userId: number;
  token: string;
  email: string;
  password: string;
}

export interface FuzzContext {
  host: string;
  port: number;
  /** Users whose tokens the fuzz uses (never the sentinel's). */
  users: FuzzUser[];
  /** Ids of files the fuzz users uploaded in the setup. */
  fileIds: number[];
  categoryIds: number[];
  /** Path and query of signed download URLs of the fuzz users' files. */
  signedPaths: string[];
  /** The sentinel's ids: the fuzz aims at them too (they must be refused). */
  sentinelUserId: number;
  sentinelFileIds: number[];
  sentinelEmail: string;
  jwtSecret: string;
  maxUploadBytes: number;
  /** Resumable upload sessions of the fuzz users (pending when the run starts). */
  uploadIds: string[];
  /** Path and query of docshare's signed part URLs of those sessions. */
  partPaths: string[];
  /** Webhooks of the fuzz users (issue 23) with their owner's token, and the sentinel's ids (the fuzz aims at them too). */
  webhooks: Array<{ id: number; token: string }>;
  sentinelWebhookIds: number[];
}

export interface Case {
  /** Generator name (counts and reports are by generator). */
  gen: string;
  /** Method and target of the first request, for reports. */
  label: string;
  wire: Wire;
  /** The path of the first request (decides which documented non-JSON answers are allowed). */
  path: string;
}

// ---------------------------------------------------------------------------------------------
// Small values

const CRLF = '\r\n';
const b = (s: string | Buffer): Buffer => (typeof s === 'string' ? Buffer.from(s, 'utf8') : s);

const SIZES_NEAR_LIMIT = [100, 1000, 4096, 8000, 16_000, 16_300, 16_384, 16_500, 20_000, 65_536];

/** Strings a parser might trip on. */
export const nastyString = (): fc.Arbitrary<string> => fc.oneof(
  { weight: 6, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      '', ' ', '   ', '\t', '\u0000', 'null', 'undefined', 'true', '0', '-1', '1e309', 'NaN', 'Infinity',
      '{"$gt":""}', "' OR '1'='1", '"; DROP TABLE files; --', '<script>alert(1)</script>', '../../etc/passwd',
      '..\\..\\windows\\win.ini', '\u202egnp.exe', '😀😀😀', 'ß', 'İ', '\ud800', '\udfff', '%00', '%zz', '${jndi:ldap://x}',
      '{{7*7}}', 'a\r\nX-Injected: 1', '\u0085', '\ufeff', 'CC BY', 'cc  by-nc-nd', 'CC0', 'http://example.com/v',
      'javascript:alert(1)', 'http://', 'https://' + 'a'.repeat(2100) + '.com', 'fuzz', 'alpha,beta', ',,,', ' , ',
    ),
  },
  // What a terminal acts on (issue 17): OSC title and clipboard writes, screen clears, C1 CSI,
  // bidi overrides and isolates, line breaks a one-line field must not keep.
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '\u001b]0;pwned\u0007', '\u001b]52;c;cm0gLXJmIH4=\u0007', '\u001b[2J\u001b[H', '\u001b[31mred\u001b[0m', '\u009b2J', '\u009d0;t\u009c',
      'a\u0008\u0008b', '\u007f', 'x\u202ey', '\u2066a\u2069', '\u200f\u200e\u061c', 'two\nlines', 'tab\there', 'cr\rlf\r\n', '\u2028\u2029',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(101, 256, 1001, 5001, 70_000, 300_000).map((n) => 'x'.repeat(n)) },
);

/** Number literals as JSON text (some out of range for doubles or integers). */
const numberText = (): fc.Arbitrary<string> => fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.constantFrom('0', '-0', '1', '-1', '1.5', '1e3', '1E+2', '1e-7', '9007199254740993', '1e309', '-1e309',
    '123456789012345678901234567890', '0.0000000000000000000000001', '2147483648', '4294967296', '18446744073709551616'),
);

/** A JSON value as text: nested values, operator objects, prototype keys. */
export const jsonText = (fieldNames: string[] = []): fc.Arbitrary<string> => {
  const keys = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...(fieldNames.length > 0 ? fieldNames : ['id'])) },
    { weight: 2, arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', '$gt', '$ne', '$where', '$regex', 'toString', 'hasOwnProperty', 'valueOf', 'status', 'message', 'user_id', 'owner', '') },
    { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  );
  const { value } = fc.letrec<{ value: string }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 4, arbitrary: nastyString().map((s) => JSON.stringify(s)) },
      { weight: 3, arbitrary: numberText() },
      { weight: 1, arbitrary: fc.constantFrom('true', 'false', 'null') },
      { weight: 2, arbitrary: operatorObject() },
      { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }).map((a) => `[${a.join(',')}]`) },
      { weight: 1, arbitrary: fc.array(fc.tuple(keys, tie('value')), { maxLength: 4 }).map((kv) => `{${kv.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`) },
    ),
  }));
  return value;
};

const operatorObject = (): fc.Arbitrary<string> => fc.constantFrom(
  '{"$gt":""}', '{"$ne":null}', '{"$gt":0}', '{"$regex":".*"}', '{"$where":"sleep(100)||true"}', '{"$in":[1,2,3]}',
  '{"$exists":true}', '{"$expr":{"$eq":[1,1]}}', '{"__proto__":{"isAdmin":true,"status":"success"}}',
  '{"constructor":{"prototype":{"polluted":"yes"}}}', '{"toString":"x","valueOf":1}', '{"length":1e9}',
  '{"bool":{"must":{"match_all":{}}}}', '{"script":{"source":"1"}}', '[]', '{}', '[{"$gt":""}]',
);

// ---------------------------------------------------------------------------------------------
// Ids, tokens, paths

/** An id as JSON text, in every shape a client could send it. */
const idJson = (ctx: FuzzContext): fc.Arbitrary<string> => {
  const known = fc.constantFrom(...ctx.fileIds, ...ctx.sentinelFileIds, ...ctx.categoryIds);
  const near = fc.integer({ min: 0, max: Math.max(...ctx.fileIds, ...ctx.sentinelFileIds) + 50 });
  const n = fc.oneof({ weight: 4, arbitrary: known }, { weight: 2, arbitrary: near });
  return fc.oneof(
    { weight: 5, arbitrary: n.map(String) },
    { weight: 5, arbitrary: n.map((x) => JSON.stringify(String(x))) },
    {
      weight: 3,
      arbitrary: fc.tuple(n, fc.constantFrom('"00%d"', '" %d "', '"%d.0"', '%d.0', '%de0', '"+%d"', '"-%d"', '-%d', '[%d]', '{"$gt":%d}', '"%dabc"', '"0x%d"', '"%d\\u0000"', '%d.5'))
        .map(([x, f]) => f.replaceAll('%d', String(x))),
    },
    { weight: 2, arbitrary: jsonText(['id', 'file_id']) },
  );
};

/** An id as a query-string value or a path segment (already URL-shaped). */
const idInUrl = (ctx: FuzzContext): fc.Arbitrary<string> => {
  const known = fc.constantFrom(...ctx.fileIds, ...ctx.sentinelFileIds, ctx.sentinelUserId, ...ctx.users.map((u) => u.userId));
  return fc.oneof(
    { weight: 6, arbitrary: known.map(String) },
    { weight: 2, arbitrary: fc.integer({ min: -5, max: 200 }).map(String) },
    {
      weight: 4,
      arbitrary: fc.tuple(known, fc.constantFrom('00%d', '%20%d%20', '%d.0', '%de0', '+%d', '-%d', '%d%00', '%d%zz', '%', '%zz', '%E0%A4%A', '%C0%AF', '%ff%fe',
        '%F0%9F%98%80', '%d;x=1', '99999999999999999999999', '1e999', '0x%d', '%2e%2e', '..', '.', '%2F%d', '%d/', '%u0041', '%%', '%d%', ''))
        .map(([x, f]) => f.replaceAll('%d', String(x))),
    },
    { weight: 1, arbitrary: nastyString().map((s) => encodeURIComponentLoose(s)) },
  );
};

/** Percent-encodes what a request target cannot hold, keeping `%` so broken escapes stay broken. */
const encodeURIComponentLoose = (s: string): string => {
  let out = '';
  for (const ch of s) {
    if (/^[A-Za-z0-9\-._~!$&'()*+,;=:@%]$/.test(ch)) out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
};

/** Header lines that carry (or fail to carry) a token. */
const authHeaders = (ctx: FuzzContext): fc.Arbitrary<Array<[string, string]>> => {
  const user = fc.constantFrom(...ctx.users);
  const now = nowSeconds();
  const forged = fc.tuple(
    fc.constantFrom(...ctx.users.map((u) => u.userId), ctx.sentinelUserId),
    fc.constantFrom('none', 'wrong-key', 'HS512', 'HS384', 'expired', 'future-nbf', 'sentinel-none', 'none-upper', 'kid', 'weird-sub', 'no-sub', 'no-exp'),
  ).map(([sub, kind]) => {
    const payload = { sub: String(sub), iat: now, exp: now + 3600 };
    switch (kind) {
      case 'none': return signJwt(payload, '', { alg: 'none', typ: 'JWT' });
      case 'sentinel-none': return signJwt({ ...payload, sub: String(ctx.sentinelUserId) }, '', { alg: 'none', typ: 'JWT' });
      case 'none-upper': return `${Buffer.from('{"alg":"NONE","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.x`;
      case 'wrong-key': return signJwt(payload, 'not-the-secret-not-the-secret-not-the-secret');
      case 'HS512': return signJwt(payload, ctx.jwtSecret, { alg: 'HS512', typ: 'JWT' });
      case 'HS384': return signJwt(payload, ctx.jwtSecret, { alg: 'HS384', typ: 'JWT' });
      case 'expired': return signJwt({ ...payload, iat: now - 7200, exp: now - 3600 }, ctx.jwtSecret);
      case 'future-nbf': return signJwt({ ...payload, sub: String(ctx.users[0]?.userId ?? 1), nbf: now + 3600 }, ctx.jwtSecret);
      case 'kid': return signJwt(payload, 'x', { alg: 'HS256', typ: 'JWT', kid: '../../../../dev/null' });
      // Signed with the real key but with a subject no client could name: the server must cope.
      case 'weird-sub': return signJwt({ ...payload, sub: { $gt: '' } }, ctx.jwtSecret);
      case 'no-sub': return signJwt({ iat: now, exp: now + 3600 }, ctx.jwtSecret);
      default: return signJwt({ sub: String(ctx.users[0]?.userId ?? 1), iat: now }, ctx.jwtSecret);
    }
  });
  const garbage = fc.oneof(
    fc.string({ maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, '')),
    fc.constantFrom('', ' ', 'Bearer', 'Bearer ', 'Bearer  ', 'Basic dXNlcjpwYXNz', 'Bearer a.b.c', 'Bearer ...', 'Bearer eyJ', 'Bearer null',
      'Bearer {"$gt":""}', 'Bearer ' + 'A'.repeat(9000), 'Bearer \u00ff\u00fe', 'Bearer %00'),
  );
  return fc.oneof(
    { weight: 20, arbitrary: user.map((u): Array<[string, string]> => [['X-Authorization', `Bearer ${u.token}`]]) },
    { weight: 2, arbitrary: user.map((u): Array<[string, string]> => [['Authorization', `Bearer ${u.token}`]]) },
    { weight: 1, arbitrary: user.map((u): Array<[string, string]> => [['X-Authorization', `bearer ${u.token}`]]) },
    { weight: 1, arbitrary: user.map((u): Array<[string, string]> => [['X-Authorization', u.token]]) },
    { weight: 1, arbitrary: user.map((u): Array<[string, string]> => [['X-Authorization', `Bearer  ${u.token} `]]) },
    { weight: 1, arbitrary: user.map((u): Array<[string, string]> => [['X-Authorization', `Bearer ${u.token}x`]]) },
    { weight: 3, arbitrary: fc.constant<Array<[string, string]>>([]) },
    { weight: 3, arbitrary: forged.map((t): Array<[string, string]> => [['X-Authorization', `Bearer ${t}`]]) },
    { weight: 2, arbitrary: garbage.map((g): Array<[string, string]> => [['X-Authorization', g]]) },
    {
      weight: 2,
      arbitrary: fc.tuple(user, user, garbage, fc.boolean()).map(([u, v, g, validFirst]): Array<[string, string]> => validFirst
        ? [['X-Authorization', `Bearer ${u.token}`], ['X-Authorization', g || `Bearer ${v.token}`]]
        : [['X-Authorization', g], ['X-Authorization', `Bearer ${u.token}`]]),
    },
    { weight: 1, arbitrary: fc.tuple(user, garbage).map(([u, g]): Array<[string, string]> => [['X-Authorization', `Bearer ${u.token}`], ['Authorization', g]]) },
    { weight: 1, arbitrary: fc.tuple(user, forged).map(([u, t]): Array<[string, string]> => [['Authorization', `Bearer ${u.token}`], ['X-Authorization', `Bearer ${t}`]]) },
  );
};

/** Resumable uploads (issue 22): the create call is an endpoint; the session's calls are in uploadCase. */
const UPLOADS = '/api/V1/docs/api-uploads';
/** Webhooks (issue 23): registration and the list are endpoints; an endpoint's own routes are in webhookCase. */
const WEBHOOKS = '/api/V1/users/api-webhooks';

interface Endpoint {
  name: string;
  method: string;
  path: string;
  kind: 'json' | 'none' | 'multipart' | 'query';
  fields: string[];
}

const ENDPOINTS: Endpoint[] = [
  { name: 'register', method: 'POST', path: '/api/V1/users/api-register', kind: 'json', fields: ['name', 'email', 'password'] },
  { name: 'login', method: 'POST', path: '/api/V1/users/api-login', kind: 'json', fields: ['email', 'password'] },
  { name: 'upload', method: 'POST', path: '/api/V1/docs/api-upload', kind: 'multipart', fields: [] },
  { name: 'download', method: 'GET', path: '/api/V1/docs/api-download', kind: 'query', fields: ['file_id'] },
  { name: 'delete', method: 'DELETE', path: '/api/V1/docs/api-delete', kind: 'json', fields: ['id'] },
  { name: 'search', method: 'POST', path: '/api/V1/stats/api-search', kind: 'json', fields: ['search', 'page', 'per_page'] },
  { name: 'stats', method: 'POST', path: '/api/V1/stats/api-stats', kind: 'none', fields: [] },
  { name: 'files', method: 'GET', path: '/api/V1/users/api-files', kind: 'query', fields: ['user_id', 'page', 'per_page'] },
  { name: 'comments', method: 'POST', path: '/api/V1/users/api-comments', kind: 'none', fields: ['page', 'per_page'] },
  { name: 'comment', method: 'POST', path: '/api/V1/docs/api-comment', kind: 'json', fields: ['file_id', 'comment'] },
  { name: 'update', method: 'POST', path: '/api/V1/docs/api-update', kind: 'json', fields: ['id', 'for_sale', 'price', 'enabled', 'title', 'description', 'tags'] },
  { name: 'purchase', method: 'POST', path: '/api/V1/docs/api-purchase', kind: 'json', fields: ['file_id'] },
  { name: 'categories', method: 'GET', path: '/api/V1/docs/api-categories', kind: 'query', fields: ['page', 'per_page'] },
  { name: 'purchases', method: 'GET', path: '/api/V1/users/api-purchases', kind: 'query', fields: ['page', 'per_page'] },
  { name: 'openapi', method: 'GET', path: '/api/V1/openapi.json', kind: 'none', fields: [] },
  { name: 'daily', method: 'GET', path: '/api/V1/stats/api-daily', kind: 'query', fields: ['from', 'to', 'file_id'] },
  { name: 'top', method: 'GET', path: '/api/V1/stats/api-top', kind: 'query', fields: ['metric', 'days', 'limit'] },
  { name: 'trending', method: 'GET', path: '/api/V1/stats/api-trending', kind: 'query', fields: ['hours', 'category_id', 'limit'] },
  {
    name: 'uploads', method: 'POST', path: UPLOADS, kind: 'json',
    fields: ['file_name', 'size', 'content_type', 'title', 'description', 'tags', 'cc_license', 'category_id', 'new_category_name', 'category_description', 'category_tags', 'video'],
  },
  { name: 'webhooks', method: 'POST', path: WEBHOOKS, kind: 'json', fields: ['url', 'events', 'description'] },
  { name: 'webhook-list', method: 'GET', path: WEBHOOKS, kind: 'query', fields: [] },
  // Leaving (issue 24): exports (one built per user at most every 15 minutes). The erasure is not
  // fuzzed: with a fuzz user's real password it would end that user, and every case after it.
  { name: 'export', method: 'POST', path: '/api/V1/users/api-export', kind: 'none', fields: [] },
  { name: 'export-status', method: 'GET', path: '/api/V1/users/api-export', kind: 'query', fields: ['export_id'] },
];

const OTHER_PATHS = ['/', '/healthz', '/readyz', '/metrics', '/docs', '/docs/', '/files', '/files/1', '/api', '/api/V1', '/api/V1/', '/favicon.ico', '/robots.txt', '/.env', '/api/V1/docs', '/api/V2/users/api-files'];

/** A valid-looking value for a field, as JSON text. */
const goodValue = (ctx: FuzzContext, field: string): fc.Arbitrary<string> => {
  const s = (...xs: string[]): fc.Arbitrary<string> => fc.constantFrom(...xs).map((x) => JSON.stringify(x));
  switch (field) {
    case 'id':
    case 'file_id': return idJson(ctx);
    case 'user_id': return fc.constantFrom(ctx.sentinelUserId, ...ctx.users.map((u) => u.userId)).map(String);
    case 'name': return s('Fuzz Tester', 'Ada');
    // A fresh address now and then (an account is created), mostly ones that exist.
    case 'email': return fc.oneof(
      { weight: 4, arbitrary: s(...ctx.users.map((u) => u.email), ctx.sentinelEmail, 'nobody@example.com') },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 ** 31 }).map((h) => JSON.stringify(`fuzz-${h.toString(16)}@example.com`)) },
    );
    case 'password': return fc.oneof(s(...ctx.users.map((u) => u.password)), s('wrong password 123', 'short'));
    case 'search': return s('fuzz', 'alpha', 'document', 'fuzz document', 'fuzzz', 'zzz-nothing-zzz');
    case 'page': case 'per_page': return fc.constantFrom('1', '2', '100', '0', '-1', '101', '"3"', '1.5', '1e9');
    case 'price': return fc.constantFrom('0', '1', '9.99', '-1', '"5"', '1e308');
    case 'for_sale': case 'enabled': return fc.constantFrom('true', 'false', '"true"', '1', '0');
    case 'title': case 'description': case 'tags': case 'comment': return s('fuzz document', 'alpha,beta', 'A fuzz comment');
    // A resumable upload's create body and complete's parts list.
    case 'file_name': return s('fuzz.pdf', 'big.bin', '', ' ', '../../etc/passwd', 'a\u0000b');
    case 'size': return fc.constantFrom('1', '100', '"100"', '8388608', '8388609', '0', '-1', '1.5', '"1e3"', '1073741824', '1073741825', '5368709120', '5368709121', '1e30', '9007199254740993', '"abc"', '[100]');
    case 'content_type': return s('application/pdf', 'text/plain', 'application/octet-stream', 'pdf', 'a/b/c', '/x', 'text/plain; charset=utf-8', '');
    case 'cc_license': return s('CC BY', 'CC0', 'cc by-sa', 'nope');
    case 'category_id': return idJson(ctx);
    case 'new_category_name': case 'category_description': case 'category_tags': return s('Fuzz 0', 'Fuzz new', 'fuzz,alpha', '');
    case 'video': return s('', 'https://example.com/v', 'nope', 'javascript:alert(1)');
    case 'parts': return fc.constantFrom('[]', '[{"part_number":1,"etag":"\\"0123456789abcdef0123456789abcdef\\""}]', '[{"part_number":1,"etag":"x"},{"part_number":1,"etag":"x"}]',
      '[{"part_number":0,"etag":"x"}]', '[{"part_number":10001,"etag":"x"}]', '[{"part_number":1e300,"etag":"x"}]', '[{"part_number":"1","etag":"x"}]', '[{"part_number":1}]',
      '"x"', '[1]', '[null]', '{"0":{"part_number":1,"etag":"x"}}', `[${'{"part_number":1,"etag":"x"},'.repeat(3000)}{"part_number":2,"etag":"x"}]`);
    // Webhooks (issue 23): registration, PATCH and replay bodies. The fuzz server allows http and
    // private networks (the setup's endpoints are on a closed loopback port): nothing is reached.
    case 'url': return s('http://127.0.0.1:9/fuzz', 'https://127.0.0.1:9/fuzz', 'http://169.254.169.254/latest/meta-data/', 'https://example.invalid/hook', 'ftp://127.0.0.1/',
      'http://user:pw@127.0.0.1:9/', 'http://[::1]:9/', 'javascript:alert(1)', '', `http://127.0.0.1:9/${'a'.repeat(2100)}`, 'http://127.0.0.1:9/%zz', 'http://\u0000/');
    case 'events': return fc.constantFrom('["file.uploaded"]', '["comment.received","file.deleted","sale.completed"]', '[]', '["nope"]', '["webhook.test"]', '"file.uploaded"',
      '[null]', '["file.uploaded","file.uploaded"]', `[${'"file.uploaded",'.repeat(2000)}"file.deleted"]`, '{"0":"file.uploaded"}');
    case 'since': case 'until': return s('2026-01-01T00:00:00Z', '2026-11-28T12:00:00.000Z', '1970-01-01T00:00:00Z', '9999-12-31T23:59:59Z', 'yesterday', '2026-02-30T00:00:00Z', '', '2026-11-28');
    case 'export_id': return s('00000000-0000-0000-0000-000000000000', '', 'x', '../../etc/passwd', 'a'.repeat(300));
    case 'message_ids': return fc.constantFrom('[]', `["msg_${'0'.repeat(32)}"]`, '["msg_x"]', '[1]', '"msg_"', `[${Array.from({ length: 101 }, (_, i) => `"msg_${i.toString(16).padStart(32, '0')}"`).join(',')}]`);
    default: return jsonText([field]);
  }
};

/** A JSON object for an endpoint: some of its fields (good or bad values), maybe extra keys. */
const jsonObject = (ctx: FuzzContext, fields: string[]): fc.Arbitrary<string> => {
  const entry = (f: string): fc.Arbitrary<[string, string]> =>
    fc.oneof({ weight: 3, arbitrary: goodValue(ctx, f) }, { weight: 2, arbitrary: jsonText(fields) }).map((v): [string, string] => [f, v]);
  const picked = fields.length === 0 ? fc.constant<Array<[string, string]>>([]) : fc.tuple(...fields.map((f) => fc.option(entry(f), { freq: 4 })))
    .map((xs) => xs.filter((x): x is [string, string] => x !== null));
  const extra = fc.array(fc.tuple(
    fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', '$where', 'status', 'user_id', 'owner_id', ...fields), fc.string({ maxLength: 8 })),
    jsonText(fields),
  ), { maxLength: 2 });
  return fc.tuple(picked, fc.option(extra, { freq: 3 })).map(([kv, ex]) =>
    `{${[...kv, ...(ex ?? [])].map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);
};

/** Mutations of a JSON text: truncation, deep nesting, duplicates, not-JSON-at-all. */
const mutatedJson = (base: fc.Arbitrary<string>): fc.Arbitrary<string> => fc.oneof(
  { weight: 6, arbitrary: base },
  { weight: 2, arbitrary: fc.tuple(base, fc.nat()).map(([t, n]) => t.slice(0, t.length === 0 ? 0 : n % t.length)) },
  { weight: 1, arbitrary: fc.constantFrom(10, 100, 1000, 5000, 20_000, 100_000, 400_000).map((d) => `${'['.repeat(d)}${']'.repeat(d)}`) },
  { weight: 1, arbitrary: fc.constantFrom(10, 1000, 50_000, 200_000).map((d) => `${'{"a":'.repeat(d)}1${'}'.repeat(d)}`) },
  { weight: 1, arbitrary: fc.constantFrom(1000, 500_000).map((d) => `${'['.repeat(d)}`) },
  { weight: 1, arbitrary: base.map((t) => `\ufeff${t}`) },
  { weight: 1, arbitrary: base.map((t) => `${t}${t}`) },
  { weight: 1, arbitrary: base.map((t) => t.replace(/"/g, "'")) },
  { weight: 1, arbitrary: base.map((t) => t.replace(/}$/, ',}')) },
  { weight: 1, arbitrary: jsonText() },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', ' ', 'null', '[]', '"x"', '0', 'true', 'NaN', 'undefined', '{', '}', '{"a":1}garbage', '{"search":"x" /* c */}',
      '{"search":"fuzz","search":{"$gt":""}}', '{"id":"1","id":{"$ne":null}}', '\u0000', '{"a":"\\ud800"}', '{"a":"\\u"}', '{"a":"\\x41"}', `{"a":"${'\\'.repeat(3)}"}`),
  },
  // Over the 1 MiB JSON limit (rare: bytes cost time).
  { weight: 1, arbitrary: fc.constantFrom(1024 * 1024 + 10, 1_200_000).chain((n) => fc.constantFrom(`{"search":"${'a'.repeat(n)}"}`, `[${'1,'.repeat(n / 2)}1]`)) },
);

// ---------------------------------------------------------------------------------------------
// Requests

interface Req {
  method: string;
  target: string;
  version?: string;
  headers: Array<[string, string]>;
  body?: Buffer;
  /** `cl`: Content-Length; `chunked`: chunks of these sizes; `none`: no framing header (caller's own). */
  framing?: { kind: 'cl' } | { kind: 'chunked'; sizes: number[] } | { kind: 'none' };
}

/** The bytes of one request. */
export const serialize = (ctx: FuzzContext, r: Req): Buffer => {
  const body = r.body ?? Buffer.alloc(0);
  const framing = r.framing ?? { kind: 'cl' };
  const lines = [`${r.method} ${r.target} ${r.version ?? 'HTTP/1.1'}`];
  const names = new Set(r.headers.map(([k]) => k.toLowerCase()));
  if (!names.has('host')) lines.push(`Host: ${ctx.host}:${ctx.port}`);
  for (const [k, v] of r.headers) lines.push(`${k}: ${v}`);
  if (!names.has('connection')) lines.push('Connection: close');
  let payload = body;
  if (framing.kind === 'cl' && (body.length > 0 || ['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method.toUpperCase())) && !names.has('content-length')) {
    lines.push(`Content-Length: ${body.length}`);
  } else if (framing.kind === 'chunked') {
    if (!names.has('transfer-encoding')) lines.push('Transfer-Encoding: chunked');
    const parts: Buffer[] = [];
    let pos = 0;
    let i = 0;
    while (pos < body.length) {
      const n = Math.max(1, framing.sizes[i % Math.max(1, framing.sizes.length)] ?? body.length);
      const piece = body.subarray(pos, pos + n);
      parts.push(b(`${piece.length.toString(16)}${CRLF}`), piece, b(CRLF));
      pos += piece.length;
      i += 1;
    }
    parts.push(b(`0${CRLF}${CRLF}`));
    payload = Buffer.concat(parts);
  }
  return Buffer.concat([b(lines.join(CRLF) + CRLF + CRLF), payload]);
};

type Send = { kind: 'complete'; pieces: number; gapMs: number } | { kind: 'abort'; fraction: number; closeAfterMs: number };

const sendArb: fc.Arbitrary<Send> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Send>({ kind: 'complete', pieces: 1, gapMs: 0 }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('complete' as const), pieces: fc.integer({ min: 2, max: 6 }), gapMs: fc.integer({ min: 1, max: 30 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('abort' as const), fraction: fc.double({ min: 0.05, max: 0.95, noNaN: true }), closeAfterMs: fc.integer({ min: 0, max: 60 }) }) },
);

/** Splits bytes into `n` pieces (cut points spread evenly, so the split is reproducible). */
const splitBytes = (bytes: Buffer, n: number): Buffer[] => {
  if (n <= 1 || bytes.length < n) return [bytes];
  const out: Buffer[] = [];
  const step = Math.ceil(bytes.length / n);
  for (let i = 0; i < bytes.length; i += step) out.push(bytes.subarray(i, i + step));
  return out;
};

const toWire = (bytes: Buffer, send: Send, methods: string[]): Wire => {
  if (send.kind === 'abort') {
    const cut = Math.max(1, Math.floor(bytes.length * send.fraction));
    return { chunks: [bytes.subarray(0, Math.min(cut, bytes.length - 1))], gapMs: 0, mode: 'abort', closeAfterMs: send.closeAfterMs, methods };
  }
  return { chunks: splitBytes(bytes, send.pieces), gapMs: send.gapMs, mode: 'complete', closeAfterMs: 0, methods };
};

const mkCase = (ctx: FuzzContext, gen: string, r: Req, send: Send = { kind: 'complete', pieces: 1, gapMs: 0 }): Case => ({
  gen,
  label: `${r.method} ${r.target.length > 120 ? `${r.target.slice(0, 120)}…(${r.target.length})` : r.target}`,
  path: r.target.split('?')[0] ?? r.target,
  wire: toWire(serialize(ctx, r), send, [r.method]),
});

const jsonCt = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom('application/json; charset=utf-8', 'application/json; charset=UTF-16', 'application/json; charset=latin1',
      'application/json; charset=koi8-r', 'application/json; charset=bogus', 'application/json; charset="utf-8"', 'APPLICATION/JSON',
      'application/json;;', 'application/json; boundary=x', 'text/plain', 'text/json', 'application/vnd.api+json', 'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x', 'application/*', '*/*', '', 'json', 'application/json\u0000', 'application/json, text/plain'),
  },
  { weight: 1, arbitrary: fc.constant('(none)') },
);

const withCt = (ct: string, headers: Array<[string, string]>): Array<[string, string]> => (ct === '(none)' ? headers : [...headers, ['Content-Type', ct]]);

const framingArb = fc.oneof(
  { weight: 10, arbitrary: fc.constant<Req['framing']>({ kind: 'cl' }) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 4 }).map((sizes): Req['framing'] => ({ kind: 'chunked', sizes })) },
);

/** Route generator: a documented endpoint with its method, a real token mostly, and a body of its shape. */
const routeCase = (ctx: FuzzContext): fc.Arbitrary<Case> => {
  // register and login hash passwords (slow on purpose): keep them a small share.
  const endpoint = fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom(...ENDPOINTS.filter((e) => e.name === 'register' || e.name === 'login')) },
    { weight: 14, arbitrary: fc.constantFrom(...ENDPOINTS.filter((e) => e.name !== 'register' && e.name !== 'login' && e.name !== 'upload')) },
  );
  return endpoint.chain((ep) => {
    if (ep.kind === 'query') {
      // Sometimes with a JSON body, which a GET may carry and must not change the answer's shape.
      return fc.tuple(authHeaders(ctx), queryString(ctx, ep.fields), sendArb, fc.option(jsonObject(ctx, ep.fields), { freq: 8 })).map(([auth, q, send, body]) =>
        mkCase(ctx, 'route', { method: ep.method, target: `${ep.path}${q}`, headers: body === null ? auth : withCt('application/json', auth), body: body === null ? undefined : b(body) }, send));
    }
    const body = ep.kind === 'none'
      ? fc.oneof({ weight: 3, arbitrary: fc.constant('') }, { weight: 1, arbitrary: jsonObject(ctx, ep.fields) }, { weight: 1, arbitrary: mutatedJson(jsonObject(ctx, ep.fields)) })
      : fc.oneof({ weight: 4, arbitrary: jsonObject(ctx, ep.fields) }, { weight: 1, arbitrary: mutatedJson(jsonObject(ctx, ep.fields)) });
    return fc.tuple(authHeaders(ctx), body, jsonCt, framingArb, sendArb).map(([auth, text, ct, framing, send]) =>
      mkCase(ctx, 'route', { method: ep.method, target: ep.path, headers: text === '' ? auth : withCt(ct, auth), body: b(text), framing }, send));
  });
};

/** JSON-body generator: the bodies bent out of shape, on every JSON endpoint. */
const jsonCase = (ctx: FuzzContext): fc.Arbitrary<Case> =>
  fc.constantFrom(...ENDPOINTS.filter((e) => e.kind === 'json' || e.kind === 'none').filter((e) => e.name !== 'register' && e.name !== 'login'))
    .chain((ep) => fc.tuple(authHeaders(ctx), mutatedJson(jsonObject(ctx, ep.fields)), jsonCt, framingArb).map(([auth, text, ct, framing]) =>
      mkCase(ctx, 'json', { method: ep.method, target: ep.path, headers: withCt(ct, auth), body: b(text), framing })));

/** A query string for the given parameters: arrays, brackets, operators, huge numbers, unicode, broken escapes. */
const queryString = (ctx: FuzzContext, fields: string[]): fc.Arbitrary<string> => {
  const value = fc.oneof(
    { weight: 5, arbitrary: idInUrl(ctx) },
    { weight: 1, arbitrary: fc.constantFrom('1', '20', '100', '0', '-1', '101', '1.5', '1e3', '99999999999999999999', 'abc', '') },
    // The statistics' dates, metrics and bounds (api-daily, api-top, api-trending).
    { weight: 1, arbitrary: fc.constantFrom('2026-11-28', '2025-11-28', '2024-02-29', '2026-02-30', '1970-01-01', '9999-12-31', '2026-1-1', 'views', 'unique_viewers', 'sales', '366', '367', '168', '90', '50', 'failed', 'succeeded', 'pending') },
    { weight: 2, arbitrary: nastyString().map(encodeURIComponentLoose) },
  );
  const param = (f: string): fc.Arbitrary<string> => fc.oneof(
    { weight: 6, arbitrary: value.map((v) => `${f}=${v}`) },
    { weight: 1, arbitrary: fc.tuple(value, value).map(([v, w]) => `${f}=${v}&${f}=${w}`) },
    { weight: 1, arbitrary: fc.tuple(value, fc.constantFrom('[$gt]', '[]', '[0]', '[a][b][c]', '[__proto__]')).map(([v, br]) => `${f}${br}=${v}`) },
    { weight: 1, arbitrary: fc.constantFrom(f, `${f}=`, `${f}==1`, `${encodeURIComponentLoose(f.toUpperCase())}=1`, `${f}%00=1`, `%zz=1`, `${f}=1;${f}=2`) },
  );
  const params = fields.length === 0 ? fc.constant<string[]>([]) : fc.tuple(...fields.map((f) => fc.option(param(f), { freq: 4 }))).map((xs) => xs.filter((x): x is string => x !== null));
  return fc.tuple(params, fc.option(fc.constantFrom('junk=1', '__proto__[x]=1', 'constructor[prototype][x]=1', 'a=' + 'b'.repeat(8000), Array.from({ length: 1200 }, (_, i) => `p${i}=1`).join('&'), '&&&', '=', '#frag'), { freq: 6 }))
    .map(([ps, extra]) => {
      const all = extra === null ? ps : [...ps, extra];
      return all.length === 0 ? '' : `?${all.join('&')}`;
    });
};

const queryCase = (ctx: FuzzContext): fc.Arbitrary<Case> =>
  fc.constantFrom(
    ...ENDPOINTS.filter((e) => e.kind === 'query'),
    { name: 'view', method: 'GET', path: '/docs/1', kind: 'query', fields: ['x'] },
  ).chain((ep) => fc.tuple(authHeaders(ctx), queryString(ctx, ep.fields.length > 0 ? ep.fields : ['file_id', 'user_id']), fc.constantFrom('GET', 'GET', 'HEAD', 'POST')).map(([auth, q, method]) =>
    mkCase(ctx, 'query', { method, target: `${ep.path}${q}`, headers: auth })));

/** Variations of a path: case, trailing slashes, dot segments, broken escapes, overlong. */
const pathVariant = (ctx: FuzzContext): fc.Arbitrary<string> => {
  const base = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ENDPOINTS.map((e) => e.path)) },
    { weight: 2, arbitrary: idInUrl(ctx).map((id) => `/docs/${id}`) },
    { weight: 2, arbitrary: fc.tuple(idInUrl(ctx), fc.option(fc.constantFrom(...ctx.signedPaths.map((p) => p.split('?')[1] ?? '')))).map(([id, q]) => `/files/${id}/content${q === null ? '' : `?${q}`}`) },
    { weight: 2, arbitrary: fc.constantFrom(...OTHER_PATHS) },
  );
  const variant = (p: string): fc.Arbitrary<string> => fc.oneof(
    { weight: 3, arbitrary: fc.constant(p) },
    { weight: 1, arbitrary: fc.constantFrom(`${p}/`, `${p}//`, `${p}/.`, `${p}/..`, `${p}/./`, `${p}%2F`, `${p}%2f..%2f`, `${p};`, `${p};jsessionid=1`, `${p}?`, `${p}??`, `${p}#x`) },
    { weight: 1, arbitrary: fc.constant(p.replace('/V1/', '/v1/')).map((x) => x.toUpperCase() === x ? x.toLowerCase() : x) },
    { weight: 1, arbitrary: fc.array(fc.boolean(), { minLength: p.length, maxLength: p.length }).map((flips) => [...p].map((ch, i) => (flips[i] ? ch.toUpperCase() : ch)).join('')) },
    { weight: 1, arbitrary: fc.constantFrom(`/api/V1/./${p.slice(8)}`, `/api/V1/x/../${p.slice(8)}`, `/../../${p}`, `/%2e%2e/${p}`, `//${p}`, p.replaceAll('/', '//'), `/api/V1/..%2f${p.slice(8)}`, p.replace('api', '%61pi'), p.replace('/', '%2F')) },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.nat(p.length), fc.constantFrom('%zz', '%', '%E0%A4%A', '%C0%AF', '%00', '%ff', '%u0041', '%%', '%2', '%0a', '%0d%0a', '%ED%A0%80', '%F4%90%80%80', '%c3%28'))
        .map(([i, esc]) => p.slice(0, i) + esc + p.slice(i)),
    },
    { weight: 1, arbitrary: fc.constantFrom(...SIZES_NEAR_LIMIT, 70_000).map((n) => `${p}/${'a'.repeat(n)}`) },
    { weight: 1, arbitrary: fc.constantFrom(500, 5000).map((n) => `${p}?q=${'%41'.repeat(n)}`) },
    { weight: 1, arbitrary: fc.constant(`${p}/${'../'.repeat(40)}etc/passwd`) },
    { weight: 1, arbitrary: fc.constant(encodeURIComponentLoose(`${p}/ünïcødé/😀`)) },
  );
  return base.chain(variant);
};

const pathCase = (ctx: FuzzContext): fc.Arbitrary<Case> =>
  fc.tuple(pathVariant(ctx), fc.constantFrom('GET', 'GET', 'POST', 'DELETE', 'HEAD'), authHeaders(ctx)).map(([path, method, auth]) =>
    mkCase(ctx, 'path', { method, target: path, headers: method === 'POST' ? withCt('application/json', auth) : auth, body: method === 'POST' ? b('{}') : undefined }));

/** Methods Node's parser accepts (odd ones included), on every kind of path. */
const methodCase = (ctx: FuzzContext): fc.Arbitrary<Case> =>
  fc.tuple(
    fc.constantFrom('PATCH', 'PUT', 'OPTIONS', 'TRACE', 'HEAD', 'DELETE', 'POST', 'GET', 'PROPFIND', 'MKCOL', 'LOCK', 'UNLOCK', 'COPY', 'MOVE', 'SEARCH', 'PURGE', 'REPORT', 'MERGE', 'NOTIFY', 'SUBSCRIBE', 'LINK', 'UNLINK', 'QUERY', 'M-SEARCH', 'ACL', 'BIND', 'SOURCE'),
    fc.oneof(fc.constantFrom(...ENDPOINTS.map((e) => e.path), ...OTHER_PATHS, '/docs/1', '/files/1/content', '*'), pathVariant(ctx)),
    authHeaders(ctx),
    fc.option(fc.constantFrom('{}', '{"id":"1"}', 'x'), { freq: 2 }),
  ).map(([method, path, auth, body]) =>
    mkCase(ctx, 'method', { method, target: path, headers: body === null ? auth : withCt('application/json', auth), body: body === null ? undefined : b(body) }));

/** Header generator: huge values near the 16 KiB limit, many headers, duplicates, odd values. */
const headerCase = (ctx: FuzzContext): fc.Arbitrary<Case> => {
  const extra = fc.oneof(
    fc.constantFrom(...SIZES_NEAR_LIMIT).chain((n) => fc.constantFrom<Array<[string, string]>>([['X-Big', 'a'.repeat(n)]], [['Cookie', `c=${'b'.repeat(n)}`]], [['X-Request-Id', 'r'.repeat(n)]], [['X-Authorization', `Bearer ${'t'.repeat(n)}`]])),
    fc.constantFrom(10, 100, 500, 1999, 2001, 3000).map((n) => Array.from({ length: n }, (_, i): [string, string] => [`X-H${i}`, 'v'])),
    fc.constantFrom<Array<[string, string]>>(
      [['X-Request-Id', '']], [['X-Request-Id', 'x'.repeat(129)]], [['X-Request-Id', 'ünicode']], [['X-Request-Id', 'a b\tc']], [['X-Request-Id', '../../x']],
      [['X-Request-Id', 'one'], ['X-Request-Id', 'two']], [['Accept', 'text/html']], [['Accept', '*/*;q=0']], [['Accept-Encoding', 'br;q=1000, gzip;q=-1']],
      [['Range', 'bytes=0-0']], [['If-None-Match', '*']], [['Expect', '100-continue']], [['Expect', 'nothing']], [['X-Forwarded-For', '1.2.3.4, ::1, garbage']],
      [['Forwarded', 'for=unknown;proto=gopher']], [['X-HTTP-Method-Override', 'DELETE']], [['X-Original-URL', '/api/V1/docs/api-delete']],
      [['Host', '']], [['Host', 'evil.example']], [['Host', 'a'], ['Host', 'b']], [['Connection', 'keep-alive, Upgrade'], ['Upgrade', 'websocket']],
      [['Connection', 'Upgrade'], ['Upgrade', 'h2c'], ['HTTP2-Settings', 'AAMAAABkAARAAAAAAAIAAAAA']], [['X-Identity', '1']], [['X-User-Id', String(ctx.sentinelUserId)]],
      [['X-Docshare-User', String(ctx.sentinelUserId)]], [['Content-Length', '0'], ['Content-Length', '0']], [['Content-Type', 'application/json'], ['Content-Type', 'text/plain']],
      [['X-Weird', '\u00ff\u00fe latin1 bytes']], [['X-Ctl', 'a\u0001b']], [['X-Correlation-Id', 'x'.repeat(5000)]],
    ),
  );
  return fc.tuple(fc.constantFrom(...ENDPOINTS.filter((e) => e.kind !== 'multipart')), authHeaders(ctx), extra).map(([ep, auth, ex]) => {
    const body = ep.method === 'GET' ? undefined : b(ep.name === 'search' ? '{"search":"fuzz"}' : '{}');
    const headers = [...auth, ...(body === undefined ? [] : [['Content-Type', 'application/json'] as [string, string]]), ...ex];
    // A Content-Length among the extras replaces ours (the body is then the right size only by luck).
    return mkCase(ctx, 'headers', { method: ep.method, target: ep.path, headers, body: body === undefined ? undefined : (ex.some(([k]) => k === 'Content-Length') ? Buffer.alloc(0) : body) });
  });
};

/** Encoding generator: Content-Encoding that does or does not match the body, unknown codings, bombs. */
const encodingCase = (ctx: FuzzContext): fc.Arbitrary<Case> => {
  const encode = (coding: string, text: string): Buffer => {
    switch (coding) {
      case 'gzip': return gzipSync(text);
      case 'deflate': return deflateSync(text);
      case 'br': return brotliCompressSync(text);
      case 'gzip-bomb': return gzipSync(Buffer.alloc(20 * 1024 * 1024, 0x20));
      case 'gzip-twice': return gzipSync(gzipSync(text));
      case 'gzip-truncated': { const z = gzipSync(text); return z.subarray(0, Math.floor(z.length / 2)); }
      default: return b(text);
    }
  };
  return fc.tuple(
    fc.constantFrom(...ENDPOINTS.filter((e) => e.kind === 'json' && e.name !== 'register' && e.name !== 'login'), ...ENDPOINTS.filter((e) => e.name === 'stats' || e.name === 'comments')),
    authHeaders(ctx),
    fc.constantFrom(
      ['gzip', 'plain'], ['deflate', 'plain'], ['br', 'plain'], ['gzip', 'gzip'], ['deflate', 'deflate'], ['br', 'br'], ['gzip', 'deflate'], ['br', 'gzip'],
      ['identity', 'plain'], ['x-unknown', 'plain'], ['compress', 'plain'], ['zstd', 'plain'], ['gzip, gzip', 'gzip-twice'], ['gzip, br', 'gzip'], ['GZIP', 'gzip'],
      ['gzip', 'gzip-truncated'], ['gzip', 'gzip-bomb'], ['', 'plain'], ['gzip;q=1', 'gzip'], ['aes128gcm', 'plain'],
    ),
    jsonCt,
  ).map(([ep, auth, [coding, actual], ct]) => {
    const text = ep.name === 'search' ? '{"search":"fuzz"}' : ep.name === 'comment' ? `{"file_id":${ctx.fileIds[0] ?? 1},"comment":"encoded"}` : '{"id":"1","file_id":"1"}';
    return mkCase(ctx, 'encoding', { method: ep.method, target: ep.path, headers: [...withCt(ct, auth), ['Content-Encoding', coding]], body: encode(actual, text) });
  });
};

// ---------------------------------------------------------------------------------------------
// Multipart

interface Part {
  headers: string[];
  body: Buffer;
}

const field = (name: string, value: string): Part => ({ headers: [`Content-Disposition: form-data; name="${name}"`], body: b(value) });
const filePart = (name: string, filename: string, bytes: Buffer, type = 'application/octet-stream'): Part =>
  ({ headers: [`Content-Disposition: form-data; name="${name}"; filename="${filename}"`, `Content-Type: ${type}`], body: bytes });

const multipartCase = (ctx: FuzzContext): fc.Arbitrary<Case> => {
  const max = ctx.maxUploadBytes;
  const fileBytes = fc.oneof(
    { weight: 6, arbitrary: fc.uint8Array({ maxLength: 200 }).map((u) => Buffer.from(u)) },
    { weight: 1, arbitrary: fc.constantFrom(0, max - 1, max, max + 1, max * 2, max + 2 * 1024 * 1024).map((n) => Buffer.alloc(Math.max(0, n), 0x61)) },
    { weight: 1, arbitrary: fc.constant(b('--B\r\n--x\r\n\r\n')) },
  );
  const good = fc.tuple(
    fc.constantFrom(...ctx.categoryIds.map(String), '999999', 'abc', '', '-1', '1.5', '{"$gt":""}'),
    fc.constantFrom('CC BY', 'cc  by-nc-nd', 'CC0', 'GPL', '', 'CC BY '.repeat(50)),
  ).map(([cat, lic]) => [
    field('title', 'fuzz document'), field('description', 'fuzz description'), field('tags', 'fuzz,alpha'), field('cc_license', lic),
    ...(cat === '' ? [field('new_category_name', 'Fuzz')] : [field('category_id', cat)]),
  ]);
  const oddPart = fc.oneof(
    fc.tuple(fc.constantFrom('title', 'description', 'tags', 'cc_license', 'video', 'category_id', 'new_category_name', 'category_tags', '__proto__', 'constructor', '', 'title[]'), nastyString())
      .map(([name, v]) => field(name, v)),
    fc.constantFrom(300_000, 1024 * 1024 + 1).map((n) => field('description', 'd'.repeat(n))),
    fileBytes.map((bytes) => filePart('junk', 'a.txt', bytes)),
    fileBytes.map((bytes) => filePart('file', 'second.bin', bytes)),
    fileBytes.map((bytes) => filePart('title', 'title-as-file.txt', bytes)),
    fc.constantFrom<Part>(
      { headers: [], body: b('no disposition') },
      { headers: ['Content-Disposition: form-data'], body: b('no name') },
      { headers: ['Content-Disposition: form-data; name=title'], body: b('unquoted') },
      { headers: ["Content-Disposition: form-data; name*=UTF-8''t%C3%AFtle"], body: b('ext name') },
      { headers: ['Content-Disposition: form-data; name="file"; filename=""'], body: b('empty file name') },
      { headers: ['Content-Disposition: form-data; name="file"; filename="../../../../etc/passwd"'], body: b('path') },
      { headers: ['Content-Disposition: form-data; name="file"; filename="a\u0000b.txt"'], body: b('nul') },
      { headers: ["Content-Disposition: form-data; name=\"file\"; filename*=UTF-8''%F0%9F%98%80%zz"], body: b('bad ext') },
      { headers: ['Content-Disposition: attachment; name="file"; filename="x"'], body: b('attachment') },
      { headers: ['Content-Disposition: form-data; name="file"; filename="x"', 'Content-Transfer-Encoding: base64'], body: b('!!!notbase64') },
      { headers: ['Content-Disposition: form-data; name="file"; filename="x"', 'Content-Type: '], body: b('empty type') },
      { headers: [`Content-Disposition: form-data; name="title"; ${'x'.repeat(20_000)}="1"`], body: b('huge part header') },
      { headers: Array.from({ length: 3000 }, (_, i) => `X-P${i}: v`), body: b('many part headers') },
    ),
  );
  const parts = fc.tuple(good, fc.option(fileBytes.map((bytes) => filePart('file', 'doc.txt', bytes, 'text/plain')), { freq: 6 }), fc.array(oddPart, { maxLength: 3 }), fc.nat())
    .map(([g, file, odd, pos]) => {
      const all = [...g, ...(file === null ? [] : [file])];
      for (const p of odd) all.splice(pos % (all.length + 1), 0, p);
      return all;
    });
  const manyParts = fc.constantFrom(61, 200).map((n) => Array.from({ length: n }, (_, i) => field(`f${i}`, 'v')));
  const boundaryArb = fc.constantFrom('X', 'fuzzboundary', '----WebKitFormBoundary7MA4YWxkTrZu0gW', 'a'.repeat(70), 'b'.repeat(200), 'has space', 'qu"ote', '--', 'ü');
  const ctArb = (bd: string): fc.Arbitrary<string> => fc.oneof(
    { weight: 8, arbitrary: fc.constant(`multipart/form-data; boundary=${bd}`) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(`multipart/form-data; boundary="${bd}"`, 'multipart/form-data', 'multipart/form-data; boundary=', 'multipart/form-data; boundary=other',
        `multipart/form-data; boundary=${bd}; boundary=other`, `multipart/mixed; boundary=${bd}`, `MULTIPART/FORM-DATA; BOUNDARY=${bd}`, `multipart/form-data; charset=utf-7; boundary=${bd}`,
        'application/json', 'text/plain', '(none)'),
    },
  );
  const ending = fc.constantFrom('close', 'close', 'close', 'close', 'no-close', 'no-crlf', 'truncate', 'epilogue', 'preamble');
  return fc.tuple(fc.oneof({ weight: 12, arbitrary: parts }, { weight: 1, arbitrary: manyParts }), boundaryArb, ending, fc.nat(), authHeaders(ctx), framingArb, sendArb)
    .chain(([ps, bd, end, cut, auth, framing, send]) => ctArb(bd).map((ct) => {
      const pieces: Buffer[] = [];
      if (end === 'preamble') pieces.push(b('this is a preamble\r\n'));
      for (const p of ps) pieces.push(b(`--${bd}\r\n${p.headers.map((h) => `${h}\r\n`).join('')}\r\n`), p.body, b('\r\n'));
      if (end === 'close' || end === 'epilogue' || end === 'truncate') pieces.push(b(`--${bd}--\r\n`));
      if (end === 'no-crlf') pieces.push(b(`--${bd}--`));
      if (end === 'epilogue') pieces.push(b('trailing epilogue garbage'));
      let body = Buffer.concat(pieces);
      if (end === 'truncate' && body.length > 1) body = body.subarray(0, cut % body.length);
      return mkCase(ctx, 'multipart', { method: 'POST', target: '/api/V1/docs/api-upload', headers: withCt(ct, auth), body, framing }, send);
    }));
};

// ---------------------------------------------------------------------------------------------
// Raw sockets

const rawCase = (ctx: FuzzContext): fc.Arbitrary<Case> => {
  const host = `Host: ${ctx.host}:${ctx.port}`;
  const token = ctx.users[0]?.token ?? '';
  const auth = `X-Authorization: Bearer ${token}`;
  const ok = (m: string, p: string, extra = ''): string => `${m} ${p} HTTP/1.1\r\n${host}\r\n${auth}\r\n${extra}`;
  type Raw = { gen: string; chunks: Buffer[]; complete: boolean; methods: string[]; gapMs?: number; closeAfterMs?: number };
  const single = (text: string | Buffer, methods = ['GET']): Raw => ({ gen: 'raw', chunks: [b(text)], complete: true, methods });
  const garbageLine = fc.oneof(
    fc.uint8Array({ minLength: 1, maxLength: 200 }).map((u) => Buffer.concat([Buffer.from(u), b('\r\n\r\n')])),
    fc.string({ maxLength: 80 }).map((s) => b(`${s}\r\n\r\n`)),
  );
  const raws: fc.Arbitrary<Raw> = fc.oneof(
    { weight: 3, arbitrary: garbageLine.map((g) => single(g)) },
    // Any token as a method (lowercase, unknown, punctuation), on a known path.
    {
      weight: 2,
      arbitrary: fc.tuple(fc.stringMatching(/^[A-Za-z!#$%&'*+.^_`|~-]{1,12}$/), fc.constantFrom(...ENDPOINTS.map((e) => e.path), '/healthz', '/docs/1'))
        .map(([m, p]) => single(`${m} ${p} HTTP/1.1\r\n${host}\r\n${auth}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`, [m])),
    },
    {
      weight: 6,
      arbitrary: fc.constantFrom(
        'GET /\r\n\r\n', 'GET /healthz\r\n', 'GET\r\n\r\n', '\r\n\r\n', `\r\n${ok('GET', '/healthz')}Connection: close\r\n\r\n`,
        `GET /healthz HTTP/1.0\r\n\r\n`, `GET /healthz HTTP/2.0\r\n${host}\r\n\r\n`, `GET /healthz HTTP/1.2\r\n${host}\r\nConnection: close\r\n\r\n`,
        `GET /healthz HTTP/9.9\r\n${host}\r\n\r\n`, `GET /healthz http/1.1\r\n${host}\r\n\r\n`, `GET /healthz HTTP/1.1 \r\n${host}\r\n\r\n`,
        `GET  /healthz  HTTP/1.1\r\n${host}\r\n\r\n`, `get /healthz HTTP/1.1\r\n${host}\r\n\r\n`, `Get /api/V1/docs/api-categories HTTP/1.1\r\n${host}\r\n${auth}\r\n\r\n`,
        `FOO /healthz HTTP/1.1\r\n${host}\r\n\r\n`, `G\u00c9T / HTTP/1.1\r\n${host}\r\n\r\n`, `GET\t/healthz\tHTTP/1.1\r\n${host}\r\n\r\n`,
        `CONNECT ${ctx.host}:${ctx.port} HTTP/1.1\r\n${host}\r\n\r\n`, `CONNECT /api/V1/docs/api-download HTTP/1.1\r\n${host}\r\n\r\n`,
        `OPTIONS * HTTP/1.1\r\n${host}\r\nConnection: close\r\n\r\n`, `GET * HTTP/1.1\r\n${host}\r\nConnection: close\r\n\r\n`,
        `GET http://evil.example/api/V1/docs/api-categories HTTP/1.1\r\n${host}\r\n${auth}\r\nConnection: close\r\n\r\n`,
        `GET healthz HTTP/1.1\r\n${host}\r\nConnection: close\r\n\r\n`, `GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n`,
        `GET /healthz HTTP/1.1\n${host}\nConnection: close\n\n`, `GET /healthz HTTP/1.1\r\n${host}\r\nX-Folded: a\r\n  b\r\nConnection: close\r\n\r\n`,
        `GET /healthz HTTP/1.1\r\n${host}\r\nNoColonHere\r\nConnection: close\r\n\r\n`, `GET /healthz HTTP/1.1\r\n${host}\r\nBad Name: x\r\nConnection: close\r\n\r\n`,
        `GET /healthz HTTP/1.1\r\n${host}\r\nX-Nul: a\u0000b\r\nConnection: close\r\n\r\n`, `GET /healthz HTTP/1.1\r\n${host}\r\n: empty-name\r\nConnection: close\r\n\r\n`,
        `GET /heal\u0000thz HTTP/1.1\r\n${host}\r\nConnection: close\r\n\r\n`, `GET /h\u00e9 HTTP/1.1\r\n${host}\r\nConnection: close\r\n\r\n`,
        `GET /docs/1 HTTP/1.1\r\n${host}\r\n${host}\r\nConnection: close\r\n\r\n`,
        `POST /api/V1/stats/api-search HTTP/1.1\r\n${host}\r\n${auth}\r\nContent-Type: application/json\r\nContent-Length: 17\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n11\r\n{"search":"fuzz"}\r\n0\r\n\r\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nContent-Length: 17\r\nContent-Length: 18\r\nConnection: close\r\n\r\n{"search":"fuzz"} `,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nContent-Length: -1\r\nConnection: close\r\n\r\n{"search":"fuzz"}`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nContent-Length: 1 7\r\nConnection: close\r\n\r\n{"search":"fuzz"}`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nContent-Length: +17\r\nConnection: close\r\n\r\n{"search":"fuzz"}`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nContent-Length: 99999999999999999999999\r\nConnection: close\r\n\r\n{"search":"fuzz"}`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nContent-Length: 0x11\r\nConnection: close\r\n\r\n{"search":"fuzz"}`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{"search":"fuzz"}\r\n0\r\n\r\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nffffffffffffffffffff\r\n{"search":"fuzz"}\r\n0\r\n\r\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n11;ext="\u0001"\r\n{"search":"fuzz"}\r\n0\r\n\r\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n11\r\n{"search":"fuzz"}0\r\n\r\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n11\n{"search":"fuzz"}\n0\n\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n11\r\n{"search":"fuzz"}\r\n0\r\n\r\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked, identity\r\nConnection: close\r\n\r\n11\r\n{"search":"fuzz"}\r\n0\r\n\r\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: xchunked\r\nConnection: close\r\n\r\n11\r\n{"search":"fuzz"}\r\n0\r\n\r\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n11\r\n{"search":"fuzz"}\r\n0\r\nX-Trailer: ${'t'.repeat(20_000)}\r\n\r\n`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n11\r\n{"search":"fuzz"}\r\n0\r\n\r\n`,
        // Content-Length shorter than the body: the rest reads as a second request.
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nContent-Length: 5\r\nConnection: close\r\n\r\n{"search":"fuzz"}`,
      ).map((t) => single(t, [/^\s*(\S+)/.exec(t)?.[1] ?? 'GET'])),
    },
    // Pipelined: two to four requests in one write, the last one closing.
    {
      weight: 3,
      arbitrary: fc.array(fc.constantFrom(
        ['GET', ok('GET', '/api/V1/docs/api-categories', '\r\n')],
        ['GET', `GET /healthz HTTP/1.1\r\n${host}\r\n\r\n`],
        ['POST', `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nContent-Length: 17\r\n\r\n{"search":"fuzz"}`],
        ['POST', `${ok('POST', '/api/V1/stats/api-stats')}Content-Length: 0\r\n\r\n`],
        ['GET', ok('GET', '/nope', '\r\n')],
        ['HEAD', ok('HEAD', '/api/V1/openapi.json', '\r\n')],
        ['DELETE', `${ok('DELETE', '/api/V1/docs/api-delete')}Content-Type: application/json\r\nContent-Length: 9\r\n\r\n{"id":-1}`],
        ['GET', ok('GET', '/docs/%zz', '\r\n')],
        ['POST', `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n{"search":"fuzz"}\r\n0\r\n\r\n`],
      ), { minLength: 2, maxLength: 4 }).map((reqs) => {
        const texts = reqs.map(([, t]) => t);
        const lastIndex = texts.length - 1;
        texts[lastIndex] = (texts[lastIndex] ?? '').replace(`${host}\r\n`, `${host}\r\nConnection: close\r\n`);
        return { gen: 'pipeline', chunks: [b(texts.join(''))], complete: true, methods: reqs.map(([m]) => m) };
      }),
    },
    // Slow partial then close: the head trickles in, then the client goes away.
    {
      weight: 2,
      arbitrary: fc.tuple(fc.integer({ min: 2, max: 6 }), fc.integer({ min: 5, max: 60 }), fc.constantFrom(
        `${ok('GET', '/api/V1/docs/api-categories')}X-Slow: 1\r\n`,
        `${ok('POST', '/api/V1/docs/api-upload')}Content-Type: multipart/form-data; boundary=X\r\nContent-Length: 1000\r\n\r\n--X\r\nContent-Disposition: form-data; name="junk"; filename="a.txt"\r\n\r\nAAAA`,
        `${ok('POST', '/api/V1/docs/api-upload')}Content-Type: multipart/form-data; boundary=X\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n--X\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nAAAA`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"search":`,
        `${ok('POST', '/api/V1/stats/api-search')}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n{"sea`,
      )).map(([n, gap, text]): Raw => ({ gen: 'slow-abort', chunks: splitBytes(b(text), n), complete: false, methods: ['GET'], gapMs: gap, closeAfterMs: gap })),
    },
  );
  return raws.map((r) => {
    const first = r.chunks.map((c) => c.toString('latin1')).join('');
    const line = first.replace(/^[\r\n]+/, '').split(/\r?\n/)[0] ?? '';
    const parts = line.split(/\s+/);
    // Empty lines before a request line are skipped (RFC 9112 §2.2), and a head without its blank
    // line is not finished: the server may wait for the rest (its header timeout ends the wait).
    const headDone = /\n\r?\n/.test(first.replace(/^[\r\n]+/, '')) || /^[A-Z]+ \/\S*\r?\n\r?\n/.test(first);
    const complete = r.complete && headDone;
    const wire: Wire = { chunks: r.chunks, gapMs: r.gapMs ?? 0, mode: complete ? 'complete' : 'abort', closeAfterMs: r.closeAfterMs ?? (complete ? 0 : 100), methods: r.methods };
    return { gen: r.gen, label: line.slice(0, 120), path: parts[1] ?? '', wire };
  });
};

/** Signed content links: real ones with Range headers, tampered ones, expired ones. */
const contentCase = (ctx: FuzzContext): fc.Arbitrary<Case> => {
  const tamper = (p: string): fc.Arbitrary<string> => fc.constantFrom(
    p, p, p.replace(/signature=[0-9a-f]/, 'signature=0'), p.replace(/expires=\d+/, 'expires=1'), p.replace(/expires=\d+/, 'expires=99999999999999999999'),
    p.replace(/expires=\d+/, 'expires=-1'), p.replace(/signature=[0-9a-f]+/, 'signature='), p.replace(/signature=[0-9a-f]+/, 'signature=%zz'),
    p.split('?')[0] ?? p, `${p}&signature=00`, p.replace(/\/files\/\d+/, `/files/${ctx.sentinelFileIds[0] ?? 1}`), p.replace(/signature=/, 'signature[]='),
    p.replace(/expires=/, 'expires[$gt]='), `${p}&expires=1`, p.toUpperCase(),
  );
  const range = fc.oneof(
    { weight: 2, arbitrary: fc.constant(null) },
    {
      weight: 3,
      arbitrary: fc.constantFrom('bytes=0-0', 'bytes=0-', 'bytes=-1', 'bytes=5-1', 'bytes=0-0,2-3', 'bytes=abc', 'bytes=99999999999999999999-', 'bytes=-0',
        'bytes=1-2-3', 'items=0-1', 'bytes=', 'bytes=0-1,' + '0-1,'.repeat(2000) + '0-1', 'bytes=-99999999999999999999', 'bytes= 0 - 1 '),
    },
  );
  const paths = ctx.signedPaths.length > 0 ? fc.constantFrom(...ctx.signedPaths) : fc.constant('/files/1/content?expires=1&signature=00');
  return fc.tuple(paths.chain(tamper), range, fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'DELETE'), fc.option(authHeaders(ctx), { freq: 4 }))
    .map(([p, r, method, auth]) => mkCase(ctx, 'content', { method, target: p, headers: [...(auth ?? []), ...(r === null ? [] : [['Range', r] as [string, string]])] }));
};

/**
 * A resumable upload's session calls (issue 22): GET, DELETE and complete on known, unknown and
 * malformed upload ids, and part PUTs to real signed part URLs, tampered ones and made-up ones, with
 * bodies of every length (no token needed there: the signature is the credential).
 */
const uploadCase = (ctx: FuzzContext): fc.Arbitrary<Case> => {
  const known = ctx.uploadIds.length > 0 ? fc.constantFrom(...ctx.uploadIds) : fc.uuid({ version: 4 });
  const uploadId = fc.oneof(
    { weight: 6, arbitrary: known },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: known.map((id) => id.toUpperCase()) },
    { weight: 1, arbitrary: known.map((id) => `${id}%00`) },
    { weight: 2, arbitrary: idInUrl(ctx) },
  );
  const partNumber = fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 4 }).map(String) },
    { weight: 1, arbitrary: fc.constantFrom('0', '-1', '1.5', '01', '1e0', '10000', '10001', '99999999999999999999', 'abc', '%00', '') },
  );
  const tamper = (p: string): fc.Arbitrary<string> => fc.constantFrom(
    p, p, p, p.replace(/signature=[0-9a-f]/, 'signature=0'), p.replace(/expires=\d+/, 'expires=1'), p.replace(/expires=\d+/, 'expires=99999999999999999999'),
    p.replace(/signature=[0-9a-f]+/, 'signature='), p.replace(/signature=[0-9a-f]+/, 'signature=%zz'), p.split('?')[0] ?? p, `${p}&signature=00`,
    p.replace(/\/parts\/\d+/, '/parts/2'), p.replace(/\/parts\/\d+/, '/parts/0'), p.replace(/signature=/, 'signature[]='), `${p}&expires=1`, p.toUpperCase(),
  );
  const partTarget = fc.oneof(
    { weight: 3, arbitrary: ctx.partPaths.length > 0 ? fc.constantFrom(...ctx.partPaths).chain(tamper) : fc.constant(`${UPLOADS}/x/parts/1`) },
    {
      weight: 1,
      arbitrary: fc.tuple(uploadId, partNumber, fc.option(fc.constantFrom('expires=1&signature=00', 'expires=99999999999&signature=', 'signature=abc', 'expires=%zz'), { freq: 3 }))
        .map(([id, n, q]) => `${UPLOADS}/${id}/parts/${n}${q === null ? '' : `?${q}`}`),
    },
  );
  // Mostly about the size of the parts the setup's sessions expect (100 B, and small last parts).
  const partBody = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(0, 1, 99, 100, 101, 1000).map((n) => Buffer.alloc(n, 0x41)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((u) => Buffer.from(u)) },
    { weight: 1, arbitrary: fc.constantFrom(...SIZES_NEAR_LIMIT, 70_000).map((n) => Buffer.alloc(n, 0x42)) },
  );
  const session = fc.tuple(fc.constantFrom('GET', 'DELETE', 'POST', 'POST', 'PUT', 'HEAD'), uploadId, fc.constantFrom('', '', '', '/', '/complete', '/complete/', '/parts', '/x'), authHeaders(ctx))
    .chain(([method, id, suffix, auth]) => {
      const target = `${UPLOADS}/${id}${method === 'POST' && suffix === '' ? '/complete' : suffix}`;
      if (method !== 'POST') return fc.constant(mkCase(ctx, 'upload', { method, target, headers: auth }));
      return fc.tuple(fc.oneof({ weight: 3, arbitrary: jsonObject(ctx, ['parts']) }, { weight: 1, arbitrary: mutatedJson(jsonObject(ctx, ['parts'])) }), jsonCt, framingArb)
        .map(([text, ct, framing]) => mkCase(ctx, 'upload', { method, target, headers: withCt(ct, auth), body: b(text), framing }));
    });
  const part = fc.tuple(partTarget, partBody, fc.constantFrom('PUT', 'PUT', 'PUT', 'POST', 'GET'), fc.option(authHeaders(ctx), { freq: 3 }), framingArb, sendArb)
    .map(([target, body, method, auth, framing, send]) => mkCase(ctx, 'upload', {
      method, target, headers: [...(auth ?? []), ['Content-Type', 'application/octet-stream']], body: method === 'GET' ? undefined : body, framing,
    }, send));
  return fc.oneof({ weight: 1, arbitrary: session }, { weight: 1, arbitrary: part });
};

/**
 * An endpoint's own routes (issue 23): GET, PATCH, DELETE, rotate-secret, test, deliveries,
 * dead-letters and replay on the fuzz users' webhooks, the sentinel's (never theirs to touch),
 * unknown and malformed ids, with their bodies and query parameters.
 */
const webhookCase = (ctx: FuzzContext): fc.Arbitrary<Case> => {
  const known = fc.constantFrom(...ctx.webhooks.map((w) => w.id), ...ctx.sentinelWebhookIds, 0);
  const id = fc.oneof(
    { weight: 6, arbitrary: known.map(String) },
    { weight: 1, arbitrary: fc.integer({ min: -5, max: 300 }).map(String) },
    { weight: 2, arbitrary: known.chain((x) => fc.constantFrom('00%d', '%d.0', '+%d', '-%d', '%d%00', '%zz', '99999999999999999999999', '1e3', '0x%d', '%d;x', 'abc', '').map((f) => f.replaceAll('%d', String(x)))) },
  );
  const route = fc.constantFrom<[string, string]>(
    ['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/rotate-secret'], ['POST', '/test'], ['GET', '/deliveries'], ['GET', '/dead-letters'], ['POST', '/replay'],
    ['PUT', ''], ['POST', ''], ['GET', '/replay'], ['POST', '/x'], ['GET', '/deliveries/'],
  );
  // Half the time an endpoint with its owner's token, so requests get past the ownership check
  // (never DELETE there: the endpoints would be gone for the rest of the run).
  const owned = fc.tuple(route.filter(([method, suffix]) => !(method === 'DELETE' && suffix === '')), fc.constantFrom(...ctx.webhooks))
    .map(([r, w]): [[string, string], string, Array<[string, string]>] => [r, String(w.id), [['X-Authorization', `Bearer ${w.token}`]]]);
  const aimed = fc.oneof(owned, fc.tuple(route, id, authHeaders(ctx)));
  return aimed.chain(([[method, suffix], webhookId, auth]) => {
    const target = `${WEBHOOKS}/${webhookId}${suffix}`;
    if (method === 'GET' || method === 'DELETE') {
      return queryString(ctx, ['status', 'cursor', 'limit']).map((q) => mkCase(ctx, 'webhook', { method, target: `${target}${suffix.startsWith('/deliveries') || suffix === '/dead-letters' ? q : ''}`, headers: auth }));
    }
    const fields = suffix === '/replay' ? ['since', 'until', 'message_ids'] : ['url', 'events', 'description', 'enabled'];
    return fc.tuple(fc.oneof({ weight: 3, arbitrary: jsonObject(ctx, fields) }, { weight: 1, arbitrary: mutatedJson(jsonObject(ctx, fields)) }, { weight: 1, arbitrary: fc.constant('') }), jsonCt, framingArb)
      .map(([text, ct, framing]) => mkCase(ctx, 'webhook', { method, target, headers: text === '' ? auth : withCt(ct, auth), body: b(text), framing }));
  });
};

/** Every generator with its share of the requests. */
export const caseArb = (ctx: FuzzContext): fc.Arbitrary<Case> => fc.oneof(
  { weight: 28, arbitrary: routeCase(ctx) },
  { weight: 10, arbitrary: jsonCase(ctx) },
  { weight: 6, arbitrary: queryCase(ctx) },
  { weight: 8, arbitrary: pathCase(ctx) },
  { weight: 5, arbitrary: methodCase(ctx) },
  { weight: 6, arbitrary: headerCase(ctx) },
  { weight: 5, arbitrary: encodingCase(ctx) },
  { weight: 12, arbitrary: multipartCase(ctx) },
  { weight: 10, arbitrary: rawCase(ctx) },
  { weight: 4, arbitrary: contentCase(ctx) },
  { weight: 5, arbitrary: uploadCase(ctx) },
  { weight: 4, arbitrary: webhookCase(ctx) },
);

/** Generator names, for the counts. */
export const GENERATORS = ['route', 'json', 'query', 'path', 'method', 'headers', 'encoding', 'multipart', 'raw', 'pipeline', 'slow-abort', 'content', 'upload', 'webhook'];
