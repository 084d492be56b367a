import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { makeTokens } from '@docshare/auth';
import { IDENTITY_HEADER, makeLogger, makeOps } from '@docshare/http';
import { LOCAL_ROUTES, corsPaths, makeGateway, openApiDocument, ROUTES } from '../src/index.ts';

const SECRET = 'a-test-secret-that-is-long-enough-0123456789';
const tokens = makeTokens(SECRET, 3600);

/** An upstream that answers with what the gateway passed on. */
const echo = (name: string): RequestHandler => (req, res) => {
  res.json({ status: 'success', upstream: name, path: req.path, identity: req.get(IDENTITY_HEADER) ?? null });
};

describe('gateway', () => {
  let server: Server;
  let base: string;
  before(async () => {
    const app = makeGateway({
      tokens, logger: makeLogger('test', 'silent'), ops: makeOps('test', {}),
      limiter: new RateLimiterMemory({ points: 1000, duration: 60 }), rateLimitPoints: 1000, rateLimitWindowSeconds: 60,
      publicBaseUrl: 'http://example.test',
      upstreams: { docs: echo('docs'), stats: echo('stats'), files: echo('files'), search: echo('search') },
    });
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const call = async (method: string, path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, { method, headers });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  };

  it('routes every documented operation to a service, and documents every route', async () => {
    const doc = openApiDocument('http://example.test') as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`)).sort();
    const routed = [...ROUTES, ...LOCAL_ROUTES].map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`)
      .concat(corsPaths().map((p) => `options ${p.replace(/:(\w+)/g, '{$1}')}`)).sort();
    assert.deepEqual(documented, routed);
    const token = tokens.issue(5);
    for (const route of ROUTES) {
      const path = route.path.replace(':fileId', '1');
      const res = await call(route.method.toUpperCase(), path, { 'x-authorization': `Bearer ${token}` });
      assert.equal(res.status, 200, `${route.method} ${route.path}`);
      assert.equal(res.body.upstream, route.upstream, `${route.method} ${route.path}`);
    }
  });

  it('sets the identity from the token only, never from the client', async () => {
    const forged = await call('POST', '/api/V1/stats/api-stats', { [IDENTITY_HEADER]: '1', 'x-authorization': `Bearer ${tokens.issue(5)}` });
    assert.equal(forged.body.identity, '5');
    const anonymous = await call('POST', '/api/V1/users/api-login', { [IDENTITY_HEADER]: '1' });
    assert.equal(anonymous.body.identity, null);
  });

  it('answers missing and invalid tokens before any service sees the request', async () => {
    assert.deepEqual((await call('POST', '/api/V1/stats/api-stats')).body, { status: 'error', message: 'Missing JWT token' });
    const invalid = await call('POST', '/api/V1/stats/api-stats', { 'x-authorization': 'Bearer nope' });
    assert.equal(invalid.status, 401);
    assert.deepEqual(invalid.body, { status: 'error', message: 'Invalid JWT token' });
    const otherKey = makeTokens('another-secret-that-is-long-enough-0123456789', 60).issue(5);
    assert.equal((await call('POST', '/api/V1/stats/api-stats', { authorization: `Bearer ${otherKey}` })).body.message, 'Invalid JWT token');
  });

  it('answers unknown routes 404 and wrong methods 405 in the envelope, with rate-limit headers', async () => {
    const unknown = await call('GET', '/nope');
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body, { status: 'error', message: 'Not found' });
    assert.equal(unknown.headers.get('ratelimit-limit'), '1000');
    const wrong = await call('PUT', '/api/V1/docs/api-download');
    assert.equal(wrong.status, 405);
    assert.deepEqual(wrong.body, { status: 'error', message: 'Invalid request method' });
    assert.match(wrong.headers.get('allow') ?? '', /GET/);
  });

  it('echoes a client request id and makes one otherwise', async () => {
    assert.equal((await call('GET', '/healthz', { 'x-request-id': 'abc-123' })).headers.get('x-request-id'), 'abc-123');
    assert.match((await call('GET', '/healthz')).headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });
});

describe('gateway metrics', () => {
  it('never serves /metrics on its port, and counts every 429 by user or IP', async () => {
    const ops = makeOps('test', {});
    const app = makeGateway({
      tokens, logger: makeLogger('test', 'silent'), ops,
      limiter: new RateLimiterMemory({ points: 2, duration: 60 }), rateLimitPoints: 2, rateLimitWindowSeconds: 60,
      publicBaseUrl: 'http://example.test',
      upstreams: { docs: echo('docs'), stats: echo('stats'), files: echo('files'), search: echo('search') },
    });
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const limited = async (labels: Record<string, string>): Promise<number | undefined> =>
      (await ops.registry.getSingleMetric('docshare_rate_limited_requests_total')!.get()).values
        .find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
    try {
      // /metrics is an unknown route here: the 404 envelope, and it spends a point like any other.
      const metrics = await fetch(`${base}/metrics`);
      assert.equal(metrics.status, 404);
      assert.deepEqual(await metrics.json(), { status: 'error', message: 'Not found' });
      assert.equal(metrics.headers.get('ratelimit-remaining'), '1');
      assert.equal(await limited({ by: 'ip' }), undefined);
      assert.equal((await fetch(`${base}/nope`)).status, 404);
      assert.equal((await fetch(`${base}/nope`)).status, 429);
      assert.equal((await fetch(`${base}/metrics`)).status, 429);
      assert.equal(await limited({ by: 'ip' }), 2);
      // Probes neither spend nor get refused, so never count.
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      const user = { 'x-authorization': `Bearer ${tokens.issue(7)}` };
      for (let i = 0; i < 2; i++) assert.equal((await fetch(`${base}/api/V1/stats/api-stats`, { method: 'POST', headers: user })).status, 200);
      assert.equal((await fetch(`${base}/api/V1/stats/api-stats`, { method: 'POST', headers: user })).status, 429);
      assert.equal(await limited({ by: 'user' }), 1);
      assert.equal(await limited({ by: 'ip' }), 2);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
