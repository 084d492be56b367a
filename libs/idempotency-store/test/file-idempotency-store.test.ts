import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readFile, rm, writeFile, appendFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { idempotencyStoreContract } from '../src/contract.ts';
import { openFileIdempotencyStore } from '../src/file-idempotency-store.ts';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));
const freshDir = async (): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'idem-'));
  dirs.push(dir);
  return dir;
};

let contractDir = '';
idempotencyStoreContract('file', async () => openFileIdempotencyStore((contractDir = await freshDir())), async (closed) => {
  await closed.close();
  return openFileIdempotencyStore(contractDir);
});

describe('file idempotency store', () => {
  const answer = { status: 201, headers: {}, body: '{"status":"success"}' };

  it('drops a torn last line and keeps what was acknowledged', async () => {
    const dir = await freshDir();
    const store = await openFileIdempotencyStore(dir);
    const begun = await store.begin('k1', 1_000, 60_000);
    if (begun.state !== 'started') return assert.fail('not started');
    await store.complete('k1', begun.token, { fingerprint: 'f', answer, expiresAt: Date.now() + 60_000 });
    await store.close();
    await appendFile(join(dir, 'idempotency.log'), '0badc0de {"k":"k2"');
    const reopened = await openFileIdempotencyStore(dir);
    const seen = await reopened.begin('k1', 2_000, 60_000);
    assert.equal(seen.state, 'done');
    assert.equal((await reopened.begin('k2', 2_000, 60_000)).state, 'started');
    await reopened.close();
    assert.ok(!(await readFile(join(dir, 'idempotency.log'), 'utf8')).includes('"k2"'));
  });

  it('opens an idempotency.log written before libs/durable-log (test fixture written by that version)', async () => {
    const dir = await freshDir();
    await copyFile(fileURLToPath(new URL('../../durable-log/test/fixtures/v0/idempotency.v0-log', import.meta.url)), join(dir, 'idempotency.log'));
    const store = await openFileIdempotencyStore(dir, { now: () => 5_000 });
    const fixtureAnswer = { status: 201, headers: { 'x-consistency-token': 'abc' }, body: '{"status":"success"}' };
    for (const key of ['live-1', 'live-2']) {
      assert.deepEqual(await store.begin(key, 5_000, 60_000), { state: 'done', fingerprint: `fp-${key}`, answer: fixtureAnswer, expiresAt: 4102444800000 });
    }
    assert.equal((await store.begin('expired', 5_000, 60_000)).state, 'started');
    assert.deepEqual(store.size(), { keys: 3, lines: 3 });
    await store.close();
  });

  it('refuses to open a log damaged before its last line', async () => {
    const dir = await freshDir();
    await writeFile(join(dir, 'idempotency.log'), 'deadbeef {"k":"x"}\n00000000 {}\n');
    await assert.rejects(openFileIdempotencyStore(dir), /corrupt at line 1/);
  });

  it('compacts expired keys away when it opens', async () => {
    const dir = await freshDir();
    let now = 1_000_000;
    const store = await openFileIdempotencyStore(dir, { now: () => now });
    for (let i = 0; i < 100; i++) {
      const begun = await store.begin(`k${i}`, now, 60_000);
      if (begun.state !== 'started') return assert.fail('not started');
      await store.complete(`k${i}`, begun.token, { fingerprint: 'f', answer, expiresAt: i < 90 ? now + 10 : Date.now() + 3_600_000 });
    }
    await store.close();
    now += 1_000;
    const reopened = await openFileIdempotencyStore(dir, { now: () => now });
    const lines = (await readFile(join(dir, 'idempotency.log'), 'utf8')).trim().split('\n');
    assert.equal(lines.length, 10);
    assert.equal((await reopened.begin('k95', now, 60_000)).state, 'done');
    assert.equal((await reopened.begin('k5', now, 60_000)).state, 'started');
    await reopened.close();
  });

  /** Completes `key` with an answer that expires at `expiresAt`. */
  const keep = async (store: Awaited<ReturnType<typeof openFileIdempotencyStore>>, key: string, at: number, expiresAt: number): Promise<void> => {
    const begun = await store.begin(key, at, 60_000);
    if (begun.state !== 'started') return assert.fail(`${key} not started`);
    assert.equal(await store.complete(key, begun.token, { fingerprint: `f-${key}`, answer, expiresAt }), true);
  };
  const lineCount = async (dir: string): Promise<number> =>
    (await readFile(join(dir, 'idempotency.log'), 'utf8')).split('\n').filter((line) => line !== '').length;

  it('while running, expired keys leave memory and disk; live keys still replay, after compaction and after a restart', async () => {
    const dir = await freshDir();
    let now = 1_000_000;
    const store = await openFileIdempotencyStore(dir, { now: () => now, compactEveryMs: 3_600_000 });
    for (let i = 0; i < 40; i++) await keep(store, `old${i}`, now, now + 1_000);
    for (let i = 0; i < 5; i++) await keep(store, `live${i}`, now, now + 86_400_000);
    // A request in flight whose process stalled past its lease is dropped too; one within it is not.
    await store.begin('lapsed', now, 500);
    await store.begin('flying', now, 60_000);
    assert.deepEqual(store.size(), { keys: 47, lines: 45 });
    assert.equal(await lineCount(dir), 45);

    now += 2_000;
    await store.compact();
    assert.deepEqual(store.size(), { keys: 6, lines: 5 }, 'the 40 expired answers and the lapsed lease are gone from memory');
    assert.equal(await lineCount(dir), 5, 'and the expired answers from the file');
    for (let i = 0; i < 5; i++) {
      const seen = await store.begin(`live${i}`, now, 60_000);
      assert.equal(seen.state === 'done' && seen.fingerprint, `f-live${i}`);
    }
    assert.equal((await store.begin('old3', now, 60_000)).state, 'started', 'an expired key is a new key');
    assert.equal((await store.begin('flying', now, 60_000)).state, 'in_flight');

    // Appends go on into the new file, and everything kept survives a restart.
    await keep(store, 'after', now, now + 86_400_000);
    assert.equal(await lineCount(dir), 6);
    await store.close();
    const reopened = await openFileIdempotencyStore(dir, { now: () => now });
    for (const key of ['live0', 'live4', 'after']) {
      const seen = await reopened.begin(key, now, 60_000);
      assert.equal(seen.state === 'done' && seen.fingerprint, `f-${key}`);
    }
    assert.equal((await reopened.begin('old7', now, 60_000)).state, 'started');
    await reopened.close();
  });

  it('compacts on its own, every compactEveryMs, while appends go on', async () => {
    const dir = await freshDir();
    let now = 1_000_000;
    const store = await openFileIdempotencyStore(dir, { now: () => now, compactEveryMs: 20 });
    for (let i = 0; i < 30; i++) await keep(store, `old${i}`, now, now + 1_000);
    now += 2_000;
    // Appends racing the timer's compactions: each one kept, none written to a replaced file.
    for (let i = 0; i < 30; i++) await keep(store, `new${i}`, now, now + 86_400_000);
    // Polled until the timer has run (bounded by the test's own timeout, never by a wall-time assertion).
    while (store.size().lines > 30) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(store.size(), { keys: 30, lines: 30 });
    await store.close();
    assert.equal(await lineCount(dir), 30);
    const reopened = await openFileIdempotencyStore(dir, { now: () => now });
    for (let i = 0; i < 30; i++) assert.equal((await reopened.begin(`new${i}`, now, 60_000)).state, 'done');
    await reopened.close();
  });

  it('removeScope takes the scope\'s answers off the disk at once, expired ones included, and a reopen agrees', async () => {
    const dir = await freshDir();
    let now = 1_000_000;
    const store = await openFileIdempotencyStore(dir, { now: () => now, compactEveryMs: 3_600_000 });
    await keep(store, '12/expired-marker-a1', now, now + 1_000);
    await keep(store, '12/live-marker-b2', now, now + 86_400_000);
    for (let i = 0; i < 10; i++) await keep(store, `123/k${i}`, now, now + 86_400_000);
    now += 2_000;
    // The expired answer leaves memory when looked at, its line stays until a compaction.
    assert.equal((await store.begin('12/expired-marker-a1', now, 60_000)).state, 'started');
    assert.equal(await store.removeScope('12/'), 1);
    const text = await readFile(join(dir, 'idempotency.log'), 'utf8');
    assert.equal(text.includes('marker'), false);
    assert.equal(await lineCount(dir), 10);
    await store.close();
    const reopened = await openFileIdempotencyStore(dir, { now: () => now });
    assert.equal((await reopened.begin('12/live-marker-b2', now, 60_000)).state, 'started');
    const kept = await reopened.begin('123/k3', now, 60_000);
    assert.equal(kept.state === 'done' && kept.fingerprint, 'f-123/k3');
    await reopened.close();
  });

  it('an answer completed while its scope is being removed does not stay on disk', async () => {
    const dir = await freshDir();
    const store = await openFileIdempotencyStore(dir);
    const begun = await store.begin('12/racing-marker', Date.now(), 60_000);
    if (begun.state !== 'started') return assert.fail('not started');
    await keep(store, '13/other', Date.now(), Date.now() + 86_400_000);
    // complete's append is queued before removeScope's compaction: it is written, then forgotten.
    const [late, removed] = await Promise.all([
      store.complete('12/racing-marker', begun.token, { fingerprint: 'late', answer, expiresAt: Date.now() + 86_400_000 }),
      store.removeScope('12/'),
    ]);
    assert.equal(late, false);
    assert.equal(removed, 0);
    assert.equal((await readFile(join(dir, 'idempotency.log'), 'utf8')).includes('racing-marker'), false);
    await store.close();
    const reopened = await openFileIdempotencyStore(dir);
    assert.equal((await reopened.begin('12/racing-marker', Date.now(), 60_000)).state, 'started');
    await reopened.close();
  });

  it('a removal called just before close still takes the answers off the disk', async () => {
    const dir = await freshDir();
    const store = await openFileIdempotencyStore(dir);
    await keep(store, '12/closing-marker', Date.now(), Date.now() + 86_400_000);
    const removed = store.removeScope('12/');
    await store.close();
    assert.equal(await removed, 1);
    assert.equal((await readFile(join(dir, 'idempotency.log'), 'utf8')).includes('closing-marker'), false);
  });

  it('one store per file per process', async () => {
    const dir = await freshDir();
    const store = await openFileIdempotencyStore(dir);
    await assert.rejects(openFileIdempotencyStore(dir), /already open/);
    await store.close();
  });
});
