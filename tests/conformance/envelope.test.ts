// Envelope, errors, headers and the OpenAPI document (spec §4 common rules, decisions §1, §13,
// docs/api-decisions.md "Order of checks").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_UPLOAD, type RegisteredUser, type Res } from '../support/client.ts';
import { assertNoLeak, expectError, expectJson, expectSuccess } from '../support/expect.ts';
import { enc, useServer } from '../support/fixture.ts';

let user: RegisteredUser;
let fileId = '';
const fx = useServer({}, async () => {
  user = await fx.c.register();
  fileId = (await fx.c.uploadOk(user.token)).fileId;
});

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** Every documented API route with its method. */
const ROUTES: Array<[string, string]> = [
  ['POST', '/api/V1/users/api-register'],
  ['POST', '/api/V1/users/api-login'],
  ['POST', '/api/V1/docs/api-upload'],
  ['GET', '/api/V1/docs/api-download'],
  ['DELETE', '/api/V1/docs/api-delete'],
  ['POST', '/api/V1/stats/api-search'],
  ['POST', '/api/V1/stats/api-stats'],
  ['GET', '/api/V1/users/api-files'],
  ['POST', '/api/V1/users/api-comments'],
  ['POST', '/api/V1/docs/api-comment'],
  ['POST', '/api/V1/docs/api-update'],
  ['POST', '/api/V1/docs/api-purchase'],
  ['GET', '/api/V1/docs/api-categories'],
];

describe('routing', () => {
  it('an unknown route → 404 "Not found" as JSON, with or without a token', async () => {
    const { c } = fx;
    const paths: Array<[string, string]> = [
      ['GET', '/nope'],
      ['GET', '/api/V1/nope'],
      ['POST', '/api/V1/docs/api-nothing'],
      ['GET', '/api/V2/users/api-files'],
      ['GET', '/api/V1/docs/api-download/extra'],
      ['DELETE', '/files'],
      ['GET', '/api/V1/openapi.yaml'],
    ];
    for (const [method, path] of paths) {
      expectError(await c.json(method, path), 404, 'Not found');
      expectError(await c.json(method, path, user.token), 404, 'Not found');
    }
  });

  it('paths are case-sensitive: /api/v1/... (lower-case v) is not a route → 404 "Not found"', async () => {
    // spec §9: the version is carried in the path segment /api/V1/.
    const { c } = fx;
    expectError(await c.json('POST', '/api/v1/stats/api-stats', user.token), 404, 'Not found');
    expectError(await c.json('POST', '/api/V1/Stats/API-Stats', user.token), 404, 'Not found');
  });

  it('a known path with another method → 405 "Invalid request method" with an Allow header, before authentication', async () => {
    const { c } = fx;
    const wrong: Array<[string, string, string]> = [
      ['POST', '/api/V1/docs/api-download', 'GET'],
      ['GET', '/api/V1/stats/api-stats', 'POST'],
      ['GET', '/api/V1/stats/api-search', 'POST'],
      ['GET', '/api/V1/docs/api-upload', 'POST'],
      ['PUT', '/api/V1/docs/api-upload', 'POST'],
      ['POST', '/api/V1/docs/api-delete', 'DELETE'],
      ['POST', '/api/V1/users/api-files', 'GET'],
      ['GET', '/api/V1/users/api-comments', 'POST'],
      ['GET', '/api/V1/docs/api-comment', 'POST'],
      ['GET', '/api/V1/docs/api-update', 'POST'],
      ['GET', '/api/V1/docs/api-purchase', 'POST'],
      ['POST', '/api/V1/docs/api-categories', 'GET'],
      ['GET', '/api/V1/users/api-register', 'POST'],
      ['GET', '/api/V1/users/api-login', 'POST'],
    ];
    for (const [method, path, allowed] of wrong) {
      for (const token of [undefined, user.token]) {
        const res = await c.json(method, path, token);
        expectError(res, 405, 'Invalid request method');
        assert.match(res.headers.get('allow') ?? '', new RegExp(`\\b${allowed}\\b`), `${method} ${path}: Allow must list ${allowed}`);
      }
    }
  });
});

