import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFile, copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { claimStoreContract } from '../src/contract.ts';
import { openFileClaimStore } from '../src/file-claim-store.ts';

const root = await mkdtemp(join(tmpdir(), 'docshare-claims-'));
after(async () => {
  await rm(root, { recursive: true, force: true });
});
let dirs = 0;
const freshDir = (): string => join(root, `store-${++dirs}`);
const logOf = (dir: string): string => join(dir, 'claims.log');
const lines = async (dir: string): Promise<string[]> =>
  (await readFile(logOf(dir), 'utf8')).split('\n').filter((l) => l !== '');

claimStoreContract('file', () => openFileClaimStore(freshDir()));

describe('file claim store', () => {
  it('keeps every claim across a reopen, first claim still winning', async () => {
    const dir = freshDir();
    const first = await openFileClaimStore(dir);
    await first.claim('email', 'ann@example.com', { accountId: 'a1' });
    await Promise.all(Array.from({ length: 30 }, (_, i) => first.claim('category', `c${i % 10}`, { n: i })));
    await first.claim('email', 'bob@example.com', { accountId: 'b1' });
    await first.close();

    const second = await openFileClaimStore(dir);
    assert.deepEqual(await second.get('email', 'ann@example.com'), { accountId: 'a1' });
    assert.deepEqual(await second.get('email', 'bob@example.com'), { accountId: 'b1' });
    for (let i = 0; i < 10; i++) assert.deepEqual(await second.get('category', `c${i}`), { n: i });
    assert.deepEqual(await second.claim('email', 'ann@example.com', { accountId: 'other' }), {
      created: false,
      value: { accountId: 'a1' },
    });
    await second.claim('email', 'cy@example.com', { accountId: 'c1' });
    await second.close();

    const third = await openFileClaimStore(dir);
    assert.deepEqual(await third.get('email', 'cy@example.com'), { accountId: 'c1' });
    await third.close();
  });

  it('opens a claims.log written before libs/durable-log (test fixture written by that version)', async () => {
    const dir = freshDir();
    await mkdir(dir, { recursive: true });
    await copyFile(fileURLToPath(new URL('../../durable-log/test/fixtures/v0/claims.v0-log', import.meta.url)), logOf(dir));
    const store = await openFileClaimStore(dir);
    assert.deepEqual(await store.get('email', 'ann@example.com'), { accountId: 'a1' });
    assert.deepEqual(await store.get('email', 'bob@example.com'), { accountId: 'b1' });
    assert.equal(await store.get('category', 'c1'), 1);
    assert.deepEqual(await store.claim('email', 'ann@example.com', { accountId: 'x' }), { created: false, value: { accountId: 'a1' } });
    await store.claim('email', 'cy@example.com', { accountId: 'c1' });
    await store.close();
    assert.equal((await lines(dir)).length, 3);
  });

  it('group-commits claims made together into one line', async () => {
    const dir = freshDir();
    const store = await openFileClaimStore(dir);
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.claim('s', `k${i}`, i)));
    assert.equal((await lines(dir)).length, 1);
    await store.claim('s', 'later', 'x');
    assert.equal((await lines(dir)).length, 2);
    await store.close();
  });

  it('never strands a claim made just as a group commit finishes', { timeout: 20_000 }, async () => {
    const dir = freshDir();
    const store = await openFileClaimStore(dir);
    // Ten chains, each claiming the moment its previous claim resolves: every possible point
    // between one flush ending and the next starting gets hit.
    await Promise.all(
      Array.from({ length: 10 }, async (_, chain) => {
        for (let i = 0; i < 30; i++) assert.equal((await store.claim('s', `${chain}-${i}`, i)).created, true);
      }),
    );
    await store.close();
    const reopened = await openFileClaimStore(dir);
    for (let chain = 0; chain < 10; chain++) assert.equal(await reopened.get('s', `${chain}-29`), 29);
    await reopened.close();
  });

  it('truncates an unterminated last line left by a crash mid-write', async () => {
    const dir = freshDir();
    const store = await openFileClaimStore(dir);
    await store.claim('s', 'kept', 1);
    await store.close();
    const goodLen = (await stat(logOf(dir))).size;
    await appendFile(logOf(dir), '0badc0de [["s","torn",');

    const reopened = await openFileClaimStore(dir);
    assert.equal((await stat(logOf(dir))).size, goodLen);
    assert.equal(await reopened.get('s', 'kept'), 1);
    assert.equal(await reopened.get('s', 'torn'), null);
    // New claims append after the good data, and the file reopens cleanly afterwards.
    await reopened.claim('s', 'torn', 2);
    await reopened.close();
    const again = await openFileClaimStore(dir);
    assert.equal(await again.get('s', 'torn'), 2);
    await again.close();
  });

  it('truncates a complete last line whose checksum fails', async () => {
    const dir = freshDir();
    const store = await openFileClaimStore(dir);
    await store.claim('s', 'kept', 1);
    await store.close();
    const goodLen = (await stat(logOf(dir))).size;
    await appendFile(logOf(dir), '00000000 [["s","bad",1]]\n');

    const reopened = await openFileClaimStore(dir);
    assert.equal((await stat(logOf(dir))).size, goodLen);
    assert.equal(await reopened.get('s', 'bad'), null);
    assert.equal(await reopened.get('s', 'kept'), 1);
    await reopened.close();
  });

  it('refuses to open when a line before the last is corrupt', async () => {
    const dir = freshDir();
    const store = await openFileClaimStore(dir);
    await store.claim('s', 'one', 'first value');
    await store.claim('s', 'two', 'second value');
    await store.close();
    const text = await readFile(logOf(dir), 'utf8');
    await writeFile(logOf(dir), text.replace('first value', 'forst value'));

    await assert.rejects(openFileClaimStore(dir), /corrupt at line 1/);
    // Refusing must not have "repaired" anything, and must not leave the path marked open.
    assert.equal(await readFile(logOf(dir), 'utf8'), text.replace('first value', 'forst value'));
    await assert.rejects(openFileClaimStore(dir), /corrupt at line 1/);
  });

  it('refuses a second open of the same directory in one process', async () => {
    const dir = freshDir();
    const store = await openFileClaimStore(dir);
    await assert.rejects(openFileClaimStore(dir), /already open/);
    await store.close();
    const reopened = await openFileClaimStore(dir);
    await reopened.close();
  });

  it('finishes claims in flight on close, then rejects new ones', async () => {
    const dir = freshDir();
    const store = await openFileClaimStore(dir);
    const inFlight = store.claim('s', 'k', 'v');
    await store.close();
    assert.deepEqual(await inFlight, { created: true, value: 'v' });
    await assert.rejects(store.claim('s', 'k2', 'v'), /closed/);
    const reopened = await openFileClaimStore(dir);
    assert.equal(await reopened.get('s', 'k'), 'v');
    await reopened.close();
  });

  it('undoes a claim whose write fails, cutting the file back so it still opens', { skip: process.platform !== 'linux' }, async () => {
    // A real write failure, no test hooks: a child process whose file-size limit (ulimit -f, in
    // 512-byte blocks) lets small lines through and fails a big one part-way with EFBIG.
    const dir = freshDir();
    const script = join(root, `write-failure-${dirs}.ts`);
    const adapter = fileURLToPath(new URL('../src/file-claim-store.ts', import.meta.url));
    await writeFile(
      script,
      `import { openFileClaimStore } from ${JSON.stringify(adapter)};
      const store = await openFileClaimStore(${JSON.stringify(dir)});
      await store.claim('s', 'before', 1);
      const [big, waiter, read] = await Promise.allSettled([
        store.claim('s', 'k', 'x'.repeat(10_000)),
        store.claim('s', 'k', 'small'),
        store.get('s', 'k'),
      ]);
      const after = await store.claim('s', 'after', 2);
      await store.close();
      process.stdout.write(JSON.stringify({ big: big.status === 'rejected' ? String(big.reason) : big.value, waiter, read, after }));
      `,
    );
    const child = spawnSync('bash', ['-c', 'ulimit -f 8 && exec "$0" "$1"', process.execPath, script], { encoding: 'utf8' });
    assert.equal(child.status, 0, child.stderr);
    const out = JSON.parse(child.stdout) as Record<string, unknown>;
    assert.match(String(out.big), /EFBIG/);
    // The waiter that saw the failed claim retried and took the key; the reader saw that value.
    assert.deepEqual(out.waiter, { status: 'fulfilled', value: { created: true, value: 'small' } });
    assert.deepEqual(out.read, { status: 'fulfilled', value: 'small' });
    assert.deepEqual(out.after, { created: true, value: 2 });

    const reopened = await openFileClaimStore(dir);
    assert.equal(await reopened.get('s', 'before'), 1);
    assert.equal(await reopened.get('s', 'k'), 'small');
    assert.equal(await reopened.get('s', 'after'), 2);
    await reopened.close();
    assert.equal((await lines(dir)).length, 3);
  });

  it('release takes the claim\'s bytes off the disk, keeps every other claim, and a reopen agrees', async () => {
    const dir = freshDir();
    const store = await openFileClaimStore(dir);
    const marker = 'erase-me-7f3a9c';
    await store.claim('account', 'key-ann', { userId: 1, name: marker, passwordHash: `scrypt$${marker}` });
    await Promise.all(Array.from({ length: 600 }, (_, i) => store.claim('category-name', `c${i}`, { categoryId: i })));
    await store.claim('account', 'key-bob', { userId: 2, name: 'Bob' });
    assert.ok((await readFile(logOf(dir), 'utf8')).includes(marker));

    // Claims made while the release rewrites the file land in the new file.
    const [released, ...during] = await Promise.all([
      store.release('account', 'key-ann'),
      ...Array.from({ length: 40 }, (_, i) => store.claim('during', `d${i}`, i)),
    ]);
    assert.equal(released, true);
    assert.ok(during.every((r) => r.created));
    const text = await readFile(logOf(dir), 'utf8');
    assert.equal(text.includes(marker), false);
    assert.equal(text.includes('key-ann'), false);
    await store.close();

    const reopened = await openFileClaimStore(dir);
    assert.equal(await reopened.get('account', 'key-ann'), null);
    assert.deepEqual(await reopened.get('account', 'key-bob'), { userId: 2, name: 'Bob' });
    for (let i = 0; i < 600; i++) assert.deepEqual(await reopened.get('category-name', `c${i}`), { categoryId: i });
    for (let i = 0; i < 40; i++) assert.equal(await reopened.get('during', `d${i}`), i);
    assert.deepEqual(await reopened.claim('account', 'key-ann', { userId: 3 }), { created: true, value: { userId: 3 } });
    await reopened.close();
    const again = await openFileClaimStore(dir);
    assert.deepEqual(await again.get('account', 'key-ann'), { userId: 3 });
    await again.close();
  });

  it('a release called just before close still takes the bytes off the disk', async () => {
    const dir = freshDir();
    const store = await openFileClaimStore(dir);
    await store.claim('account', 'k', 'secret-value-91c2');
    const released = store.release('account', 'k');
    await store.close();
    assert.equal(await released, true);
    assert.equal((await readFile(logOf(dir), 'utf8')).includes('secret-value-91c2'), false);
    await assert.rejects(store.release('account', 'k'), /closed/);
  });

  it('rejects values that are not JSON-serialisable, storing nothing', async () => {
    const store = await openFileClaimStore(freshDir());
    await assert.rejects(store.claim('s', 'k', undefined), TypeError);
    await assert.rejects(store.claim('s', 'k', () => 1), TypeError);
    assert.equal(await store.get('s', 'k'), null);
    assert.deepEqual(await store.claim('s', 'k', 'fine'), { created: true, value: 'fine' });
    await store.close();
  });
});
