// A keyed write that recorded nothing (a 200 no-op: an update to the values a file already has, a
// repeated purchase) is not kept (issue 17, item 8): its key is released, so a stream of no-op
// retries costs the store no memory and no disk, and a retry does the work afresh. A write that
// recorded something is kept and replayed as before.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { CONSISTENCY_HEADER } from '@docshare/contracts';
import { closeServer, IDENTITY_HEADER, jsonBody, listen, makeLogger } from '@docshare/http';
import { openFileIdempotencyStore, type FileIdempotencyStore } from '@docshare/idempotency-store';
import { idempotent } from '../src/http/idempotency.ts';

describe('idempotency: what is kept', () => {
  let dir = '';
  let store: FileIdempotencyStore;
  let base = '';
  let stop = async (): Promise<void> => {};
  let done = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'idem-noop-'));
    store = await openFileIdempotencyStore(dir);
    const app = express();
    // Records (and says so with a consistency token, as docs-command's commands do) only when asked to change something.
    app.post('/write', jsonBody(), idempotent({ store, secret: 'test-secret', logger: makeLogger('test', 'silent') }, {
      requestOf: async (req) => req.body as unknown,
    }, async (req) => {
      done++;
      const recorded = (req.body as { change?: boolean }).change === true ? { position: done, users: [] } : null;
      return { status: 200, body: { status: 'success', message: 'File updated successfully', done }, recorded };
    }));
    const served = await listen(app, 0, '127.0.0.1');
    base = `http://127.0.0.1:${served.port}`;
    stop = () => closeServer(served.server, 100);
  });
  after(async () => {
    await stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const send = (key: string, body: unknown) => fetch(`${base}/write`, {
    method: 'POST', body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', 'idempotency-key': key, [IDENTITY_HEADER]: '7' },
  });

  it('a 200 that recorded nothing is not stored: no memory, no disk, and its retry is done afresh', async () => {
    const before = done;
    for (let i = 0; i < 20; i++) {
      const res = await send(`noop-${i}`, { change: false });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('idempotent-replayed'), null);
    }
    assert.deepEqual(store.size(), { keys: 0, lines: 0 });
    const retry = await send('noop-3', { change: false });
    assert.equal(retry.headers.get('idempotent-replayed'), null);
    assert.equal(done, before + 21, 'every no-op ran');
  });

  it('a write that recorded something is stored once and replayed', async () => {
    const first = await send('changes', { change: true });
    const firstBody = await first.json() as { done: number };
    const again = await send('changes', { change: true });
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await again.json(), firstBody);
    assert.equal(again.headers.get(CONSISTENCY_HEADER), first.headers.get(CONSISTENCY_HEADER));
    assert.deepEqual(store.size(), { keys: 1, lines: 1 });
  });
});
