import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { after, describe, it } from 'node:test';
import { blobStoreContract } from '../src/contract.ts';
import { makeFsBlobStore } from '../src/fs-blob-store.ts';
import { assertLargePutBounded } from './large-put.ts';

const root = await mkdtemp(join(tmpdir(), 'docshare-blob-'));
after(async () => {
  await rm(root, { recursive: true, force: true });
});
let dirs = 0;
const freshDir = (): string => join(root, `store-${++dirs}`);

blobStoreContract('fs', () => makeFsBlobStore(freshDir()));

describe('fs blob store', () => {
  it('keeps memory bounded while storing a 256 MB body', async () => {
    await assertLargePutBounded(await makeFsBlobStore(freshDir()), 'big');
  });

  it('keeps memory bounded while storing a 256 MB body of unknown size', async () => {
    await assertLargePutBounded(await makeFsBlobStore(freshDir()), 'big', undefined, { declared: false });
  });

  it('reads blobs written with the earlier header (size not padded)', async () => {
    const dir = freshDir();
    const store = await makeFsBlobStore(dir);
    const json = Buffer.from(JSON.stringify({ size: 5, contentType: 'text/plain' }));
    const prefix = Buffer.alloc(8);
    prefix.write('DSB1', 0, 'latin1');
    prefix.writeUInt32BE(json.length, 4);
    await mkdir(join(dir, 'blobs', 'ol'), { recursive: true });
    await writeFile(join(dir, 'blobs', 'ol', 'old-blob'), Buffer.concat([prefix, json, Buffer.from('hello')]));
    assert.deepEqual(await store.stat('old-blob'), { size: 5, contentType: 'text/plain' });
    const blob = await store.get('old-blob', { start: 1, end: 3 });
    assert.ok(blob);
    assert.deepEqual(await buffer(blob.body), Buffer.from('ell'));
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

  it('lists only blobs: not puts in flight, stray files or names that are not keys', async () => {
    const dir = freshDir();
    const store = await makeFsBlobStore(dir);
    await store.put('f1-blob', Readable.from([Buffer.from('x')]), 1, 'text/plain');
    await writeFile(join(dir, 'tmp', 'in-flight'), 'half');
    await writeFile(join(dir, 'blobs', 'stray-file'), 'not a shard');
    await mkdir(join(dir, 'blobs', 'zz'), { recursive: true });
    await writeFile(join(dir, 'blobs', 'zz', 'f2-wrong-shard'), 'x');
    await writeFile(join(dir, 'blobs', 'zz', 'zz bad name'), 'x');
    await mkdir(join(dir, 'blobs', 'f1', 'f1-a-directory'), { recursive: true });
    const keys: string[] = [];
    for await (const { key } of store.list()) keys.push(key);
    assert.deepEqual(keys, ['f1-blob']);
  });

  it('a failed put leaves no temp file behind', async () => {
    const dir = freshDir();
    const store = await makeFsBlobStore(dir);
    await assert.rejects(store.put('short', Readable.from([Buffer.from('abc')]), 10, 'text/plain'));
    await assert.rejects(store.put('long', Readable.from([Buffer.from('abcdef')]), 3, 'text/plain'));
    await assert.rejects(store.put('over', Readable.from([Buffer.alloc(3 * 1024 * 1024)]), undefined, 'text/plain', { maxBytes: 1024 }));
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

  describe('multipart uploads on disk', () => {
    const MiB = 1024 * 1024;

    it('an upload survives the store reopening, and completes after it; leftovers of interrupted work are wiped', async () => {
      const dir = freshDir();
      const first = await makeFsBlobStore(dir);
      const uploadId = await first.createMultipart('f1-up', 'application/zip');
      const one = randomBytes(5 * MiB);
      const etag1 = await first.putPart('f1-up', uploadId, 1, Readable.from([one]), one.length);
      // A part being written and an upload being made or ended when the process died.
      await writeFile(join(dir, 'tmp', 'half-a-part'), 'x');
      await mkdir(join(dir, 'tmp', 'upload-interrupted'));

      const second = await makeFsBlobStore(dir);
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
      assert.deepEqual(await second.listParts('f1-up', uploadId), [{ partNumber: 1, size: one.length, etag: etag1 }]);
      const etag2 = await second.putPart('f1-up', uploadId, 2, Readable.from([Buffer.from('end')]), 3);
      assert.equal(await second.completeMultipart('f1-up', uploadId, [{ partNumber: 1, etag: etag1 }, { partNumber: 2, etag: etag2 }]), one.length + 3);
      assert.deepEqual(await second.stat('f1-up'), { size: one.length + 3, contentType: 'application/zip' });
      assert.deepEqual(await readdir(join(dir, 'multipart')), [], 'the completed upload is removed');
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
    });

    it('completing again after a crash that left the upload beside its blob makes the same blob', async () => {
      const dir = freshDir();
      const store = await makeFsBlobStore(dir);
      const uploadId = await store.createMultipart('f2-up', 'text/plain');
      const etag = await store.putPart('f2-up', uploadId, 1, Readable.from([Buffer.from('hello')]), 5);
      await cp(join(dir, 'multipart', uploadId), join(root, `saved-${uploadId}`), { recursive: true });
      assert.equal(await store.completeMultipart('f2-up', uploadId, [{ partNumber: 1, etag }]), 5);
      // The crash: the blob published, the upload not yet removed.
      await cp(join(root, `saved-${uploadId}`), join(dir, 'multipart', uploadId), { recursive: true });
      assert.equal(await store.completeMultipart('f2-up', uploadId, [{ partNumber: 1, etag }]), 5);
      const blob = await store.get('f2-up');
      assert.ok(blob);
      assert.deepEqual(await buffer(blob.body), Buffer.from('hello'));
      assert.equal(await store.listParts('f2-up', uploadId), null);
    });

    it('a refused or failed part leaves no temp file behind', async () => {
      const dir = freshDir();
      const store = await makeFsBlobStore(dir);
      const uploadId = await store.createMultipart('f3-up', 'text/plain');
      await assert.rejects(store.putPart('f3-up', uploadId, 1, Readable.from([Buffer.from('abc')]), 10));
      await assert.rejects(store.putPart('f3-up', uploadId, 1, Readable.from([Buffer.alloc(3 * MiB)]), 1024));
      assert.deepEqual(await readdir(join(dir, 'tmp')), []);
      assert.deepEqual(await readdir(join(dir, 'multipart', uploadId)), ['upload.json']);
    });
  });
});