describe('bodies', () => {
  it('malformed JSON → 400 "Malformed JSON" on every JSON endpoint', async () => {
    const { c } = fx;
    const jsonRoutes: Array<[string, string, boolean]> = [
      ['POST', '/api/V1/users/api-register', false],
      ['POST', '/api/V1/users/api-login', false],
      ['DELETE', '/api/V1/docs/api-delete', true],
      ['POST', '/api/V1/stats/api-search', true],
      ['POST', '/api/V1/docs/api-comment', true],
      ['POST', '/api/V1/docs/api-update', true],
      ['POST', '/api/V1/docs/api-purchase', true],
    ];
    for (const [method, path, auth] of jsonRoutes) {
      for (const raw of ['{"a":', '{a: 1}', 'not json', '{"a":1}}']) {
        const res = await c.json(method, path, auth ? user.token : undefined, undefined, { raw, headers: { 'Content-Type': 'application/json' } });
        expectError(res, 400, 'Malformed JSON');
      }
    }
  });

  it('a JSON body over 1 MiB → 413 "Request body too large"', async () => {
    const { c } = fx;
    const big = JSON.stringify({ search: 'x', pad: 'p'.repeat(1024 * 1024 + 10) });
    expectError(await c.json('POST', '/api/V1/stats/api-search', user.token, undefined, { raw: big, headers: { 'Content-Type': 'application/json' } }), 413, 'Request body too large');
    const bigRegister = JSON.stringify({ name: 'n', email: 'e@example.com', password: 'p'.repeat(1024 * 1024 + 10) });
    expectError(await c.json('POST', '/api/V1/users/api-register', undefined, undefined, { raw: bigRegister, headers: { 'Content-Type': 'application/json' } }), 413, 'Request body too large');
  });

  it('a field of the wrong JSON type counts as missing', async () => {
    const { c } = fx;
    const h = { 'Content-Type': 'application/json' };
    expectError(await c.json('DELETE', '/api/V1/docs/api-delete', user.token, undefined, { raw: '{"id":{"$gt":0}}', headers: h }), 400, 'File ID is required');
    expectError(await c.json('POST', '/api/V1/docs/api-purchase', user.token, undefined, { raw: '{"file_id":[1]}', headers: h }), 400, 'File ID is required');
    expectError(await c.json('POST', '/api/V1/docs/api-update', user.token, undefined, { raw: '{"id":true,"title":"x"}', headers: h }), 400, 'File ID is required');
    expectError(await c.json('POST', '/api/V1/docs/api-comment', user.token, undefined, { raw: '{"file_id":{"a":1},"comment":"x"}', headers: h }), 400, 'File ID is required');
    expectError(await c.json('POST', '/api/V1/stats/api-search', user.token, undefined, { raw: '{"search":{"$ne":null}}', headers: h }), 400, 'Search term is required');
  });

  it('valid JSON that is not an object → 400 (either "Malformed JSON" or the missing-field message), never a crash', async () => {
    // Neither document says which of the two messages a non-object body gets; both are accepted.
    const { c } = fx;
    const h = { 'Content-Type': 'application/json' };
    const cases: Array<[string, string, boolean, string, string]> = [
      ['POST', '/api/V1/stats/api-search', true, '[]', 'Search term is required'],
      ['POST', '/api/V1/stats/api-search', true, 'null', 'Search term is required'],
      ['DELETE', '/api/V1/docs/api-delete', true, '"1"', 'File ID is required'],
      ['POST', '/api/V1/docs/api-comment', true, '42', 'File ID is required'],
      ['POST', '/api/V1/users/api-register', false, 'true', 'Name is required'],
    ];
    for (const [method, path, auth, raw, fieldMessage] of cases) {
      const res = await c.json(method, path, auth ? user.token : undefined, undefined, { raw, headers: h });
      assert.equal(res.status, 400, `${method} ${path} with body ${raw}: ${res.text}`);
      expectJson(res);
      assert.ok(res.body.message === 'Malformed JSON' || res.body.message === fieldMessage, `${method} ${path} with body ${raw}: ${res.text}`);
    }
  });

  it('odd inputs get a JSON error, never a 5xx, a stack trace or internals', async () => {
    const { c } = fx;
    const h = { 'Content-Type': 'application/json' };
    const calls: Array<Promise<Res>> = [
      c.download(user.token, '1'.repeat(400)),
      c.download(user.token, '../../etc/passwd'),
      c.download(user.token, "1' OR '1'='1"),
      c.del(user.token, '9'.repeat(40)),
      c.search(user.token, { search: '"\'\\%_*?()[]{}<>!:~^-+&&||' }),
      c.search(user.token, { search: 'AND OR NOT' }),
      c.search(user.token, { search: 'x', page: '1; DROP TABLE files' }),
      c.files(user.token, 'user_id=1%00'),
      c.files(user.token, 'user_id[]=1&user_id[]=2'),
      c.files(user.token, 'page[]=1'),
      c.comment(user.token, { file_id: { toString: 'x' }, comment: 'x' }),
      c.update(user.token, { id: fileId, price: '1e999' }),
      c.json('POST', '/api/V1/docs/api-update', user.token, undefined, { raw: `{"id":"${fileId}","__proto__":{"enabled":false}}`, headers: h }),
      c.json('POST', '/api/V1/docs/api-update', user.token, undefined, { raw: `{"id":"${fileId}","constructor":{"prototype":{"x":1}}}`, headers: h }),
      c.json('POST', '/api/V1/stats/api-search', user.token, undefined, { raw: '{"search":"\\ud800"}', headers: h }),
      c.json('POST', '/api/V1/stats/api-search', user.token, undefined, { raw: '\u0000', headers: h }),
      c.json('POST', '/api/V1/stats/api-search', user.token, undefined, { raw: '{"search":"x"}', headers: { 'Content-Type': 'text/plain' } }),
      c.json('POST', '/api/V1/docs/api-upload', user.token, undefined, { raw: '--x\r\nbroken', headers: { 'Content-Type': 'multipart/form-data; boundary=x' } }),
      c.json('POST', '/api/V1/docs/api-upload', user.token, undefined, { raw: 'abc', headers: { 'Content-Type': 'multipart/form-data' } }),
    ];
    for (const res of await Promise.all(calls)) {
      expectJson(res);
      assert.ok(res.status >= 200 && res.status < 500, `unexpected HTTP ${res.status}: ${res.text.slice(0, 300)}`);
      assert.ok(res.headers.get('x-request-id'));
      assertNoLeak(res);
    }
  });
});

