// CORS at the gateway (cors.ts): CORS_ORIGINS parsing, preflights answered at the edge, the
// headers of actual answers, and Cache-Control: no-store on JSON answers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { makeTokens } from '@docshare/auth';
import { ConfigError, makeLogger, makeOps, readConfig } from '@docshare/http';
import {
  CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, corsOriginsVar, makeGateway, normalizeOrigin, parseCorsOrigins, routeMatcher, type CorsOrigins,
} from '../src/index.ts';

const SECRET = 'a-test-secret-that-is-long-enough-0123456789';
const tokens = makeTokens(SECRET, 3600);
const APP = 'https://app.example';

describe('CORS_ORIGINS', () => {
  it('unset or empty: CORS off', () => {
    assert.deepEqual(parseCorsOrigins(undefined), { origins: undefined });
    assert.deepEqual(parseCorsOrigins(' , '), { origins: undefined });
    assert.equal(readConfig({ CORS_ORIGINS: corsOriginsVar() }, {}).CORS_ORIGINS, undefined);
    assert.equal(readConfig({ CORS_ORIGINS: corsOriginsVar() }, { CORS_ORIGINS: '' }).CORS_ORIGINS, undefined);
  });

  it('"*" alone: any origin', () => {
    assert.deepEqual(parseCorsOrigins(' * '), { origins: '*' });
    assert.ok('problems' in parseCorsOrigins(`*, ${APP}`));
  });

  it('exact origins, in the form browsers send them (lowercase, no default port), without duplicates', () => {
    assert.deepEqual(parseCorsOrigins('https://App.Example, http://localhost:5173,https://app.example:443, http://[::1]:8080'),
      { origins: [APP, 'http://localhost:5173', 'http://[::1]:8080'] });
    assert.deepEqual(normalizeOrigin('HTTP://LOCALHOST:80'), { origin: 'http://localhost' });
  });

  it('anything but an http(s) origin is refused with its reason', () => {
    for (const bad of ['https://app.example/', 'https://app.example/path', 'app.example', 'https://app.example?x', 'https://user@app.example',
      'ftp://files.example', 'null', 'https://', 'https://app example']) {
      const read = parseCorsOrigins(bad);
      assert.ok('problems' in read, bad);
      assert.match(read.problems[0] ?? '', /origin/, bad);
    }
  });

  it('a bad entry stops the start: a ConfigError naming CORS_ORIGINS and every bad entry', () => {
    assert.throws(() => readConfig({ CORS_ORIGINS: corsOriginsVar() }, { CORS_ORIGINS: `${APP}, https://a.example/, b.example` }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.problems.length, 2);
      assert.match(error.message, /CORS_ORIGINS "https:\/\/a\.example\/" is not an origin/);
      assert.match(error.message, /CORS_ORIGINS "b\.example" is not an origin/);
      return true;
    });
  });
});

describe('routeMatcher', () => {
  it('matches Express patterns as Express does: parameters one segment, case-sensitive, optional trailing slash', () => {
    const route = routeMatcher(['/docs/:fileId', '/files/:fileId/content', '/api/V1/openapi.json', '/']);
    assert.equal(route('/'), '/');
    assert.equal(route('//'), undefined);
    assert.equal(route('/docs/12'), '/docs/:fileId');
    assert.equal(route('/docs/12/'), '/docs/:fileId');
    assert.equal(route('/files/7/content'), '/files/:fileId/content');
    assert.equal(route('/api/V1/openapi.json'), '/api/V1/openapi.json');
    for (const other of ['/docs', '/docs/1/2', '/Docs/1', '/api/V1/openapiXjson', '/files//content', '/nope']) assert.equal(route(other), undefined, other);
  });
});

