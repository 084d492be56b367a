// The gateway's side of creators' webhooks (issue 23): the ten routes need a token and reach
// docs-command with their method, path, query and body (PATCH's body streamed like any); wrong
// methods answer 405 with Allow; a browser's preflight may PATCH; docs-command's internal route
// (the dispatcher's /internal/V1/webhooks/{id}/disabled) is never routed: 404 whatever the method.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { makeTokens } from '@docshare/auth';
import { M } from '@docshare/contracts';
import { IDENTITY_HEADER, makeLogger, makeOps } from '@docshare/http';
import { ROUTES, httpUpstream, makeGateway, type CorsOrigins, type GatewayOptions } from '../src/index.ts';

const tokens = makeTokens('a-test-secret-that-is-long-enough-0123456789', 3600);
const logger = makeLogger('webhook-routes-test', 'silent');
const HOOKS = '/api/V1/users/api-webhooks';
const APP = 'https://app.example';

/** The ten webhook operations: method and a concrete path. */
const OPERATIONS = [
  ['POST', HOOKS, 'createWebhook'],
  ['GET', HOOKS, 'listWebhooks'],
  ['GET', `${HOOKS}/7`, 'getWebhook'],
  ['PATCH', `${HOOKS}/7`, 'updateWebhook'],
  ['DELETE', `${HOOKS}/7`, 'deleteWebhook'],
  ['POST', `${HOOKS}/7/rotate-secret`, 'rotateWebhookSecret'],
  ['POST', `${HOOKS}/7/test`, 'testWebhook'],
  ['GET', `${HOOKS}/7/deliveries`, 'listWebhookDeliveries'],
  ['GET', `${HOOKS}/7/dead-letters`, 'listWebhookDeadLetters'],
  ['POST', `${HOOKS}/7/replay`, 'replayWebhook'],
] as const;

/** docs-command's stand-in: answers what it was sent (method, URL, identity, body). */
const echo = (req: IncomingMessage, res: ServerResponse): void => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      status: 'success', method: req.method, url: req.url, user: req.headers[IDENTITY_HEADER] ?? null, body: Buffer.concat(chunks).toString('utf8'),
    }));
  });
};

const servers: Server[] = [];
after(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

const listen = async (server: Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/** A gateway whose docs upstream is `docs` behind the real HTTP proxy (the distributed mode's path). */
const gatewayOn = async (options: Partial<GatewayOptions> = {}): Promise<string> => {
  const docs = httpUpstream(await listen(createServer(echo)), logger);
  const other: RequestHandler = (_req, res) => res.status(500).json({ status: 'error', message: 'wrong upstream' });
  return listen(createServer(makeGateway({
    tokens, logger, ops: makeOps('test', {}),
    limiter: new RateLimiterMemory({ points: 1000, duration: 60 }), rateLimitPoints: 1000, rateLimitWindowSeconds: 60,
    publicBaseUrl: 'http://example.test',
    upstreams: { docs, stats: other, files: other, search: other },
    ...options,
  })));
};

describe('webhook routes at the gateway', () => {
  it('are the ten operations of the route table, all to docs-command with a token', () => {
    const routes = ROUTES.filter((route) => route.path.startsWith(HOOKS));
    assert.deepEqual(routes.map((route) => route.operationId).sort(), OPERATIONS.map(([, , id]) => id).sort());
    for (const route of routes) {
      assert.equal(route.upstream, 'docs', route.operationId);
      assert.equal(route.auth, true, route.operationId);
      assert.notEqual(route.rateLimited, false, route.operationId);
    }
  });

  it('refuse a missing or bad token before docs-command', async () => {
    const base = await gatewayOn();
    for (const [method, path] of OPERATIONS) {
      for (const [headers, message] of [[{}, M.missingToken], [{ 'x-authorization': 'Bearer not-a-token' }, M.invalidToken]] as const) {
        const res = await fetch(`${base}${path}`, { method, headers });
        assert.equal(res.status, 401, `${method} ${path}`);
        assert.deepEqual(await res.json(), { status: 'error', message }, `${method} ${path}`);
      }
    }
  });

  it('reach docs-command with the method, the path and query, the caller\'s identity and the body (PATCH too)', async () => {
    const base = await gatewayOn();
    const user = { 'x-authorization': `Bearer ${tokens.issue(42)}`, 'content-type': 'application/json' };
    for (const [method, path] of OPERATIONS) {
      const query = method === 'GET' ? '?status=failed&cursor=abc&limit=5' : '';
      const body = method === 'POST' || method === 'PATCH' ? JSON.stringify({ description: `${method} ${path}` }) : undefined;
      const res = await fetch(`${base}${path}${query}`, { method, headers: user, body });
      assert.equal(res.status, 200, `${method} ${path}`);
      assert.deepEqual(await res.json(), { status: 'success', method, url: `${path}${query}`, user: '42', body: body ?? '' }, `${method} ${path}`);
    }
  });

  it('answer 405 with Allow to other methods', async () => {
    const base = await gatewayOn();
    const user = { 'x-authorization': `Bearer ${tokens.issue(3)}` };
    for (const [method, path, allow] of [
      ['PUT', HOOKS, 'POST, GET, HEAD'],
      ['PATCH', HOOKS, 'POST, GET, HEAD'],
      ['PUT', `${HOOKS}/7`, 'GET, HEAD, PATCH, DELETE'],
      ['POST', `${HOOKS}/7`, 'GET, HEAD, PATCH, DELETE'],
      ['GET', `${HOOKS}/7/rotate-secret`, 'POST'],
      ['PATCH', `${HOOKS}/7/test`, 'POST'],
      ['POST', `${HOOKS}/7/deliveries`, 'GET, HEAD'],
      ['DELETE', `${HOOKS}/7/dead-letters`, 'GET, HEAD'],
      ['GET', `${HOOKS}/7/replay`, 'POST'],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method, headers: user });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('allow'), allow, `${method} ${path}`);
      assert.deepEqual(await res.json(), { status: 'error', message: M.invalidMethod });
    }
  });

  it('docs-command\'s internal route for the dispatcher is never routed: 404, token or not', async () => {
    const base = await gatewayOn();
    const user = { 'x-authorization': `Bearer ${tokens.issue(3)}`, 'x-internal-token': 'guessed', 'content-type': 'application/json' };
    for (const method of ['POST', 'GET', 'PATCH']) {
      for (const headers of [{}, user]) {
        const res = await fetch(`${base}/internal/V1/webhooks/7/disabled`, { method, headers, body: method === 'GET' ? undefined : '{"owner_id":1,"reason":"gone"}' });
        assert.equal(res.status, 404, method);
        assert.deepEqual(await res.json(), { status: 'error', message: M.notFound });
      }
    }
  });

  it('CORS: a preflight may PATCH a webhook', async () => {
    const base = await gatewayOn({ corsOrigins: [APP] satisfies CorsOrigins });
    const pre = await fetch(`${base}${HOOKS}/7`, {
      method: 'OPTIONS', headers: { Origin: APP, 'Access-Control-Request-Method': 'PATCH', 'Access-Control-Request-Headers': 'content-type, x-authorization' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), APP);
    const methods = (pre.headers.get('access-control-allow-methods') ?? '').split(',').map((m) => m.trim());
    assert.ok(methods.includes('PATCH'), methods.join(', '));
  });
});
