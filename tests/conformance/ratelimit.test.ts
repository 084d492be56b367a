// Rate limit (spec §8, decisions §3, docs/api-decisions.md "Order of checks").
// Each suite runs a dedicated server with its own limits, so these tests need a local server.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { api, type Api, type RegisteredUser, type Res } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { localOnly, startServer, type Server } from '../support/server.ts';
import { waitFor } from '../support/wait.ts';
import { sampleOf, scrape } from '../support/metrics.ts';

const MESSAGE = 'Rate limit exceeded. Please try again later.';

function int(res: Res, name: string): number {
  const v = res.headers.get(name);
  assert.ok(v !== null && /^\d+$/.test(v.trim()), `${name} must be a whole number, got ${JSON.stringify(v)} (HTTP ${res.status})`);
  return Number(v);
}

/** Checks the RateLimit-* headers of a limited response; returns the remaining count. */
function checkHeaders(res: Res, limit: number, windowSeconds: number): number {
  assert.equal(int(res, 'ratelimit-limit'), limit);
  const remaining = int(res, 'ratelimit-remaining');
  const reset = int(res, 'ratelimit-reset');
  assert.ok(remaining >= 0 && remaining <= limit, `RateLimit-Remaining ${remaining}`);
  assert.ok(reset >= 0 && reset <= windowSeconds, `RateLimit-Reset ${reset} must be within the window of ${windowSeconds} s`);
  const policy = res.headers.get('ratelimit-policy') ?? '';
  assert.ok(policy.length > 0, 'RateLimit-Policy must be present');
  const policyNumbers = (policy.match(/\d+/g) ?? []).map(Number);
  assert.ok(policyNumbers.includes(limit) && policyNumbers.includes(windowSeconds), `RateLimit-Policy "${policy}" must state ${limit} per ${windowSeconds} s`);
  const field = res.headers.get('ratelimit') ?? '';
  assert.ok(field.length > 0, 'RateLimit must be present');
  const fieldNumbers = (field.match(/\d+/g) ?? []).map(Number);
  assert.ok(fieldNumbers.includes(remaining), `RateLimit "${field}" must carry the remaining ${remaining}`);
  return remaining;
}

function expectLimited(res: Res, windowSeconds: number): void {
  expectError(res, 429, MESSAGE);
  const retry = res.headers.get('retry-after') ?? '';
  assert.match(retry, /^\d+$/, `Retry-After must be whole seconds, got "${retry}"`);
  assert.ok(Number(retry) >= 1 && Number(retry) <= windowSeconds, `Retry-After ${retry} must be within 1..${windowSeconds}`);
  assert.equal(res.headers.get('ratelimit-remaining'), '0');
}

