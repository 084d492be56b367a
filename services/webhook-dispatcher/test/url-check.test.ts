import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DocshareError, M } from '@docshare/contracts';
import { remoteUrlCheck } from '@docshare/webhooks';
import { makeUrlCheckApp } from '../src/url-check.ts';

// docs-command's registration check asked of the dispatcher (compose: the one service with a way
// out): the dispatcher's policy and DNS answer, docs-command gets checkWebhookUrl's result.

const TOKEN = 'internal-token-of-this-test';
const listen = (policy: { allowHttp: boolean; allowPrivate: boolean }) => new Promise<{ server: Server; url: string }>((resolve) => {
  const server = makeUrlCheckApp(policy, TOKEN).listen(0, '127.0.0.1', () => {
    resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  });
});

describe('the dispatcher\'s URL check for registrations', () => {
  let strict: { server: Server; url: string };
  let open: { server: Server; url: string };
  before(async () => {
    strict = await listen({ allowHttp: false, allowPrivate: false });
    open = await listen({ allowHttp: true, allowPrivate: true });
  });
  after(() => {
    strict.server.close();
    open.server.close();
  });

  it('answers under the dispatcher\'s policy, whatever policy the caller passes', async () => {
    const policy = { allowHttp: true, allowPrivate: true };
    assert.deepEqual(await remoteUrlCheck(strict.url, TOKEN)('http://127.0.0.1:9/hook', policy), { ok: false, message: M.webhookUrlScheme });
    assert.deepEqual(await remoteUrlCheck(strict.url, TOKEN)('https://127.0.0.1/hook', policy), { ok: false, message: M.webhookUrlPrivate });
    assert.deepEqual(await remoteUrlCheck(strict.url, TOKEN)('https://user:pw@example.com/', policy), { ok: false, message: M.webhookUrlCredentials });
    const accepted = await remoteUrlCheck(open.url, TOKEN)('http://127.0.0.1:9/hook');
    assert.ok(accepted.ok);
    assert.equal(accepted.url.href, 'http://127.0.0.1:9/hook');
  });

  it('a wrong token finds nothing there, and docs-command answers 503 (never a registration unchecked)', async () => {
    await assert.rejects(remoteUrlCheck(strict.url, 'not-the-token')('https://example.com/'), (e: unknown) => e instanceof DocshareError && e.kind === 'unavailable');
    const res = await fetch(`${strict.url}/internal/V1/webhook-urls/check`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 404);
  });

  it('a dispatcher that cannot be reached is 503 too', async () => {
    await assert.rejects(remoteUrlCheck('http://127.0.0.1:9', TOKEN, 2_000)('https://example.com/'), (e: unknown) => e instanceof DocshareError && e.kind === 'unavailable' && e.message === M.unavailable);
  });
});
