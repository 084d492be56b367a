// The gateway's side of leaving (issue 24): an erasure's answer names the user
// (x-docshare-erased-user): the header never leaves, the user's tokens are refused from the next
// request on, their consistency token and rate-limit budget are forgotten; a revoked user's valid
// token is `Invalid JWT token` wherever a token is read; the erasure's status link and an export's
// link need no token and are outside the rate limit only while their signature (path and user)
// holds. No timed assertion.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { M } from '@docshare/contracts';
import { IDENTITY_HEADER, makeLogger, makeOps } from '@docshare/http';
import { makeGateway, makeMemoryRevokedUsers, makeMemorySessionTokens, type GatewayOptions } from '../src/index.ts';

const SECRET = 'a-test-secret-that-is-long-enough-0123456789';
const tokens = makeTokens(SECRET, 3600);
const signer = makeUrlSigner(SECRET);
const logger = makeLogger('erasure-routes-test', 'silent');
const ERASURE_ID = '9c4d2e7a-1b3f-4a6c-8d5e-2f7b9a1c3e50';
const EXPORT_ID = 'd1e8a3b5-7c2f-4e9a-b6d4-3a5c7e9f1b28';

/** docs-command as the gateway sees it: the erasure names its user, everything else echoes what was asked and by whom. */
const docs: RequestHandler = (req, res) => {
  req.resume();
  req.on('end', () => {
    const user = req.get(IDENTITY_HEADER);
    if (req.method === 'POST' && req.path === '/api/V1/users/api-erase') {
      res.setHeader('x-docshare-erased-user', user ?? '');
      res.setHeader('x-docshare-consistency', '17');
      res.status(202).json({ status: 'success', message: M.erasureAccepted, erasure_id: ERASURE_ID, status_url: 'x' });
      return;
    }
    res.json({ status: 'success', method: req.method, path: req.path, user: user ?? null, consistency: req.get('x-docshare-consistency') ?? null });
  });
};

const started: Array<() => Promise<void>> = [];
after(async () => {
  for (const close of started) await close();
});

