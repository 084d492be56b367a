// CORS (docs/http-caching-cors.md): CORS_ORIGINS names the browser origins that may call the API
// from another site; preflights are answered 204 at the edge; actual answers expose the headers a
// browser app needs; never Access-Control-Allow-Credentials.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { RegisteredUser, Res } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { localOnly } from '../support/server.ts';

const APP = 'https://app.example';
const DEV = 'http://localhost:5173';
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
const REQUEST_HEADERS = ['content-type', 'authorization', 'x-authorization', 'idempotency-key', 'x-request-id', 'range', 'if-none-match', 'if-modified-since', 'if-range'];
const EXPOSED = ['x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy', 'ratelimit', 'retry-after',
  'etag', 'last-modified', 'content-range', 'content-disposition', 'content-length', 'idempotent-replayed', 'accept-ranges'];

const list = (value: string | null): string[] => (value ?? '').split(',').map((item) => item.trim().toLowerCase()).filter((item) => item !== '');
const preflightHeaders = (origin: string, method: string, headers = 'content-type, x-authorization'): Record<string, string> =>
  ({ Origin: origin, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': headers });

function assertNoCors(res: Res, what: string): void {
  for (const name of res.headers.keys()) assert.ok(!name.startsWith('access-control-'), `${what}: ${name}`);
}

function assertExposed(res: Res, origin: string, what: string): void {
  assert.equal(res.headers.get('access-control-allow-origin'), origin, what);
  assert.deepEqual(list(res.headers.get('access-control-expose-headers')).sort(), [...EXPOSED].sort(), what);
  assert.equal(res.headers.get('access-control-allow-credentials'), null, what);
  assert.ok(list(res.headers.get('vary')).includes('origin'), `${what}: Vary: Origin`);
}

describe('CORS_ORIGINS with two origins', { skip: localOnly }, () => {
  let user: RegisteredUser;
  const fx = useServer({ CORS_ORIGINS: `${APP}, ${DEV}`, RATE_LIMIT_POINTS: '1000' }, async () => {
    user = await fx.c.register();
  });

  it('a preflight from an allowed origin on any API path → 204 with the methods, the headers (X-Authorization too) and a max age', async () => {
    const { c } = fx;
    for (const [path, method] of [
      ['/api/V1/docs/api-delete', 'DELETE'], ['/api/V1/stats/api-search', 'POST'], ['/api/V1/docs/api-download', 'GET'],
      ['/api/V1/docs/api-upload', 'POST'], ['/docs/1', 'GET'], ['/files/1/content', 'GET'], ['/api/V1/openapi.json', 'GET'],
      ['/api/V1/users/api-erase', 'POST'], ['/api/V1/users/api-erase/status/9c4d2e7a-1b3f-4a6c-8d5e-2f7b9a1c3e50', 'GET'],
      ['/api/V1/users/api-export', 'POST'], ['/api/V1/users/api-export', 'GET'], ['/api/V1/users/api-export/d1e8a3b5-7c2f-4e9a-b6d4-3a5c7e9f1b28/content', 'GET'],
    ] as const) {
      const res = await c.raw('OPTIONS', path, { headers: preflightHeaders(DEV, method) });
      assert.equal(res.status, 204, `${method} ${path}`);
      assert.equal(res.text, '');
      assert.equal(res.headers.get('access-control-allow-origin'), DEV);
      assert.deepEqual(list(res.headers.get('access-control-allow-methods')), METHODS.map((m) => m.toLowerCase()));
      assert.deepEqual(list(res.headers.get('access-control-allow-headers')).sort(), [...REQUEST_HEADERS].sort());
      assert.ok(Number(res.headers.get('access-control-max-age')) > 0);
      assert.equal(res.headers.get('access-control-allow-credentials'), null);
      assert.ok(list(res.headers.get('vary')).includes('origin'));
      assert.ok(res.headers.get('x-request-id'));
    }
  });

  it('a preflight from any other origin → 204 without Access-Control-Allow-* (the browser refuses the call)', async () => {
    for (const origin of ['https://evil.example', `${APP}.evil.example`, 'http://app.example', 'https://app.example:8443', 'null']) {
      const res = await fx.c.raw('OPTIONS', '/api/V1/docs/api-delete', { headers: preflightHeaders(origin, 'DELETE') });
      assert.equal(res.status, 204, origin);
      assertNoCors(res, origin);
    }
  });

  it('a preflight on an unknown path → 404 "Not found"; a plain OPTIONS → 405 "Invalid request method"', async () => {
    expectError(await fx.c.raw('OPTIONS', '/api/V1/nope', { headers: preflightHeaders(APP, 'POST') }), 404, 'Not found');
    const plain = await fx.c.raw('OPTIONS', '/api/V1/stats/api-search', { headers: { Origin: APP } });
    expectError(plain, 405, 'Invalid request method');
    assert.equal(plain.headers.get('allow'), 'POST');
  });

  it('actual answers to an allowed origin expose the headers an app reads, on successes and errors alike', async () => {
    const { c } = fx;
    const headers = { Origin: APP };
    const { fileId } = await c.uploadOk(user.token);
    const answers: Array<[string, Res]> = [
      ['login', await c.json('POST', '/api/V1/users/api-login', undefined, { email: user.email, password: user.password }, { headers })],
      ['stats', await c.json('POST', '/api/V1/stats/api-stats', user.token, undefined, { headers })],
      ['missing token', await c.json('POST', '/api/V1/stats/api-stats', undefined, undefined, { headers })],
      ['validation', await c.json('POST', '/api/V1/stats/api-search', user.token, {}, { headers })],
      ['unknown route', await c.raw('GET', '/nope', { headers })],
      ['view page', await c.raw('GET', `/docs/${fileId}`, { headers })],
    ];
    for (const [what, res] of answers) {
      assertExposed(res, APP, what);
      assert.ok(res.headers.get('x-request-id'), what);
      assert.ok(res.headers.get('ratelimit-remaining'), what);
    }
    expectSuccess(answers[0]?.[1] as Res, 200);
  });

  it('a file\'s bytes can be fetched from an allowed origin, Range and validators included', async () => {
    const { c } = fx;
    const data = randomBytes(256);
    const { fileId } = await c.uploadOk(user.token, {}, data, 'cross.bin', 'application/octet-stream');
    const url = expectSuccess(await c.download(user.token, fileId), 200).download_url as string;
    const whole = await c.bytes(url, { headers: { Origin: APP } });
    assert.equal(whole.status, 200);
    assert.ok(whole.bytes.equals(data));
    assert.equal(whole.headers.get('access-control-allow-origin'), APP);
    assert.ok(list(whole.headers.get('access-control-expose-headers')).includes('content-disposition'));
    const part = await c.bytes(url, { headers: { Origin: APP, Range: 'bytes=0-9', 'If-Range': whole.headers.get('etag') ?? '' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('access-control-allow-origin'), APP);
    const pre = await c.raw('OPTIONS', new URL(url).pathname + new URL(url).search, { headers: preflightHeaders(APP, 'GET', 'range, if-range') });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), APP);
  });

  it('answers to another origin, or to no origin, carry no CORS header', async () => {
    for (const headers of [{ Origin: 'https://evil.example' }, {}] as Array<Record<string, string>>) {
      const res = await fx.c.json('POST', '/api/V1/users/api-login', undefined, { email: user.email, password: user.password }, { headers });
      expectSuccess(res, 200);
      assertNoCors(res, JSON.stringify(headers));
      assert.ok(list(res.headers.get('vary')).includes('origin'), 'Vary: Origin whenever CORS is on');
    }
  });
});

describe('CORS_ORIGINS=*', { skip: localOnly }, () => {
  const fx = useServer({ CORS_ORIGINS: '*', RATE_LIMIT_POINTS: '3' });

  it('any origin: Access-Control-Allow-Origin: *, never with credentials', async () => {
    const { c } = fx;
    const pre = await c.raw('OPTIONS', '/api/V1/docs/api-upload', { headers: preflightHeaders('https://anyone.example', 'POST', 'x-authorization, idempotency-key') });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    assert.equal(pre.headers.get('access-control-allow-credentials'), null);
    const res = await c.raw('GET', '/api/V1/openapi.json', { headers: { Origin: 'https://someone.example' } });
    assertExposed(res, '*', 'openapi');
  });

  it('preflights spend no rate-limit budget and are never refused; a 429 is readable with its Retry-After', async () => {
    const { c } = fx;
    const login = () => c.json('POST', '/api/V1/users/api-login', undefined, { email: 'nobody@example.com', password: 'wrong-password' }, { headers: { Origin: 'https://anyone.example' } });
    const first = await login();
    const remaining = Number(first.headers.get('ratelimit-remaining'));
    for (let i = 0; i < 10; i++) {
      const pre = await c.raw('OPTIONS', '/api/V1/users/api-login', { headers: preflightHeaders('https://anyone.example', 'POST') });
      assert.equal(pre.status, 204);
    }
    const second = await login();
    assert.equal(Number(second.headers.get('ratelimit-remaining')), remaining - 1, 'the preflights spent nothing');
    let limited: Res = second;
    for (let i = 0; i < 5 && limited.status !== 429; i++) limited = await login();
    expectError(limited, 429, 'Rate limit exceeded. Please try again later.');
    assertExposed(limited, '*', '429');
    assert.ok(list(limited.headers.get('access-control-expose-headers')).includes('retry-after'));
    const pre = await c.raw('OPTIONS', '/api/V1/users/api-login', { headers: preflightHeaders('https://anyone.example', 'POST') });
    assert.equal(pre.status, 204, 'a preflight is answered even over the limit');
  });
});

describe('CORS_ORIGINS unset', { skip: localOnly }, () => {
  const fx = useServer({ CORS_ORIGINS: undefined });

  it('no CORS header at all: a preflight is the 405 it always was, an actual answer names no origin', async () => {
    const { c } = fx;
    const pre = await c.raw('OPTIONS', '/api/V1/docs/api-delete', { headers: preflightHeaders(APP, 'DELETE') });
    expectError(pre, 405, 'Invalid request method');
    assertNoCors(pre, 'preflight');
    const res = await c.raw('GET', '/api/V1/openapi.json', { headers: { Origin: APP } });
    assert.equal(res.status, 200);
    assertNoCors(res, 'openapi');
  });
});