describe('headers', () => {
  async function variety(extra: Record<string, string> = {}): Promise<Res[]> {
    const { c } = fx;
    const h = extra;
    return [
      await c.json('GET', '/nope', undefined, undefined, { headers: h }),
      await c.json('GET', '/api/V1/stats/api-stats', user.token, undefined, { headers: h }),
      await c.json('POST', '/api/V1/stats/api-stats', undefined, undefined, { headers: h }),
      await c.json('POST', '/api/V1/stats/api-stats', 'garbage', undefined, { headers: h }),
      await c.json('POST', '/api/V1/stats/api-stats', user.token, undefined, { headers: h }),
      await c.json('POST', '/api/V1/stats/api-search', user.token, { search: 'zzzzqqqqxxxx' }, { headers: h }),
      await c.json('POST', '/api/V1/stats/api-search', user.token, undefined, { headers: { ...h, 'Content-Type': 'application/json' }, raw: '{' }),
      await c.json('GET', `/api/V1/docs/api-download?file_id=${fileId}`, user.token, undefined, { headers: h }),
      await c.json('GET', '/api/V1/docs/api-download', user.token, undefined, { headers: h }),
      await c.json('POST', '/api/V1/docs/api-upload', user.token, undefined, { headers: h, raw: c.uploadForm({ ...DEFAULT_UPLOAD }, enc('x')) }),
      await c.json('POST', '/api/V1/users/api-login', undefined, { email: 'x@example.com', password: 'wrong password' }, { headers: h }),
      await c.json('GET', '/api/V1/users/api-files?user_id=999999', user.token, undefined, { headers: h }),
    ];
  }

  it('every API response is a JSON object with "status", and carries X-Request-Id (a UUID v4 when not sent)', async () => {
    for (const res of await variety()) {
      expectJson(res);
      assertNoLeak(res);
      assert.match(res.headers.get('x-request-id') ?? '', UUID_V4, `X-Request-Id on HTTP ${res.status} ${res.text.slice(0, 100)}`);
    }
    const ids = new Set((await variety()).map((r) => r.headers.get('x-request-id')));
    assert.equal(ids.size, 12, 'each request gets its own id');
  });

  it('X-Request-Id sent by the client is echoed on every response', async () => {
    for (const res of await variety({ 'X-Request-Id': 'client-req-42.abc_DEF' })) {
      assert.equal(res.headers.get('x-request-id'), 'client-req-42.abc_DEF', `HTTP ${res.status} ${res.text.slice(0, 100)}`);
    }
    const { c } = fx;
    const page = await c.raw('GET', `/docs/${fileId}`, { headers: { 'X-Request-Id': 'page-req-1' } });
    assert.equal(page.headers.get('x-request-id'), 'page-req-1');
    const max = 'r'.repeat(128);
    assert.equal((await c.json('POST', '/api/V1/stats/api-stats', user.token, undefined, { headers: { 'X-Request-Id': max } })).headers.get('x-request-id'), max);
  });

  it('an X-Request-Id over 128 characters is replaced by a fresh one', async () => {
    const res = await fx.c.json('POST', '/api/V1/stats/api-stats', user.token, undefined, { headers: { 'X-Request-Id': 'r'.repeat(129) } });
    assert.match(res.headers.get('x-request-id') ?? '', UUID_V4);
  });

  it('the signed content URL and its errors carry X-Request-Id too', async () => {
    const { c } = fx;
    const url = expectSuccess(await c.download(user.token, fileId), 200).download_url as string;
    const ok = await c.bytes(url, { headers: { 'X-Request-Id': 'content-1' } });
    assert.equal(ok.headers.get('x-request-id'), 'content-1');
    const bad = await c.raw('GET', url.replace(/signature=[0-9a-f]/i, 'signature=g'));
    expectError(bad, 403, 'Invalid or expired download link');
    assert.match(bad.headers.get('x-request-id') ?? '', UUID_V4);
  });
});