const gatewayOn = async (options: Partial<GatewayOptions> & { points?: number } = {}): Promise<{ base: string; limiter: RateLimiterMemory }> => {
  const points = options.points ?? 1000;
  const limiter = new RateLimiterMemory({ points, duration: 60 });
  const app = makeGateway({
    tokens, logger, ops: makeOps('test', {}), limiter, rateLimitPoints: points, rateLimitWindowSeconds: 60,
    publicBaseUrl: 'http://example.test', upstreams: { docs, stats: docs, files: docs, search: docs }, ...options,
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  started.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, limiter };
};

const as = (userId: number) => ({ 'x-authorization': `Bearer ${tokens.issue(userId)}` });
const now = (): number => Math.floor(Date.now() / 1000);

describe('erasure at the gateway', () => {
  it('the erasure\'s answer revokes its user (header stripped), forgets their consistency token and budget; others go on', async () => {
    const revocations = makeMemoryRevokedUsers();
    const sessions = makeMemorySessionTokens();
    const { base, limiter } = await gatewayOn({ revocations, sessions });
    const ada = as(31);
    const grace = as(32);
    assert.equal((await (await fetch(`${base}/api/V1/users/api-files`, { headers: ada })).json() as { user: string }).user, '31');
    assert.equal((await fetch(`${base}/api/V1/users/api-files`, { headers: grace })).status, 200);
    assert.notEqual(await limiter.get('user:31'), null);

    const erased = await fetch(`${base}/api/V1/users/api-erase`, { method: 'POST', headers: { ...ada, 'content-type': 'application/json' }, body: '{"password":"x"}' });
    assert.equal(erased.status, 202);
    assert.equal(erased.headers.get('x-docshare-erased-user'), null, 'the internal header never leaves');
    assert.equal((await erased.json() as { erasure_id: string }).erasure_id, ERASURE_ID);

    assert.equal(revocations.has(31), true);
    assert.equal(sessions.peek(31), 0, 'the consistency token is forgotten');
    assert.equal(await limiter.get('user:31'), null, 'the rate-limit budget is forgotten');
    for (const [method, path] of [['GET', '/api/V1/users/api-files'], ['POST', '/api/V1/users/api-export'], ['POST', '/api/V1/users/api-erase']] as const) {
      const res = await fetch(`${base}${path}`, { method, headers: ada });
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.deepEqual(await res.json(), { status: 'error', message: M.invalidToken });
    }
    // A route that needs no token: the revoked token is no identity either (never the user's).
    const page = await (await fetch(`${base}/docs/1`, { headers: ada })).json() as { user: string | null };
    assert.equal(page.user, null);
    assert.equal((await (await fetch(`${base}/api/V1/users/api-files`, { headers: grace })).json() as { user: string }).user, '32');
  });

  it('a header that names no user is stripped and revokes no one', async () => {
    const revocations = makeMemoryRevokedUsers();
    const weird: RequestHandler = (_req, res) => {
      res.setHeader('x-docshare-erased-user', 'everyone');
      res.json({ status: 'success' });
    };
    const { base } = await gatewayOn({ revocations, upstreams: { docs: weird, stats: weird, files: weird, search: weird } });
    const res = await fetch(`${base}/api/V1/users/api-files`, { headers: as(5) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-docshare-erased-user'), null);
    assert.equal((await fetch(`${base}/api/V1/users/api-files`, { headers: as(5) })).status, 200);
  });

  it('users revoked before the gateway started (the seeded list) are refused', async () => {
    const { base } = await gatewayOn({ revocations: makeMemoryRevokedUsers([8]) });
    const res = await fetch(`${base}/api/V1/users/api-export?export_id=${EXPORT_ID}`, { headers: as(8) });
    assert.equal(res.status, 401);
    assert.deepEqual(await res.json(), { status: 'error', message: M.invalidToken });
  });

  it('the five routes: erase and export need a token; the status and content links do not', async () => {
    const { base } = await gatewayOn();
    for (const [method, path] of [['POST', '/api/V1/users/api-erase'], ['POST', '/api/V1/users/api-export'], ['GET', `/api/V1/users/api-export?export_id=${EXPORT_ID}`]] as const) {
      const res = await fetch(`${base}${path}`, { method });
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.deepEqual(await res.json(), { status: 'error', message: M.missingToken });
    }
    for (const path of [`/api/V1/users/api-erase/status/${ERASURE_ID}?user=3`, `/api/V1/users/api-export/${EXPORT_ID}/content?user=3`]) {
      const res = await fetch(`${base}${path}`);
      assert.equal(res.status, 200, path);
      assert.equal((await res.json() as { path: string }).path, path.split('?')[0]);
    }
    const wrong = await fetch(`${base}/api/V1/users/api-erase/status/${ERASURE_ID}`, { method: 'POST' });
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get('allow'), 'GET, HEAD');
  });

  it('genuine status and export links are outside the rate limit; forged, moved to another user, or unsigned ones spend the IP budget', async () => {
    const { base } = await gatewayOn({ points: 2, partLinks: signer });
    const status = `/api/V1/users/api-erase/status/${ERASURE_ID}`;
    const content = `/api/V1/users/api-export/${EXPORT_ID}/content`;
    const link = (path: string, user: string): string => `${path}?user=${user}&${signer.sign(`${path}?user=${user}`, now() + 3600)}`;
    for (let i = 0; i < 4; i++) {
      for (const target of [link(status, '3'), link(content, '3')]) {
        const res = await fetch(`${base}${target}`);
        assert.equal(res.status, 200, target);
        assert.equal(res.headers.get('ratelimit-remaining'), null, target);
        await res.arrayBuffer();
      }
    }
    const movedUser = link(status, '3').replace('user=3', 'user=4');
    const pathOnly = `${content}?user=3&${signer.sign(content, now() + 3600)}`;
    const counted = [await fetch(`${base}${movedUser}`), await fetch(`${base}${pathOnly}`), await fetch(`${base}${status}?user=3`)];
    assert.deepEqual(counted.map((res) => res.status), [200, 200, 429]);
    assert.equal(counted[0]!.headers.get('ratelimit-remaining'), '1');
    for (const res of counted) await res.arrayBuffer();
    assert.equal((await fetch(`${base}${link(content, '3')}`)).status, 200, 'a genuine link still passes with the budget spent');
  });
});
