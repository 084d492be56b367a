import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { Client } from 'minio';
import { blobStoreContract } from '../src/contract.ts';
import { makeMinioBlobStore, parseEndPoint } from '../src/minio-blob-store.ts';
import { BlobTooLarge, type BlobStore } from '../src/port.ts';
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
const admin = new Client({ ...parseEndPoint(endPoint), accessKey, secretKey });
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

  describe('multipart puts of unknown size', () => {
    it('parts sent several at a time arrive in order: many parts, uneven chunks, every partsInFlight', async () => {
      const bytes = randomBytes(23 * MiB + 17);
      for (const partsInFlight of [1, 2, 4]) {
        const s = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket, partSize: 5 * MiB, partsInFlight });
        const k = key();
        const chunks: Buffer[] = [];
        for (let at = 0, step = 1; at < bytes.length; at += step, step = (step * 7 + 13) % 300_007 + 1) chunks.push(bytes.subarray(at, at + step));
        assert.equal(await s.put(k, Readable.from(chunks), undefined, 'application/zip'), bytes.length);
        const blob = await s.get(k);
        assert.ok(blob);
        assert.equal(blob.size, bytes.length);
        assert.equal(sha256(await buffer(blob.body)), sha256(bytes));
        await store.remove(k);
      }
    });

    it('a body ending exactly at a part boundary', async () => {
      for (const size of [5 * MiB, 10 * MiB]) {
        const k = key();
        const bytes = randomBytes(size);
        assert.equal(await store.put(k, Readable.from([bytes.subarray(0, 3 * MiB), bytes.subarray(3 * MiB)]), undefined, 'text/plain'), size);
        assert.deepEqual(await store.stat(k), { size, contentType: 'text/plain' });
        await store.remove(k);
      }
    });

    it('a failing body or one over maxBytes leaves no upload behind', async () => {
      const k = key();
      const part = randomBytes(3 * MiB);
      let sent = 0;
      const failing = new Readable({
        read() {
          if (sent++ < 4) this.push(part);
          else this.destroy(new Error('connection reset'));
        },
      });
      await assert.rejects(store.put(k, failing, undefined, 'text/plain'), /connection reset/);
      await assert.rejects(store.put(k, Readable.from([part, part, part, part]), undefined, 'text/plain', { maxBytes: 11 * MiB }), BlobTooLarge);
      assert.equal(await store.stat(k), null);
      assert.equal(await incompleteUploads(k), 0, 'failed multipart uploads are aborted');
    });

    it('a part the server refuses fails the put, stops reading the body, and aborts the upload', async () => {
      // A bucket removed under the store: every part is refused (NoSuchBucket / NoSuchUpload).
      const doomed = `docshare-test-${randomUUID().slice(0, 13)}`;
      made.push(doomed);
      const s = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket: doomed, partSize: 5 * MiB });
      let pulled = 0;
      const body = new Readable({
        read() {
          pulled += MiB;
          this.push(Buffer.alloc(MiB, 1));
        },
      });
      const started = s.put('refused', body, undefined, 'text/plain');
      // Once the upload exists, its parts are refused: remove every upload of the bucket.
      await new Promise((resolve) => setTimeout(resolve, 200));
      for await (const upload of admin.listIncompleteUploads(doomed, '', true)) await admin.removeIncompleteUpload(doomed, upload.key);
      await assert.rejects(started, (err: unknown) => (err as { code?: unknown }).code === 'NoSuchUpload');
      assert.ok(body.destroyed);
      assert.ok(pulled < 200 * MiB, `read ${pulled / MiB} MiB of an endless body`);
    });
  });

  describe('presigned GET URLs', () => {
    it('no publicEndPoint: no presignGet', () => {
      assert.equal(store.presignGet, undefined);
    });

    it('serves the bytes, a Range, and the answer headers asked for', async () => {
      const pub = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket, publicEndPoint: endPoint });
      assert.ok(pub.presignGet);
      const k = key();
      const bytes = randomBytes(6 * MiB + 5);
      await pub.put(k, Readable.from([bytes]), undefined, 'application/pdf');
      const disposition = `attachment; filename="r_sum_ _1_.pdf"; filename*=UTF-8''${encodeURIComponent('résumé "1".pdf')}`;
      const url = await pub.presignGet(k, { expiresInSeconds: 60, contentDisposition: disposition, cacheControl: 'private, no-store' });
      assert.ok(url.startsWith(`${endPoint}/${bucket}/${k}?`), url);
      const whole = await fetch(url);
      assert.equal(whole.status, 200);
      assert.equal(whole.headers.get('content-type'), 'application/pdf');
      assert.equal(whole.headers.get('content-disposition'), disposition);
      assert.equal(whole.headers.get('cache-control'), 'private, no-store');
      assert.equal(whole.headers.get('content-length'), String(bytes.length));
      assert.equal(sha256(Buffer.from(await whole.arrayBuffer())), sha256(bytes));
      const part = await fetch(url, { headers: { Range: 'bytes=1000-1999' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), `bytes 1000-1999/${bytes.length}`);
      assert.deepEqual(Buffer.from(await part.arrayBuffer()), bytes.subarray(1000, 2000));
      const suffix = await fetch(url, { headers: { Range: 'bytes=-3' } });
      assert.equal(suffix.status, 206);
      assert.deepEqual(Buffer.from(await suffix.arrayBuffer()), bytes.subarray(-3));
      // Tampered: refused.
      const tampered = await fetch(url.replace(/X-Amz-Expires=\d+/, 'X-Amz-Expires=604800'));
      assert.equal(tampered.status, 403);
      await tampered.arrayBuffer();
      await pub.remove(k);
    });

    it('stops working once it expires', async () => {
      const pub = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket, publicEndPoint: endPoint });
      const k = key();
      await pub.put(k, Readable.from([Buffer.from('soon gone')]), 9, 'text/plain');
      const url = await pub.presignGet!(k, { expiresInSeconds: 1 });
      const now = await fetch(url);
      assert.equal(await now.text(), 'soon gone');
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      const later = await fetch(url);
      assert.equal(later.status, 403);
      await later.arrayBuffer();
      await pub.remove(k);
    });

    it('signs for the public host, not the internal one', async () => {
      const pub = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket, publicEndPoint: 'https://files.example.com' });
      const url = new URL(await pub.presignGet!('f1-abc', { expiresInSeconds: 900 }));
      assert.equal(url.origin, 'https://files.example.com');
      assert.equal(url.pathname, `/${bucket}/f1-abc`);
      assert.equal(url.searchParams.get('X-Amz-Expires'), '900');
    });
  });

  describe('presigned part URLs (multipart uploads straight from clients)', () => {
    it('no publicEndPoint: no presignPart', () => {
      assert.equal(store.presignPart, undefined);
    });

    it('a plain PUT to the URL stores the part, answers its ETag, and the parts complete the blob', async () => {
      const pub = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket, publicEndPoint: endPoint });
      assert.ok(pub.presignPart);
      const k = key();
      const uploadId = await pub.createMultipart(k, 'video/mp4');
      const parts = [randomBytes(5 * MiB), randomBytes(777)];
      const etags: string[] = [];
      for (const [i, bytes] of parts.entries()) {
        const url = await pub.presignPart(k, uploadId, i + 1, 60);
        const answer = await fetch(url, { method: 'PUT', body: bytes });
        assert.equal(answer.status, 200, await answer.clone().text());
        await answer.arrayBuffer();
        const etag = answer.headers.get('etag');
        assert.equal(etag, `"${createHash('md5').update(bytes).digest('hex')}"`);
        etags.push(etag);
      }
      assert.deepEqual(await pub.listParts(k, uploadId), parts.map((bytes, i) => ({ partNumber: i + 1, size: bytes.length, etag: etags[i] })));
      // The part number and the upload id are signed: a URL turned to another part is refused.
      const url = await pub.presignPart(k, uploadId, 1, 60);
      const turned = await fetch(url.replace('partNumber=1', 'partNumber=3'), { method: 'PUT', body: Buffer.from('x') });
      assert.equal(turned.status, 403);
      await turned.arrayBuffer();
      assert.equal(await pub.completeMultipart(k, uploadId, etags.map((etag, i) => ({ partNumber: i + 1, etag }))), 5 * MiB + 777);
      const blob = await pub.get(k);
      assert.ok(blob);
      assert.equal(blob.contentType, 'video/mp4');
      assert.equal(sha256(await buffer(blob.body)), sha256(Buffer.concat(parts)));
      await pub.remove(k);
    });

    it('signs for the public host, at most 7 days', async () => {
      const pub = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket, publicEndPoint: 'https://files.example.com' });
      const url = new URL(await pub.presignPart!('f1-abc', 'some-upload-id', 7, 30 * 24 * 3600));
      assert.equal(url.origin, 'https://files.example.com');
      assert.equal(url.pathname, `/${bucket}/f1-abc`);
      assert.equal(url.searchParams.get('partNumber'), '7');
      assert.equal(url.searchParams.get('uploadId'), 'some-upload-id');
      assert.equal(url.searchParams.get('X-Amz-Expires'), String(7 * 24 * 3600));
    });
  });

  it('keeps memory bounded while storing a 256 MB body (default parts)', async () => {
    const big = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket });
    await assertLargePutBounded(big, key(), ({ seconds, peakBytes }) => {
      console.log(`# 256 MB put: ${seconds.toFixed(1)} s, peak live memory growth ${(peakBytes / MiB).toFixed(1)} MB`);
    });
  });

  it('keeps memory bounded while storing a 256 MB body of unknown size (default parts)', async () => {
    const big = await makeMinioBlobStore({ endPoint, accessKey, secretKey, bucket });
    await assertLargePutBounded(big, key(), ({ seconds, peakBytes }) => {
      console.log(`# 256 MB put, unknown size: ${seconds.toFixed(1)} s, peak live memory growth ${(peakBytes / MiB).toFixed(1)} MB`);
    }, { declared: false });
  });
});