describe('rate limit with the defaults (30 per 60 s)', { skip: localOnly }, () => {
  let server: Server | undefined;
  let c: Api;
  let a: RegisteredUser;
  let b: RegisteredUser;

  before(async () => {
    // RATE_LIMIT_POINTS and RATE_LIMIT_WINDOW_SECONDS unset: the defaults apply.
    server = await startServer({ RATE_LIMIT_POINTS: undefined, RATE_LIMIT_WINDOW_SECONDS: undefined });
    c = api(server);
    a = await c.register();
    b = await c.register();
  });
  after(async () => {
    if (server !== undefined) await server.dispose();
  });

  it('a user gets 30 requests with RateLimit headers counting down; the 31st is 429 with Retry-After', async () => {
    for (let i = 0; i < 30; i += 1) {
      const res = await c.stats(a.token);
      expectSuccess(res, 200);
      assert.equal(checkHeaders(res, 30, 60), 29 - i, `request ${i + 1}`);
    }
    const res = await c.stats(a.token);
    expectLimited(res, 60);
    checkHeaders(res, 30, 60);
  });

  it('once limited, every endpoint answers 429 first, even unknown routes and bad input', async () => {
    expectLimited(await c.download(a.token, undefined), 60);
    expectLimited(await c.download(a.token, '99999999'), 60);
    expectLimited(await c.json('GET', '/api/V1/nope', a.token), 60);
    expectLimited(await c.json('GET', '/api/V1/stats/api-stats', a.token), 60);
    expectLimited(await c.search(a.token, {}), 60);
    expectLimited(await c.upload(a.token, {}), 60);
    expectLimited(await c.files(a.token), 60);
    expectLimited(await c.comments(a.token), 60);
  });

  it('limits are per user: another user still passes, and the limited user stays limited with a new token', async () => {
    const res = await c.stats(b.token);
    expectSuccess(res, 200);
    assert.equal(checkHeaders(res, 30, 60), 29);
    const login = expectSuccess(await c.login(a.email, a.password), 200);
    expectLimited(await c.stats(login.token), 60);
  });

  it('without a valid token the limit is per client IP (login, register and bad tokens count there)', async () => {
    // Registrations and the login above already used some of this IP's budget.
    const first = await c.login(a.email, 'wrong password!');
    expectError(first, 401, 'Invalid email or password');
    let remaining = checkHeaders(first, 30, 60);
    assert.ok(remaining < 29, 'earlier register/login calls count against the IP');
    while (remaining > 0) {
      const res = await c.json('POST', '/api/V1/stats/api-stats', 'not-a-valid-token');
      expectError(res, 401, 'Invalid JWT token');
      const next = checkHeaders(res, 30, 60);
      assert.equal(next, remaining - 1);
      remaining = next;
    }
    expectLimited(await c.login(a.email, a.password), 60);
    expectLimited(await c.json('POST', '/api/V1/users/api-register', undefined, { name: 'n', email: 'late@example.com', password: 'password123' }), 60);
    expectLimited(await c.stats(undefined), 60);
    expectLimited(await c.stats('garbage'), 60);
    expectLimited(await c.json('GET', '/nope'), 60);
    // The IP being limited does not stop a user with a valid token.
    expectSuccess(await c.stats(b.token), 200);
  });

  it('probes are never refused and show the budget without spending it', async () => {
    // This IP is over its limit by now (see above); probes must still answer.
    for (const path of ['/healthz', '/readyz']) {
      const res = await c.raw('GET', path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('ratelimit-limit'), '30', path);
      assert.equal(res.headers.get('ratelimit-remaining'), '0', path);
      assert.ok(res.headers.get('ratelimit-policy'), path);
    }
    // /metrics is not served on the public port: an unknown route, limited like any other.
    expectLimited(await c.raw('GET', '/metrics'), 60);
  });

  it('counts the 429s it answered, by user and by IP, on the metrics listener', async () => {
    const text = await scrape(server!, 'gateway');
    // Above: the user's 31st request, eight more and one with a new token; then five of this IP's without a valid token, and /metrics.
    assert.ok((sampleOf(text, 'docshare_rate_limited_requests_total', { by: 'user' }) ?? 0) >= 10, text);
    assert.ok((sampleOf(text, 'docshare_rate_limited_requests_total', { by: 'ip' }) ?? 0) >= 6, text);
  });
});

describe('RATE_LIMIT_POINTS and RATE_LIMIT_WINDOW_SECONDS', { skip: localOnly }, () => {
  let server: Server | undefined;
  let c: Api;

  before(async () => {
    server = await startServer({ RATE_LIMIT_POINTS: '3', RATE_LIMIT_WINDOW_SECONDS: '2' });
    c = api(server);
  });
  after(async () => {
    if (server !== undefined) await server.dispose();
  });

  it('configure the limit and the window, and the budget comes back after the window', async () => {
    const u = await c.register();
    const first = await c.stats(u.token);
    expectSuccess(first, 200);
    checkHeaders(first, 3, 2);
    // Keep asking until limited (a 2 s window may roll over on a slow machine, so no exact count).
    const limited = await waitFor(async () => {
      const r = await c.stats(u.token);
      if (r.status === 200) {
        checkHeaders(r, 3, 2);
        return false;
      }
      return r;
    }, { timeoutMs: 20_000, intervalMs: 0 });
    expectLimited(limited, 2);
    checkHeaders(limited, 3, 2);
    // After the window the user passes again.
    await waitFor(async () => expectSuccess(await c.stats(u.token), 200), { timeoutMs: 20_000, intervalMs: 250 });
  });
});
