import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { storageLedgerContract } from '../src/contract.ts';
import { openFileStorageLedger } from '../src/file-storage-ledger.ts';

const root = await mkdtemp(join(tmpdir(), 'docshare-ledger-'));
after(async () => {
  await rm(root, { recursive: true, force: true });
});
let dirs = 0;
const freshDir = (): string => join(root, `ledger-${++dirs}`);
const resolve = async () => 'not_recorded' as const;

storageLedgerContract('file', (options) => openFileStorageLedger(freshDir(), options));

describe('file storage ledger', () => {
  it('keeps settled bytes, entries in flight and the seeding mark across a reopen', async () => {
    const dir = freshDir();
    const first = await openFileStorageLedger(dir, { resolve });
    await first.seed(async () => new Map([[1, 100]]));
    await first.reserve(1, 'h', 50, 1_000);
    await first.pend(1, { kind: 'upload', fileId: 7, bytes: 40 }, 'h');
    await first.settle(1, { kind: 'upload', fileId: 7 });
    await first.reserve(2, 'crashed', 30, 1_000);
    await first.close();

    const second = await openFileStorageLedger(dir, { resolve });
    assert.equal(await second.usage(1), 140);
    assert.equal(await second.usage(2), 30);
    assert.equal(await second.seed(async () => new Map([[1, 999]])), false);
    await second.settle(1, { kind: 'upload', fileId: 7 });
    assert.equal(await second.usage(1), 140);
    await second.close();
  });

  it('reads a log the previous version wrote (entries without until) and repairs it as before', async () => {
    const dir = freshDir();
    await mkdir(dir, { recursive: true });
    const payload = JSON.stringify({ u: 1, v: 1, r: { used: 100, entries: { 'hold:h': { bytes: 50, at: 1_000 } }, recent: [] } });
    await writeFile(join(dir, 'storage-ledger.log'), `${crc32(payload).toString(16).padStart(8, '0')} ${payload}\n`);
    const ledger = await openFileStorageLedger(dir, { resolve, now: () => 1_000 + 60_001, leaseMs: 60_000, resolveHold: async () => 'open' });
    assert.equal(await ledger.usage(1), 100);
    await ledger.close();
  });

  it('keeps a session hold\'s until across a reopen', async () => {
    const dir = freshDir();
    const clock = { now: 1_000 };
    const options = { resolve, now: () => clock.now, leaseMs: 60_000 };
    const first = await openFileStorageLedger(dir, options);
    await first.reserve(1, 's', 40, 1_000, { until: 200_000 });
    await first.close();
    clock.now = 200_000;
    const second = await openFileStorageLedger(dir, options);
    assert.equal(await second.usage(1), 40);
    clock.now += 1;
    assert.equal(await second.usage(1), 0);
    await second.close();
  });

  it('compacts to one line per user and reads the same back', async () => {
    const dir = freshDir();
    const ledger = await openFileStorageLedger(dir, { resolve });
    for (let i = 1; i <= 350; i++) {
      await ledger.reserve(1, `h${i}`, 1, 10_000);
      await ledger.pend(1, { kind: 'upload', fileId: i, bytes: 1 }, `h${i}`);
      await ledger.settle(1, { kind: 'upload', fileId: i });
    }
    await ledger.close();
    // 1,050 lines written; compacted past 1,002 (two per user plus 1,000) to one, then 47 more.
    const lines = (await readFile(join(dir, 'storage-ledger.log'), 'utf8')).split('\n').filter((line) => line !== '');
    assert.ok(lines.length < 100, `${lines.length} lines`);
    const reopened = await openFileStorageLedger(dir, { resolve });
    assert.equal(await reopened.usage(1), 350);
    await reopened.close();
  });
});