describe('operations', () => {
  it('GET /healthz and /readyz answer 200; /metrics is no route of the public port', async () => {
    const { c } = fx;
    assert.equal((await c.raw('GET', '/healthz')).status, 200);
    assert.equal((await c.raw('GET', '/readyz')).status, 200);
    for (const method of ['GET', 'HEAD', 'POST']) {
      const m = await c.raw(method, '/metrics');
      assert.equal(m.status, 404, `${method} /metrics`);
      if (method !== 'HEAD') expectError(m, 404, 'Not found');
      assert.doesNotMatch(m.text, /# (HELP|TYPE) /);
    }
  });
});

describe('OpenAPI document', () => {
  it('GET /api/V1/openapi.json (no token) is OpenAPI 3.1 JSON documenting every route (path + method)', async () => {
    const { c } = fx;
    const res = await c.raw('GET', '/api/V1/openapi.json');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const doc = res.body as { openapi?: unknown; paths?: Record<string, Record<string, unknown>>; servers?: Array<{ url?: string }> };
    assert.ok(doc && typeof doc === 'object', 'body must be JSON');
    assert.match(String(doc.openapi), /^3\.1\.\d+$/);
    assert.ok(doc.paths && typeof doc.paths === 'object', 'paths must be an object');
    const prefixes = new Set<string>(['']);
    for (const s of doc.servers ?? []) {
      if (typeof s.url === 'string') prefixes.add(new URL(s.url, 'http://x').pathname.replace(/\/+$/, ''));
    }
    const documented: Array<[string, RegExp]> = [];
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const prefix of prefixes) {
        const re = new RegExp(`^${(prefix + p).replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^/}]+\}/g, '[^/]+')}$`);
        for (const m of Object.keys(ops)) documented.push([m.toUpperCase(), re]);
      }
    }
    const wanted: Array<[string, string]> = [
      ...ROUTES,
      ['GET', `/docs/${fileId}`],
      ['GET', `/files/${fileId}/content`],
    ];
    const missing = wanted.filter(([m, p]) => !documented.some(([dm, re]) => dm === m && re.test(p)));
    assert.deepEqual(missing, [], 'routes missing from openapi.json');
  });
});
