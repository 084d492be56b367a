// Session consistency at the gateway: a write's token reaches the author's (and the named users')
// later requests; nobody else's; the internal users header never reaches the client.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { makeTokens } from '@docshare/auth';
import { CONSISTENCY_HEADER, CONSISTENCY_USERS_HEADER } from '@docshare/contracts';
import { makeLogger, makeOps } from '@docshare/http';
import { makeGateway } from '../src/index.ts';
import { makeMemorySessionTokens } from '../src/consistency.ts';

const SECRET = 'a-test-secret-that-is-long-enough-0123456789';
const tokens = makeTokens(SECRET, 3600);

let position = 100;
/** docs: every POST records an event owned by user 9; reads echo the token they were given. */
const docs: RequestHandler = (req, res) => {
  if (req.method === 'POST') {
    position += 1;
    res.setHeader(CONSISTENCY_HEADER, String(position));
    res.setHeader(CONSISTENCY_USERS_HEADER, '9');
  }
  res.json({ status: 'success', token: req.get(CONSISTENCY_HEADER) ?? null });
};
const echo: RequestHandler = (req, res) => { res.json({ status: 'success', token: req.get(CONSISTENCY_HEADER) ?? null }); };

describe('gateway session consistency', () => {
  let server: Server;
  let base: string;
  before(async () => {
    const app = makeGateway({
      tokens, logger: makeLogger('test', 'silent'), ops: makeOps('test', {}),
      limiter: new RateLimiterMemory({ points: 1000, duration: 60 }), rateLimitPoints: 1000, rateLimitWindowSeconds: 60,
      publicBaseUrl: 'http://example.test', sessions: makeMemorySessionTokens(),
      upstreams: { docs, stats: echo, files: echo, search: echo },
    });
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const call = async (method: string, path: string, user?: number, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, {
      method, headers: { ...(user ? { 'X-Authorization': `Bearer ${tokens.issue(user)}` } : {}), 'content-type': 'application/json', ...headers },
      ...(method === 'POST' ? { body: '{}' } : {}),
    });
    return { headers: res.headers, body: (await res.json()) as { token: string | null } };
  };

  it('carries a write\'s token to the author\'s and the named owner\'s reads, and to nobody else\'s', async () => {
    assert.equal((await call('POST', '/api/V1/stats/api-stats', 1)).body.token, null, 'no write yet: no token');
    const write = await call('POST', '/api/V1/docs/api-comment', 1);
    const token = write.headers.get(CONSISTENCY_HEADER);
    assert.equal(token, String(position), 'the client sees its token');
    assert.equal(write.headers.get(CONSISTENCY_USERS_HEADER), null, 'the internal header is removed');
    assert.equal((await call('POST', '/api/V1/stats/api-stats', 1)).body.token, token);
    assert.equal((await call('GET', '/api/V1/users/api-files', 9)).body.token, token, 'the owner the write named');
    assert.equal((await call('POST', '/api/V1/stats/api-stats', 2)).body.token, null, 'another user does not wait');
  });

  it('passes a token the client sends itself, the newer of it and the session\'s, and ignores a malformed one', async () => {
    await call('POST', '/api/V1/docs/api-comment', 3);
    const mine = String(position);
    assert.equal((await call('POST', '/api/V1/stats/api-stats', 3, { [CONSISTENCY_HEADER]: '5' })).body.token, mine);
    assert.equal((await call('POST', '/api/V1/stats/api-stats', 3, { [CONSISTENCY_HEADER]: '999999' })).body.token, '999999');
    assert.equal((await call('POST', '/api/V1/stats/api-stats', 4, { [CONSISTENCY_HEADER]: 'junk' })).body.token, null);
    assert.equal((await call('POST', '/api/V1/stats/api-stats', 4, { [CONSISTENCY_USERS_HEADER]: '3' })).body.token, null);
  });

  it('keeps only the most recent users', () => {
    const sessions = makeMemorySessionTokens(2);
    sessions.advance([1], 10);
    sessions.advance([2], 11);
    sessions.advance([3], 12);
    assert.deepEqual([sessions.peek(1), sessions.peek(2), sessions.peek(3)], [0, 11, 12]);
    sessions.advance([2], 5);
    assert.equal(sessions.peek(2), 11, 'never lowered');
  });
});
