import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { deliveryTask, endpointRecord, webhookStoreContract } from '../src/store/contract.ts';
import { openFileWebhookStore } from '../src/store/file-store.ts';

const root = await mkdtemp(join(tmpdir(), 'docshare-webhooks-'));
after(async () => {
  await rm(root, { recursive: true, force: true });
});
let dirs = 0;
const freshDir = (): string => join(root, `store-${++dirs}`);
const T0 = 1_750_000_000_000;
const none: ReadonlySet<number> = new Set();
const lines = async (dir: string): Promise<number> => (await readFile(join(dir, 'webhooks.log'), 'utf8')).split('\n').filter((l) => l !== '').length;

webhookStoreContract('file', () => openFileWebhookStore(freshDir()));

describe('file webhook store', () => {
  it('keeps endpoints, tasks, attempts, health and checkpoints across a reopen, and drops the leases', async () => {
    const dir = freshDir();
    const first = await openFileWebhookStore(dir);
    await first.applyEndpoints([endpointRecord(1, 10, 5)]);
    await first.schedule([deliveryTask(1, 1), deliveryTask(1, 2), deliveryTask(1, 3)]);
    await first.claimDue(T0, 10, 60_000, 'd1', none);
    await first.settle(deliveryTask(1, 1).id, { state: 'dead', attempts: 9, nextAt: T0, lastError: 'HTTP 500', lastStatus: 500, now: T0 + 1 }, {
      id: 'a1', webhookId: 1, ownerId: 1, messageId: deliveryTask(1, 1).messageId, eventId: 'e1', eventType: 'file.uploaded', attempt: 9, at: T0, outcome: 'failed', status: 500, latencyMs: 3, error: 'HTTP 500',
    });
    await first.setFailingSince(1, T0);
    await first.setCheckpoint('g', 2, 42);
    await first.close();

    const second = await openFileWebhookStore(dir);
    assert.deepEqual(await second.endpoint(1), endpointRecord(1, 10, 5));
    assert.deepEqual((await second.deadLetters(1, { limit: 5 })).items.map((t) => [t.id, t.attempts, t.lastStatus]), [[deliveryTask(1, 1).id, 9, 500]]);
    assert.deepEqual((await second.attempts(1, { limit: 5 })).items.map((a) => a.id), ['a1']);
    assert.equal(await second.failingSince(1), T0);
    assert.equal(await second.checkpoint('g', 2), 42);
    assert.deepEqual(await second.schedule([deliveryTask(1, 2)]), []);
    // Leased by the process before (gone): due again at once.
    assert.deepEqual((await second.claimDue(T0, 10, 60_000, 'd2', none)).map((t) => t.id), [deliveryTask(1, 2).id, deliveryTask(1, 3).id]);
    await second.close();
  });

  it('prune compacts the file to what is live', async () => {
    const dir = freshDir();
    const store = await openFileWebhookStore(dir);
    for (let n = 1; n <= 200; n++) {
      await store.schedule([deliveryTask(1, n)]);
      await store.settle(deliveryTask(1, n).id, { state: 'succeeded', attempts: 1, nextAt: T0, lastError: null, lastStatus: 200, now: T0 + n }, null);
    }
    await store.schedule([deliveryTask(1, 500)]);
    assert.equal(await lines(dir), 401);
    assert.equal(await store.prune(T0 + 101), 100);
    assert.equal(await lines(dir), 1, '101 tasks in one line');
    await store.close();
    const reopened = await openFileWebhookStore(dir);
    assert.equal(await reopened.pendingCount(1), 1);
    assert.deepEqual(await reopened.schedule([deliveryTask(1, 150), deliveryTask(1, 50)]), [deliveryTask(1, 50).id]);
    await reopened.close();
  });

  it('removeOwner takes the owner\'s deliveries off the disk at once, also when closed just after, and a reopen agrees', async () => {
    const dir = freshDir();
    const store = await openFileWebhookStore(dir);
    await store.applyEndpoints([endpointRecord(70, 7, 1), endpointRecord(80, 8, 2)]);
    const body = JSON.stringify({ type: 'file.uploaded', data: { title: 'erase-me-5d1e' } });
    await store.schedule([deliveryTask(70, 1, { ownerId: 7, body }), deliveryTask(80, 2, { ownerId: 8 })]);
    await store.settle(deliveryTask(70, 1).id, { state: 'succeeded', attempts: 1, nextAt: T0, lastError: null, lastStatus: 200, now: T0 }, {
      id: 'a-erase-me', webhookId: 70, ownerId: 7, messageId: deliveryTask(70, 1).messageId, eventId: 'e1', eventType: 'file.uploaded', attempt: 1, at: T0, outcome: 'succeeded', status: 200, latencyMs: 3, error: null,
    });
    assert.match(await readFile(join(dir, 'webhooks.log'), 'utf8'), /erase-me/);
    const removed = store.removeOwner(7);
    await store.close();
    assert.deepEqual(await removed, { tasks: 1, attempts: 1 });
    assert.doesNotMatch(await readFile(join(dir, 'webhooks.log'), 'utf8'), /erase-me/);
    const reopened = await openFileWebhookStore(dir);
    assert.equal(await reopened.pendingCount(80), 1);
    assert.deepEqual((await reopened.attempts(70, { limit: 5 })).items, []);
    assert.deepEqual(await reopened.schedule([deliveryTask(70, 1, { ownerId: 7 })]), [deliveryTask(70, 1).id]);
    await reopened.close();
  });

  it('cuts a torn last line off at open, with a warning', async () => {
    const dir = freshDir();
    const store = await openFileWebhookStore(dir);
    await store.setCheckpoint('g', 0, 7);
    await store.close();
    await appendFile(join(dir, 'webhooks.log'), '0000abcd {"c":[{"t":"c","g":"g","p":0,"v":9');
    const warnings: string[] = [];
    const reopened = await openFileWebhookStore(dir, { onWarning: (message) => warnings.push(message) });
    assert.equal(await reopened.checkpoint('g', 0), 7);
    assert.equal(warnings.length, 1);
    await reopened.close();
  });

  it('refuses a line that is not a webhook store record', async () => {
    const dir = freshDir();
    const store = await openFileWebhookStore(dir);
    await store.close();
    const { encodeRecord } = await import('@docshare/durable-log');
    await writeFile(join(dir, 'webhooks.log'), Buffer.concat([encodeRecord('{"x":1}'), encodeRecord('{"c":[]}')]));
    await assert.rejects(openFileWebhookStore(dir), /not a webhook store record/);
  });

  it('what was acknowledged survives kill -9', async () => {
    const dir = freshDir();
    const script = join(root, 'writer.ts');
    const store = pathToFileURL(join(import.meta.dirname, '../src/store/file-store.ts')).href;
    const contract = pathToFileURL(join(import.meta.dirname, '../src/store/contract.ts')).href;
    await writeFile(script, `
      import { openFileWebhookStore } from ${JSON.stringify(store)};
      import { deliveryTask } from ${JSON.stringify(contract)};
      const store = await openFileWebhookStore(${JSON.stringify(dir)});
      for (let n = 1; ; n++) {
        await store.schedule([deliveryTask(1, n)]);
        await store.settle(deliveryTask(1, n).id, { state: 'succeeded', attempts: 1, nextAt: 0, lastError: null, lastStatus: 200, now: n }, null);
        await store.setCheckpoint('g', 0, n);
        process.stdout.write(n + '\\n');
      }
    `);
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let acked = 0;
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', () => resolve());
      child.stdout.on('data', (data: Buffer) => {
        out += data.toString();
        const done = out.split('\n').filter((l) => l !== '');
        acked = Number(done.at(-1));
        if (acked >= 50 && child.exitCode === null && !child.killed) child.kill('SIGKILL');
      });
    });
    assert.equal(child.signalCode, 'SIGKILL');
    const reopened = await openFileWebhookStore(dir);
    const checkpoint = await reopened.checkpoint('g', 0);
    assert.ok(checkpoint >= acked, `checkpoint ${checkpoint} < acknowledged ${acked}`);
    for (let n = 1; n <= checkpoint; n++) assert.deepEqual(await reopened.schedule([deliveryTask(1, n)]), [], `task ${n} kept`);
    // Only a task scheduled after the last checkpoint can still be pending (its settle was cut off).
    const pending = (await reopened.claimDue(Number.MAX_SAFE_INTEGER / 2, 10, 1, 'd', none)).map((t) => t.id);
    assert.ok(pending.every((id) => id === deliveryTask(1, checkpoint + 1).id), pending.join());
    await reopened.close();
  });
});
