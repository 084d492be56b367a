import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFile, writeFile, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dataKeyStoreContract, fakeWrapped } from '../src/contract.ts';
import { openFileKeyStore } from '../src/file-key-store.ts';
import { makeMemoryKeyStore } from '../src/memory-key-store.ts';

const root = await mkdtemp(join(tmpdir(), 'docshare-data-keys-'));
after(async () => {
  await rm(root, { recursive: true, force: true });
});
let dirs = 0;
const freshDir = (): string => join(root, `store-${++dirs}`);
const logOf = (dir: string): string => join(dir, 'data-keys.log');

/** Every file under `dir` (recursively), as text: where a wrapped key could still be on disk. */
const everyFileText = async (dir: string): Promise<string> => {
  const names = await readdir(dir, { recursive: true, withFileTypes: true });
  const texts = await Promise.all(names.filter((d) => d.isFile()).map((d) => readFile(join(d.parentPath, d.name), 'latin1')));
  return texts.join('\n');
};

dataKeyStoreContract('file', async () => ({ store: await openFileKeyStore(freshDir()), cleanup: async () => {} }));
dataKeyStoreContract('memory', async () => ({ store: makeMemoryKeyStore(), cleanup: async () => {} }));

describe('file data key store', () => {
  it('after destroy the wrapped key is in no file under the directory, others stay', async () => {
    const dir = freshDir();
    const store = await openFileKeyStore(dir);
    const gone = fakeWrapped();
    const kept = fakeWrapped();
    await store.create('user-1', gone);
    await store.create('user-2', kept);
    // A rewrapped key's earlier wrapping must go too.
    const rewrapped = fakeWrapped('k2');
    await store.create('user-3', fakeWrapped());
    const three = (await store.get(['user-3'])).get('user-3');
    assert.ok(three?.state === 'live');
    assert.equal(await store.rewrap('user-3', three.wrapped, rewrapped), true);
    assert.ok((await everyFileText(dir)).includes(gone.ct));

    await store.destroy('user-1', '2026-01-01T00:00:00.000Z');
    await store.destroy('user-3', '2026-01-01T00:00:00.000Z');
    const text = await everyFileText(dir);
    for (const ct of [gone.ct, gone.tag, gone.iv, three.wrapped.ct, rewrapped.ct]) assert.equal(text.includes(ct), false, ct);
    assert.ok(text.includes(kept.ct));
    await store.close();
  });

  it('a destroy racing a create or a rewrap of the key leaves none of its wrappings on disk', async () => {
    const dir = freshDir();
    const store = await openFileKeyStore(dir);
    const created = fakeWrapped();
    await Promise.all([store.create('user-1', created), store.destroy('user-1', '2026-01-01T00:00:00.000Z')]);
    const first = fakeWrapped();
    const next = fakeWrapped('k2');
    await store.create('user-2', first);
    const [rewrapped] = await Promise.all([store.rewrap('user-2', first, next), store.destroy('user-2', '2026-01-01T00:00:00.000Z')]);
    assert.equal(rewrapped, true);
    assert.deepEqual([...(await store.get(['user-1', 'user-2'])).values()].map((key) => key.state), ['destroyed', 'destroyed']);
    const text = await everyFileText(dir);
    for (const ct of [created.ct, first.ct, next.ct]) assert.equal(text.includes(ct), false, ct);
    await store.close();
  });

  it('keeps everything across a reopen: live keys, rewraps, tombstones', async () => {
    const dir = freshDir();
    const first = await openFileKeyStore(dir);
    const one = fakeWrapped();
    const two = fakeWrapped();
    const twoNext = fakeWrapped('k2');
    await Promise.all([first.create('user-1', one), first.create('user-2', two), first.create('user-3', fakeWrapped())]);
    assert.equal(await first.rewrap('user-2', two, twoNext), true);
    await first.destroy('user-3', '2026-01-01T00:00:00.000Z');
    await first.destroy('email-index', '2026-01-01T00:00:01.000Z');
    await first.close();

    const second = await openFileKeyStore(dir);
    const expected = [
      { id: 'email-index', key: { state: 'destroyed', destroyedAt: '2026-01-01T00:00:01.000Z' } },
      { id: 'user-1', key: { state: 'live', wrapped: one } },
      { id: 'user-2', key: { state: 'live', wrapped: twoNext } },
      { id: 'user-3', key: { state: 'destroyed', destroyedAt: '2026-01-01T00:00:00.000Z' } },
    ];
    assert.deepEqual(await second.list(null, 10), expected);
    assert.equal((await second.create('user-3', fakeWrapped())).state, 'destroyed');
    await second.close();
    const third = await openFileKeyStore(dir);
    assert.deepEqual(await third.list(null, 10), expected);
    await third.close();
  });

  it('cuts a torn last line off at open and keeps the rest', async () => {
    const dir = freshDir();
    const store = await openFileKeyStore(dir);
    const one = fakeWrapped();
    await store.create('user-1', one);
    await store.close();
    const goodLength = (await stat(logOf(dir))).size;
    await appendFile(logOf(dir), '0badc0de {"id":"user-2","key":{"state":"li');

    const reopened = await openFileKeyStore(dir);
    assert.equal((await stat(logOf(dir))).size, goodLength);
    assert.deepEqual(await reopened.list(null, 10), [{ id: 'user-1', key: { state: 'live', wrapped: one } }]);
    const two = fakeWrapped();
    assert.deepEqual(await reopened.create('user-2', two), { state: 'live', wrapped: two });
    await reopened.close();
    const again = await openFileKeyStore(dir);
    assert.deepEqual((await again.get(['user-2'])).get('user-2'), { state: 'live', wrapped: two });
    await again.close();
  });

  it('compacts at open when a crash left a destroyed key\'s bytes before its tombstone', async () => {
    const dir = freshDir();
    const store = await openFileKeyStore(dir);
    const gone = fakeWrapped();
    await store.create('user-1', gone);
    await store.create('user-2', fakeWrapped());
    await store.close();
    // What a crash between the tombstone's append and the compaction leaves.
    const { encodeRecord } = await import('@docshare/durable-log');
    await appendFile(logOf(dir), encodeRecord(JSON.stringify({ id: 'user-1', key: { state: 'destroyed', destroyedAt: 'x' } })));
    assert.ok((await readFile(logOf(dir), 'utf8')).includes(gone.ct));

    const reopened = await openFileKeyStore(dir);
    assert.equal((await everyFileText(dir)).includes(gone.ct), false);
    assert.deepEqual((await reopened.get(['user-1'])).get('user-1'), { state: 'destroyed', destroyedAt: 'x' });
    assert.equal((await readFile(logOf(dir), 'utf8')).split('\n').filter(Boolean).length, 2);
    await reopened.close();
  });

  it('refuses a record that is not a data key', async () => {
    const dir = freshDir();
    const store = await openFileKeyStore(dir);
    await store.create('user-1', fakeWrapped());
    await store.close();
    const { encodeRecord } = await import('@docshare/durable-log');
    await appendFile(logOf(dir), encodeRecord(JSON.stringify({ id: 'user-2', key: { state: 'live' } })));
    await appendFile(logOf(dir), encodeRecord(JSON.stringify({ id: 'user-3', key: { state: 'destroyed', destroyedAt: 'x' } })));
    await assert.rejects(openFileKeyStore(dir), /not a data key record/);
  });

  it('keeps only the port\'s fields of a wrapped key', async () => {
    const dir = freshDir();
    const store = await openFileKeyStore(dir);
    const wrapped = { ...fakeWrapped(), extra: 'secret-extra-field' };
    await store.create('user-1', wrapped);
    assert.deepEqual((await store.get(['user-1'])).get('user-1'), { state: 'live', wrapped: { kid: wrapped.kid, iv: wrapped.iv, ct: wrapped.ct, tag: wrapped.tag } });
    await store.close();
    assert.equal((await readFile(logOf(dir), 'utf8')).includes('secret-extra-field'), false);
  });

  it('undoes a create whose write fails, cutting the file back; a create waiting on it takes the id', async () => {
    // A real write failure, no test hooks: a child process whose file-size limit (ulimit -f, in
    // 512-byte blocks) lets small lines through and fails a big one part-way with EFBIG.
    const dir = freshDir();
    const script = join(root, `write-failure-${dirs}.ts`);
    const adapter = fileURLToPath(new URL('../src/file-key-store.ts', import.meta.url));
    await writeFile(
      script,
      `import { openFileKeyStore } from ${JSON.stringify(adapter)};
      const store = await openFileKeyStore(${JSON.stringify(dir)});
      const w = (ct) => ({ kid: 'k1', iv: 'iv', ct, tag: 'tag' });
      await store.create('user-0', w('before'));
      const [big, waiter, read] = await Promise.allSettled([
        store.create('user-1', w('x'.repeat(10_000))),
        store.create('user-1', w('small')),
        store.get(['user-1']),
      ]);
      const after = await store.create('user-2', w('after'));
      await store.close();
      process.stdout.write(JSON.stringify({ big: big.status === 'rejected' ? String(big.reason) : big.value, waiter, read: read.status === 'fulfilled' ? [...read.value] : read, after }));
      `,
    );
    const child = spawnSync('bash', ['-c', 'ulimit -f 8 && exec "$0" "$1"', process.execPath, script], { encoding: 'utf8' });
    assert.equal(child.status, 0, child.stderr);
    const out = JSON.parse(child.stdout) as Record<string, unknown>;
    const live = (ct: string): unknown => ({ state: 'live', wrapped: { kid: 'k1', iv: 'iv', ct, tag: 'tag' } });
    assert.match(String(out['big']), /EFBIG/);
    assert.deepEqual(out['waiter'], { status: 'fulfilled', value: live('small') });
    // A read waiting on the failed write sees the id free (the undo) or the waiter's key: never the failed one.
    assert.ok(JSON.stringify(out['read']) === '[]' || JSON.stringify(out['read']) === JSON.stringify([['user-1', live('small')]]), JSON.stringify(out['read']));
    assert.deepEqual(out['after'], live('after'));

    const reopened = await openFileKeyStore(dir);
    assert.deepEqual((await reopened.list(null, 10)).map(({ id, key }) => [id, key]), [
      ['user-0', live('before')], ['user-1', live('small')], ['user-2', live('after')],
    ]);
    await reopened.close();
  });

  it('finishes writes in flight on close, then refuses', async () => {
    const dir = freshDir();
    const store = await openFileKeyStore(dir);
    const wrapped = fakeWrapped();
    const inFlight = store.create('user-1', wrapped);
    await store.close();
    assert.deepEqual(await inFlight, { state: 'live', wrapped });
    await assert.rejects(store.create('user-2', fakeWrapped()), /closed/);
    const reopened = await openFileKeyStore(dir);
    assert.deepEqual((await reopened.get(['user-1'])).get('user-1'), { state: 'live', wrapped });
    await reopened.close();
  });
});
