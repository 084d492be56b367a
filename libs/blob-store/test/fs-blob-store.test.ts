import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { after, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { blobStoreContract } from '../src/contract.ts';
import { makeFsBlobStore } from '../src/fs-blob-store.ts';

const root = await mkdtemp(join(tmpdir(), 'docshare-blob-'));
after(async () => {
  await rm(root, { recursive: true, force: true });
});
let dirs = 0;
const freshDir = (): string => join(root, `store-${++dirs}`);

blobStoreContract('fs', () => makeFsBlobStore(freshDir()));

// A real collector makes the memory bound measure live data, not garbage not yet collected.
const gc = ((): (() => void) => {
  if (typeof global.gc === 'function') return global.gc as () => void;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();
const liveBytes = (): number => {
  gc();
  const { arrayBuffers, heapUsed } = process.memoryUsage();
  return arrayBuffers + heapUsed;
};

describe('fs blob store', () => {
  it('rejects keys that are not plain server-made names', async () => {
    const store = await makeFsBlobStore(freshDir());
    const bad = ['../x', 'a/b', '', '.hidden', '..', 'a\\b', 'a\0b', 'x'.repeat(201), '-lead', 'sp ace'];
    for (const key of bad) {
      const body = Readable.from([Buffer.from('x')]);
      await assert.rejects(store.put(key, body, 1, 'text/plain'), TypeError, `put ${JSON.stringify(key)}`);
      assert.ok(body.destroyed, 'a rejected body is released');
      await assert.rejects(store.get(key), TypeError);
      await assert.rejects(store.stat(key), TypeError);
      await assert.rejects(store.remove(key), TypeError);
    }
    // The longest and most punctuated valid keys do work.
    for (const key of ['A'.repeat(200), 'a', 'a.b_c-d', '0..1']) {
      await store.put(key, Readable.from([Buffer.from('ok')]), 2, 'text/plain');
      assert.deepEqual(await store.stat(key), { size: 2, contentType: 'text/plain' });
    }
  });

  it('keeps memory bounded while storing a 256 MB body', async () => {
    const store = await makeFsBlobStore(freshDir());
    const chunkSize = 64 * 1024;
    const total = 256 * 1024 * 1024;
    const sampleEvery = 16 * 1024 * 1024;
    const base = liveBytes();
    let peak = 0;
    let produced = 0;
    // Each chunk is a fresh allocation, so a store that held on to chunks would show it.
    const body = new Readable({
      read() {
        if (produced === total) {
          this.push(null);
          return;
        }
        this.push(Buffer.alloc(chunkSize, (produced / chunkSize) % 256));
        produced += chunkSize;
        if (produced % sampleEvery === 0) peak = Math.max(peak, liveBytes() - base);
      },
    });
    await store.put('big', body, total, 'application/octet-stream');
    peak = Math.max(peak, liveBytes() - base);
    assert.ok(peak < 64 * 1024 * 1024, `live memory grew by ${(peak / 2 ** 20).toFixed(1)} MB`);

    assert.deepEqual(await store.stat('big'), { size: total, contentType: 'application/octet-stream' });
    const tail = await store.get('big', { start: total - 2, end: total + 100 });
    assert.ok(tail);
    assert.deepEqual(tail.range, { start: total - 2, end: total - 1 });
    assert.deepEqual(await buffer(tail.body), Buffer.from([255, 255]));
    await store.remove('big');
  });

  it('removes leftover temp files when a store opens the directory, keeping stored blobs', async () => {
    const dir = freshDir();
    const first = await makeFsBlobStore(dir);
    await first.put('kept', Readable.from([Buffer.from('still here')]), 10, 'text/plain');
    // What a crash mid-put leaves behind: a temp file that was never renamed into place.
    await writeFile(join(dir, 'tmp', 'interrupted-put'), 'half a blob');
    assert.equal((await readdir(join(dir, 'tmp'))).length, 1);

    const second = await makeFsBlobStore(dir);
    assert.deepEqual(await readdir(join(dir, 'tmp')), []);
    const blob = await second.get('kept');
    assert.ok(blob);
    assert.equal(blob.contentType, 'text/plain');
    assert.deepEqual(await buffer(blob.body), Buffer.from('still here'));
  });

  it('a failed put leaves no temp file behind', async () => {
    const dir = freshDir();
    const store = await makeFsBlobStore(dir);
    await assert.rejects(store.put('short', Readable.from([Buffer.from('abc')]), 10, 'text/plain'));
    await assert.rejects(store.put('long', Readable.from([Buffer.from('abcdef')]), 3, 'text/plain'));
    assert.deepEqual(await readdir(join(dir, 'tmp')), []);
  });

  it('serves a blob still being read while it is replaced', async () => {
    const store = await makeFsBlobStore(freshDir());
    const before = Buffer.alloc(300_000, 1);
    await store.put('doc', Readable.from([before]), before.length, 'text/plain');
    const reading = await store.get('doc');
    assert.ok(reading);
    await store.put('doc', Readable.from([Buffer.from('new')]), 3, 'text/html');
    // The open read keeps the old file's bytes and its own content type.
    assert.equal(reading.contentType, 'text/plain');
    assert.deepEqual(await buffer(reading.body), before);
    assert.deepEqual(await store.stat('doc'), { size: 3, contentType: 'text/html' });
  });
});
