// docs-command's internal extraction route: only with the internal token, and absent without one.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { closeServer, makeLogger } from '@docshare/http';
import { makeDocsCommandApp } from '../src/http/app.ts';
import type { DocsCommands } from '../src/commands/docs-commands.ts';

const recorded: unknown[] = [];
const commands = {
  extractionStatus: async () => 'pending' as const,
  recordExtraction: async (...args: unknown[]) => { recorded.push(args); return { position: 1, users: [] }; },
} as unknown as DocsCommands;

const serve = async (internalToken?: string) => {
  const app = makeDocsCommandApp({
    commands, logger: makeLogger('test', 'silent'), maxUploadBytes: 1, publicBaseUrl: 'http://x', ...(internalToken ? { internalToken } : {}),
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/internal/V1/files/7/extraction` };
};

const report = { blobKey: 'f7-x', report: { ok: true, format: 'text', extractor: 'x@1', text: 'hello', truncated: false, language: null, durationMs: 1 } };
const post = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(report) });

describe('internal extraction route', () => {
  let withToken: Awaited<ReturnType<typeof serve>>;
  let without: Awaited<ReturnType<typeof serve>>;
  before(async () => {
    withToken = await serve('s3cret-token');
    without = await serve();
  });
  after(async () => {
    await closeServer(withToken.server);
    await closeServer(without.server);
  });

  it('answers the extractor that sends the token', async () => {
    const status = await fetch(withToken.url, { headers: { 'x-internal-token': 's3cret-token' } });
    assert.deepEqual(await status.json(), { status: 'success', extraction: 'pending' });
    const res = await post(withToken.url, { 'x-internal-token': 's3cret-token' });
    assert.equal(res.status, 201);
    assert.deepEqual(await res.json(), { status: 'success', recorded: true });
    assert.equal(recorded.length, 1);
  });

  it('is an unknown path to anyone without it, or with another one, and does not exist without a token configured', async () => {
    for (const headers of [{}, { 'x-internal-token': 'guess' }, { 'x-internal-token': 's3cret-token-longer' }] as Record<string, string>[]) {
      const res = await post(withToken.url, headers);
      assert.equal(res.status, 404);
      assert.deepEqual(await res.json(), { status: 'error', message: 'Not found' });
    }
    assert.equal((await post(without.url, { 'x-internal-token': 's3cret-token' })).status, 404);
    assert.equal((await fetch(without.url)).status, 404);
    assert.equal(recorded.length, 1);
  });
});
