import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { Client } from 'minio';
import { blobStoreContract } from '../src/contract.ts';
import { makeMinioBlobStore } from '../src/minio-blob-store.ts';
import type { BlobStore } from '../src/port.ts';
import { assertLargePutBounded } from './large-put.ts';

/*
 * Against a real MinIO: MINIO_ENDPOINT, MINIO_ACCESS_KEY, MINIO_SECRET_KEY (see
 * /root/.cache/docshare/data/stack.env or docs/minio-redis.md). Each run works in a fresh random
 * bucket and removes it afterwards.
 */
const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(`${name} is not set: this integration test needs a running MinIO ` +
      '(MINIO_ENDPOINT, MINIO_ACCESS_KEY, MINIO_SECRET_KEY; e.g. `set -a; . /root/.cache/docshare/data/stack.env; set +a`)');
  }
  return value;
};
const endPoint = env('MINIO_ENDPOINT');
const accessKey = env('MINIO_ACCESS_KEY');
const secretKey = env('MINIO_SECRET_KEY');

const MiB = 1024 * 1024;
const bucket = `docshare-test-${randomUUID().slice(0, 13)}`;
const url = new URL(endPoint);
const admin = new Client({
  endPoint: url.hostname, port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
  useSSL: url.protocol === 'https:', accessKey, secretKey,
});
const made: string[] = [bucket];

const dropBucket = async (name: string): Promise<void> => {
  if (!(await admin.bucketExists(name))) return;
  const names: string[] = [];
  for await (const item of admin.listObjectsV2(name, '', true)) {
    if (typeof item.name === 'string') names.push(item.name);
  }
  if (names.length > 0) await admin.removeObjects(name, names);
  for await (const upload of admin.listIncompleteUploads(name, '', true)) {
    await admin.removeIncompleteUpload(name, upload.key);
  }
  await admin.removeBucket(name);
};
after(async () => {
  for (const name of made) await dropBucket(name);
});

const incompleteUploads = async (key: string): Promise<number> => {
  let count = 0;
  for await (const upload of admin.listIncompleteUploads(bucket, key, true)) {
    if (upload.key === key) count++;
  }
  return count;
};
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

// partSize 5 MiB (the S3 minimum) so the contract's ~5 MB blob goes through a multipart upload
// while its small blobs go through a single PUT: both paths pass the same contract.
blobStoreContract('minio', () => makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket, partSize: 5 * MiB }));

describe('minio blob store', () => {
  let store: BlobStore;
  before(async () => {
    // The bucket exists already (made by the contract's store or not): opening again is fine.
    store = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket, partSize: 5 * MiB });
  });
  const key = (): string => `t-${randomUUID()}`;

  it('rejects content types that cannot travel in an HTTP header', async () => {
    for (const contentType of ['', 'text/plain\r\nX-Evil: 1', 'text/plain; name=wörd', 'x'.repeat(1025)]) {
      const body = Readable.from([Buffer.from('x')]);
      await assert.rejects(store.put(key(), body, 1, contentType), TypeError);
      assert.ok(body.destroyed);
    }
  });

  it('refuses a malformed endpoint or a part size below the S3 minimum', async () => {
    await assert.rejects(makeMinioBlobStore({ endPoint: 'ftp://x:21', accessKey, secretKey, bucket }), TypeError);
    await assert.rejects(makeMinioBlobStore({ endPoint: `${endPoint}/prefix`, accessKey, secretKey, bucket }), TypeError);
    await assert.rejects(makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket, partSize: MiB }), RangeError);
  });

  it('opens the same new bucket from several stores at once (concurrent creators)', async () => {
    const fresh = `docshare-test-${randomUUID().slice(0, 13)}`;
    made.push(fresh);
    const stores = await Promise.all(Array.from({ length: 4 }, () =>
      makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket: fresh })));
    await stores[0]!.put('shared', Readable.from([Buffer.from('hi')]), 2, 'text/plain');
    assert.deepEqual(await stores[3]!.stat('shared'), { size: 2, contentType: 'text/plain' });
  });

  describe('multipart puts (size > partSize)', () => {
    it('stores blobs of exactly one part plus one byte and exactly two parts', async () => {
      for (const size of [5 * MiB + 1, 10 * MiB]) {
        const k = key();
        const bytes = randomBytes(size);
        // Chunks that straddle part boundaries.
        const chunks: Buffer[] = [];
        for (let at = 0; at < size; at += 1_000_003) chunks.push(bytes.subarray(at, at + 1_000_003));
        await store.put(k, Readable.from(chunks), size, 'application/zip');
        const blob = await store.get(k);
        assert.ok(blob);
        assert.equal(blob.size, size);
        assert.equal(blob.contentType, 'application/zip');
        assert.equal(sha256(await buffer(blob.body)), sha256(bytes));
        const tail = await store.get(k, { start: size - 3, end: size + 10 });
        assert.ok(tail);
        assert.deepEqual(tail.range, { start: size - 3, end: size - 1 });
        assert.deepEqual(await buffer(tail.body), bytes.subarray(size - 3));
        await store.remove(k);
      }
    });

    it('a short, a long or a failing body stores nothing and leaves no upload behind', async () => {
      const k = key();
      const part = randomBytes(3 * MiB);
      // Short: 6 MiB of a declared 7 MiB (one part already sent when the body ends).
      await assert.rejects(store.put(k, Readable.from([part, part]), 7 * MiB, 'text/plain'), /6291456 bytes, declared 7340032/);
      // Long: 9 MiB for a declared 8 MiB, noticed after the first part went out.
      await assert.rejects(store.put(k, Readable.from([part, part, part]), 8 * MiB, 'text/plain'), /longer/);
      // Long by the very last byte, arriving after every declared byte (and so every part) was sent.
      await assert.rejects(store.put(k, Readable.from([part, part, Buffer.from('x')]), 6 * MiB, 'text/plain'), /longer/);
      // The source fails after a part went out.
      let sent = 0;
      const failing = new Readable({
        read() {
          if (sent++ < 3) this.push(part);
          else this.destroy(new Error('connection reset'));
        },
      });
      await assert.rejects(store.put(k, failing, 20 * MiB, 'text/plain'), /connection reset/);
      assert.equal(await store.stat(k), null);
      assert.equal(await store.get(k), null);
      assert.equal(await incompleteUploads(k), 0, 'failed multipart uploads are aborted');
    });

    it('a failed multipart put over an existing blob keeps it', async () => {
      const k = key();
      const old = randomBytes(6 * MiB);
      await store.put(k, Readable.from([old]), old.length, 'application/pdf');
      await assert.rejects(store.put(k, Readable.from([randomBytes(6 * MiB)]), 7 * MiB, 'text/html'));
      await assert.rejects(store.put(k, Readable.from([randomBytes(8 * MiB)]), 7 * MiB, 'text/html'));
      assert.deepEqual(await store.stat(k), { size: old.length, contentType: 'application/pdf' });
      const blob = await store.get(k);
      assert.ok(blob);
      assert.equal(sha256(await buffer(blob.body)), sha256(old));
      assert.equal(await incompleteUploads(k), 0);
      await store.remove(k);
    });
  });

  it('keeps memory bounded while storing a 256 MB body (default 16 MiB parts)', async () => {
    const big = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket });
    await assertLargePutBounded(big, key(), ({ seconds, peakBytes }) => {
      console.log(`# 256 MB put: ${seconds.toFixed(1)} s, peak live memory growth ${(peakBytes / MiB).toFixed(1)} MB`);
    });
  });
});