describe('the gateway with CORS', () => {
  const started: Server[] = [];
  after(async () => {
    for (const server of started) await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  let upstreamCalls = 0;
  const echo: RequestHandler = (req, res) => {
    upstreamCalls++;
    res.json({ status: 'success', method: req.method });
  };
  const gateway = async (corsOrigins: CorsOrigins | undefined, points = 1000): Promise<string> => {
    const app = makeGateway({
      tokens, logger: makeLogger('test', 'silent'), ops: makeOps('test', {}),
      limiter: new RateLimiterMemory({ points, duration: 60 }), rateLimitPoints: points, rateLimitWindowSeconds: 60,
      publicBaseUrl: 'http://example.test', corsOrigins,
      upstreams: { docs: echo, stats: echo, files: echo, search: echo },
    });
    const server = createServer(app);
    started.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const preflight = (origin: string, method = 'DELETE', headers = 'content-type,x-authorization'): Record<string, string> =>
    ({ Origin: origin, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': headers });

  let listed: string;
  let any: string;
  let off: string;
  before(async () => {
    listed = await gateway([APP, 'http://localhost:5173']);
    any = await gateway('*');
    off = await gateway(undefined);
  });

  it('a preflight from an allowed origin: 204 with the methods, headers and max age, answered at the edge', async () => {
    const calls = upstreamCalls;
    for (const path of ['/api/V1/docs/api-delete', '/docs/3', '/files/3/content', '/api/V1/openapi.json', '/healthz']) {
      const res = await fetch(`${listed}${path}`, { method: 'OPTIONS', headers: preflight(APP) });
      assert.equal(res.status, 204, path);
      assert.equal(await res.text(), '');
      assert.equal(res.headers.get('access-control-allow-origin'), APP);
      assert.equal(res.headers.get('access-control-allow-methods'), 'GET, HEAD, POST, PUT, PATCH, DELETE');
      assert.equal(res.headers.get('access-control-allow-headers'), CORS_ALLOWED_HEADERS.join(', '));
      assert.equal(res.headers.get('access-control-max-age'), '600');
      assert.equal(res.headers.get('access-control-allow-credentials'), null);
      assert.equal(res.headers.get('vary'), 'Origin');
      assert.ok(res.headers.get('x-request-id'));
    }
    assert.equal(upstreamCalls, calls, 'no preflight reaches a service');
  });

  it('a preflight from another origin: 204 without any Access-Control-Allow-* header (the browser refuses)', async () => {
    for (const origin of ['https://evil.example', 'https://app.example.evil.example', 'null', 'https://APP.example']) {
      const res = await fetch(`${listed}/api/V1/docs/api-delete`, { method: 'OPTIONS', headers: preflight(origin) });
      assert.equal(res.status, 204, origin);
      for (const name of res.headers.keys()) assert.ok(!name.startsWith('access-control-'), `${origin}: ${name}`);
      assert.equal(res.headers.get('vary'), 'Origin');
    }
  });

  it('a preflight on an unknown path: 404 in the envelope, as any unknown path', async () => {
    const res = await fetch(`${listed}/nope`, { method: 'OPTIONS', headers: preflight(APP) });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { status: 'error', message: 'Not found' });
    assert.equal(res.headers.get('access-control-allow-origin'), APP, 'readable by the app');
  });

  it('a plain OPTIONS (no preflight) is a method the routes do not have: 405 with Allow', async () => {
    for (const headers of [{}, { Origin: APP }]) {
      const res = await fetch(`${listed}/api/V1/stats/api-search`, { method: 'OPTIONS', headers });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.deepEqual(await res.json(), { status: 'error', message: 'Invalid request method' });
    }
  });

  it('actual answers to an allowed origin, errors included, carry Allow-Origin and Expose-Headers, never Allow-Credentials', async () => {
    const token = tokens.issue(9);
    for (const [method, path, headers, status] of [
      ['POST', '/api/V1/stats/api-stats', { 'X-Authorization': `Bearer ${token}` }, 200],
      ['POST', '/api/V1/stats/api-stats', {}, 401],
      ['GET', '/nope', {}, 404],
      ['PUT', '/docs/1', {}, 405],
    ] as const) {
      const res = await fetch(`${listed}${path}`, { method, headers: { ...headers, Origin: 'http://localhost:5173' } });
      assert.equal(res.status, status, `${method} ${path}`);
      assert.equal(res.headers.get('access-control-allow-origin'), 'http://localhost:5173');
      assert.equal(res.headers.get('access-control-expose-headers'), CORS_EXPOSED_HEADERS.join(', '));
      assert.equal(res.headers.get('access-control-allow-credentials'), null);
      assert.equal(res.headers.get('vary'), 'Origin');
      await res.arrayBuffer();
    }
  });

  it('an answer to another origin or to no origin carries no CORS header, but Vary: Origin', async () => {
    for (const headers of [{ Origin: 'https://evil.example' }, {}]) {
      const res = await fetch(`${listed}/api/V1/users/api-login`, { method: 'POST', headers });
      await res.arrayBuffer();
      for (const name of res.headers.keys()) assert.ok(!name.startsWith('access-control-'), name);
      assert.equal(res.headers.get('vary'), 'Origin');
    }
  });

  it('"*": Allow-Origin * for every origin, never with credentials', async () => {
    const pre = await fetch(`${any}/api/V1/docs/api-upload`, { method: 'OPTIONS', headers: preflight('https://anyone.example', 'POST') });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    assert.equal(pre.headers.get('access-control-allow-credentials'), null);
    const res = await fetch(`${any}/api/V1/users/api-login`, { method: 'POST', headers: { Origin: 'https://other.example' } });
    await res.arrayBuffer();
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.equal(res.headers.get('access-control-allow-credentials'), null);
  });

  it('off (CORS_ORIGINS unset): no CORS header, no Vary, and a preflight is the 405 it always was', async () => {
    const pre = await fetch(`${off}/api/V1/docs/api-delete`, { method: 'OPTIONS', headers: preflight(APP) });
    assert.equal(pre.status, 405);
    await pre.arrayBuffer();
    const res = await fetch(`${off}/api/V1/users/api-login`, { method: 'POST', headers: { Origin: APP } });
    await res.arrayBuffer();
    for (const name of [...pre.headers.keys(), ...res.headers.keys()]) assert.ok(!name.startsWith('access-control-'), name);
    assert.equal(res.headers.get('vary'), null);
  });

  it('preflights spend no rate-limit budget and are never refused with 429', async () => {
    const base = await gateway([APP], 2);
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${base}/api/V1/docs/api-delete`, { method: 'OPTIONS', headers: preflight(APP) });
      assert.equal(res.status, 204);
    }
    const first = await fetch(`${base}/api/V1/users/api-login`, { method: 'POST', headers: { Origin: APP } });
    await first.arrayBuffer();
    assert.equal(first.headers.get('ratelimit-remaining'), '1', 'the preflights spent nothing');
  });

  it('JSON answers are never stored: Cache-Control: no-store, errors included', async () => {
    for (const [method, path] of [['POST', '/api/V1/users/api-login'], ['POST', '/api/V1/stats/api-stats'], ['GET', '/nope'], ['GET', '/api/V1/openapi.json']]) {
      const res = await fetch(`${off}${path}`, { method });
      await res.arrayBuffer();
      assert.equal(res.headers.get('cache-control'), 'no-store', `${method} ${path}`);
    }
  });
});
