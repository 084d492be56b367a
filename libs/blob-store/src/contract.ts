import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { BlobTooLarge, InvalidPart, MIN_PART_BYTES, NoSuchUpload, PartSizeMismatch, RangeNotSatisfiable } from './port.ts';
import type { BlobStore, PartInfo } from './port.ts';

/** The behaviour every BlobStore adapter must show; `make` gives a ready store (called once). */
export const blobStoreContract = (name: string, make: () => Promise<BlobStore>): void =>
  void describe(`BlobStore contract: ${name}`, () => {
    let store: BlobStore;
    const used: string[] = [];
    // Fresh keys per test so adapters backed by a shared bucket need no reset between runs.
    const newKey = (): string => {
      const key = `contract-${randomUUID()}`;
      used.push(key);
      return key;
    };

    before(async () => {
      store = await make();
    });
    // Multipart uploads made by the tests, aborted at the end (a no-op for those that ended).
    const uploads: { key: string; uploadId: string }[] = [];
    after(async () => {
      for (const { key, uploadId } of uploads) await store.abortMultipart(key, uploadId);
      for (const key of used) await store.remove(key);
    });

    const read = async (key: string): Promise<Buffer | null> => {
      const blob = await store.get(key);
      return blob === null ? null : buffer(blob.body);
    };
    const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
    // A body that delivers `bytes` and then fails, like an upload whose connection drops.
    const failingBody = (bytes: Buffer): Readable => {
      let sent = false;
      return new Readable({
        read() {
          if (sent) return;
          sent = true;
          this.push(bytes);
          setImmediate(() => this.destroy(new Error('connection reset')));
        },
      });
    };
    const assertAbsent = async (key: string): Promise<void> => {
      assert.equal(await store.get(key), null);
      assert.equal(await store.stat(key), null);
    };

    describe('round trip', () => {
      it('stores and returns text with its content type', async () => {
        const key = newKey();
        const bytes = Buffer.from('héllo, wörld\n', 'utf8');
        await store.put(key, Readable.from([bytes]), bytes.length, 'text/plain; charset=utf-8');
        const blob = await store.get(key);
        assert.ok(blob);
        assert.equal(blob.size, bytes.length);
        assert.equal(blob.contentType, 'text/plain; charset=utf-8');
        assert.equal(blob.range, undefined);
        assert.deepEqual(await buffer(blob.body), bytes);
      });

      it('stores an empty blob', async () => {
        const key = newKey();
        await store.put(key, Readable.from([]), 0, 'application/octet-stream');
        const blob = await store.get(key);
        assert.ok(blob);
        assert.equal(blob.size, 0);
        assert.equal((await buffer(blob.body)).length, 0);
        assert.deepEqual(await store.stat(key), { size: 0, contentType: 'application/octet-stream' });
      });

      it('stores ~5 MB of random binary intact, sent in uneven chunks', async () => {
        const key = newKey();
        const bytes = randomBytes(5 * 1024 * 1024 + 123);
        const chunks: Buffer[] = [];
        for (let at = 0; at < bytes.length; at += 70_001) chunks.push(bytes.subarray(at, at + 70_001));
        await store.put(key, Readable.from(chunks), bytes.length, 'application/pdf');
        const back = await read(key);
        assert.ok(back);
        assert.equal(back.length, bytes.length);
        assert.equal(sha256(back), sha256(bytes));
      });

      it('stat gives size and content type without the bytes', async () => {
        const key = newKey();
        await store.put(key, Readable.from([Buffer.from('12345')]), 5, 'image/png');
        assert.deepEqual(await store.stat(key), { size: 5, contentType: 'image/png' });
      });

      it('put over an existing key replaces bytes and content type', async () => {
        const key = newKey();
        await store.put(key, Readable.from([Buffer.from('old contents')]), 12, 'text/plain');
        await store.put(key, Readable.from([Buffer.from('new')]), 3, 'text/markdown');
        assert.deepEqual(await read(key), Buffer.from('new'));
        assert.deepEqual(await store.stat(key), { size: 3, contentType: 'text/markdown' });
      });
    });

    describe('failed puts store nothing', () => {
      it('rejects a body shorter than the declared size', async () => {
        const key = newKey();
        await assert.rejects(store.put(key, Readable.from([Buffer.from('abc')]), 4, 'text/plain'));
        await assertAbsent(key);
      });

      it('rejects a body longer than the declared size', async () => {
        const key = newKey();
        await assert.rejects(store.put(key, Readable.from([Buffer.from('abcde')]), 4, 'text/plain'));
        await assertAbsent(key);
      });

      it('rejects when the body stream errors midway', async () => {
        const key = newKey();
        await assert.rejects(store.put(key, failingBody(randomBytes(100_000)), 200_000, 'application/pdf'), /connection reset/);
        await assertAbsent(key);
      });

      it('keeps the previous blob when a put over it fails', async () => {
        const key = newKey();
        await store.put(key, Readable.from([Buffer.from('keep me')]), 7, 'text/plain');
        await assert.rejects(store.put(key, failingBody(Buffer.from('partial')), 100, 'text/html'));
        await assert.rejects(store.put(key, Readable.from([Buffer.from('short')]), 100, 'text/html'));
        assert.deepEqual(await read(key), Buffer.from('keep me'));
        assert.deepEqual(await store.stat(key), { size: 7, contentType: 'text/plain' });
      });
    });

    describe('puts of unknown size (the length is known only once the body ends)', () => {
      // Uneven chunks, so parts never line up with them.
      const chunked = (bytes: Buffer, step = 70_001): Readable => {
        const chunks: Buffer[] = [];
        for (let at = 0; at < bytes.length; at += step) chunks.push(bytes.subarray(at, at + step));
        return Readable.from(chunks);
      };
      // An endless body, made as it is read; `pulled` counts the bytes handed out.
      const endless = (): { body: Readable; pulled: () => number } => {
        let pulled = 0;
        const body = new Readable({
          read() {
            pulled += 64 * 1024;
            this.push(Buffer.alloc(64 * 1024, 9));
          },
        });
        return { body, pulled: () => pulled };
      };

      it('a put with a declared size resolves with the count stored', async () => {
        const key = newKey();
        assert.equal(await store.put(key, Readable.from([Buffer.from('twelve bytes')]), 12, 'text/plain'), 12);
      });

      it('stores a small body and resolves with its count', async () => {
        const key = newKey();
        const bytes = Buffer.from('unknown length, known at the end\n');
        assert.equal(await store.put(key, Readable.from([bytes.subarray(0, 7), bytes.subarray(7)]), undefined, 'text/plain'), bytes.length);
        assert.deepEqual(await read(key), bytes);
        assert.deepEqual(await store.stat(key), { size: bytes.length, contentType: 'text/plain' });
      });

      it('stores an empty body', async () => {
        const key = newKey();
        assert.equal(await store.put(key, Readable.from([]), undefined, 'application/octet-stream'), 0);
        assert.deepEqual(await store.stat(key), { size: 0, contentType: 'application/octet-stream' });
      });

      it('stores ~12 MB of random binary intact, with ranges after, and leaves the source\'s buffers as they were', async () => {
        const key = newKey();
        const bytes = randomBytes(12 * 1024 * 1024 + 4321);
        const want = sha256(bytes);
        assert.equal(await store.put(key, chunked(bytes), undefined, 'application/pdf', { maxBytes: bytes.length }), bytes.length);
        assert.equal(sha256(bytes), want, 'the body\'s chunks are read, never written into');
        const back = await read(key);
        assert.ok(back);
        assert.equal(sha256(back), want);
        // One chunk far larger than a part.
        const whole = newKey();
        assert.equal(await store.put(whole, Readable.from([bytes]), undefined, 'application/pdf'), bytes.length);
        assert.equal(sha256(bytes), want);
        assert.equal(sha256((await read(whole))!), want);
        const tail = await store.get(key, { start: bytes.length - 5, end: bytes.length + 5 });
        assert.ok(tail);
        assert.deepEqual(tail.range, { start: bytes.length - 5, end: bytes.length - 1 });
        assert.deepEqual(await buffer(tail.body), bytes.subarray(-5));
      });

      it('a body that fails midway stores nothing, small or large', async () => {
        for (const length of [1000, 6 * 1024 * 1024]) {
          const key = newKey();
          await assert.rejects(store.put(key, failingBody(randomBytes(length)), undefined, 'text/plain'), /connection reset/);
          await assertAbsent(key);
        }
      });

      it('a failed put over an existing blob keeps it', async () => {
        const key = newKey();
        await store.put(key, Readable.from([Buffer.from('keep me')]), undefined, 'text/plain');
        await assert.rejects(store.put(key, failingBody(randomBytes(6 * 1024 * 1024)), undefined, 'text/html'));
        await assert.rejects(store.put(key, chunked(randomBytes(3000)), undefined, 'text/html', { maxBytes: 2999 }), BlobTooLarge);
        assert.deepEqual(await read(key), Buffer.from('keep me'));
        assert.deepEqual(await store.stat(key), { size: 7, contentType: 'text/plain' });
      });

      it('maxBytes: exactly the limit is stored, one byte more is refused with BlobTooLarge and stores nothing', async () => {
        const ok = newKey();
        const bytes = randomBytes(100_000);
        assert.equal(await store.put(ok, chunked(bytes, 9_999), undefined, 'text/plain', { maxBytes: 100_000 }), 100_000);
        assert.deepEqual(await read(ok), bytes);
        for (const length of [100_001, 7 * 1024 * 1024]) {
          const over = newKey();
          await assert.rejects(store.put(over, chunked(randomBytes(length)), undefined, 'text/plain', { maxBytes: 100_000 }), (err: unknown) => {
            assert.ok(err instanceof BlobTooLarge, String(err));
            assert.equal(err.maxBytes, 100_000);
            return true;
          });
          await assertAbsent(over);
        }
      });

      it('maxBytes stops reading an endless body soon after the limit, and releases it', async () => {
        const key = newKey();
        const { body, pulled } = endless();
        const maxBytes = 6 * 1024 * 1024;
        await assert.rejects(store.put(key, body, undefined, 'application/octet-stream', { maxBytes }), BlobTooLarge);
        assert.ok(body.destroyed, 'the refused body is released');
        assert.ok(pulled() < maxBytes + 2 * 1024 * 1024, `read ${pulled()} bytes for a limit of ${maxBytes}`);
        await assertAbsent(key);
      });

      it('a declared size over maxBytes is refused before anything is read', async () => {
        const key = newKey();
        const { body, pulled } = endless();
        await assert.rejects(store.put(key, body, 2000, 'text/plain', { maxBytes: 1000 }), BlobTooLarge);
        assert.ok(body.destroyed);
        assert.equal(pulled(), 0);
        await assertAbsent(key);
      });

      it('a declared size within maxBytes is still checked against the body', async () => {
        const key = newKey();
        await assert.rejects(store.put(key, Readable.from([Buffer.from('abcdef')]), 4, 'text/plain', { maxBytes: 10 }));
        await assertAbsent(key);
      });
    });

    describe('ranges', () => {
      const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
      let key: string;
      before(async () => {
        key = newKey();
        await store.put(key, Readable.from([bytes]), bytes.length, 'application/octet-stream');
      });

      it('serves the first 10 bytes', async () => {
        const blob = await store.get(key, { start: 0, end: 9 });
        assert.ok(blob);
        assert.equal(blob.size, 1000);
        assert.deepEqual(blob.range, { start: 0, end: 9 });
        assert.deepEqual(await buffer(blob.body), bytes.subarray(0, 10));
      });

      it('serves a middle slice', async () => {
        const blob = await store.get(key, { start: 300, end: 549 });
        assert.ok(blob);
        assert.deepEqual(blob.range, { start: 300, end: 549 });
        assert.deepEqual(await buffer(blob.body), bytes.subarray(300, 550));
      });

      it('serves a single byte, the last one', async () => {
        const blob = await store.get(key, { start: 999, end: 999 });
        assert.ok(blob);
        assert.deepEqual(blob.range, { start: 999, end: 999 });
        assert.deepEqual(await buffer(blob.body), bytes.subarray(999));
      });

      it('clamps an end beyond the size to the last byte', async () => {
        const blob = await store.get(key, { start: 990, end: 5000 });
        assert.ok(blob);
        assert.deepEqual(blob.range, { start: 990, end: 999 });
        assert.deepEqual(await buffer(blob.body), bytes.subarray(990));
      });

      it('rejects a start at or past the end with RangeNotSatisfiable', async () => {
        for (const start of [1000, 1001, 50_000]) {
          await assert.rejects(store.get(key, { start, end: start + 10 }), (err: unknown) => {
            assert.ok(err instanceof RangeNotSatisfiable);
            assert.equal(err.size, 1000);
            return true;
          });
        }
      });

      it('rejects any range on an empty blob with RangeNotSatisfiable', async () => {
        const empty = newKey();
        await store.put(empty, Readable.from([]), 0, 'text/plain');
        await assert.rejects(store.get(empty, { start: 0, end: 0 }), RangeNotSatisfiable);
      });

      it('gives null for a range on a missing key', async () => {
        assert.equal(await store.get(newKey(), { start: 0, end: 9 }), null);
      });
    });

    describe('missing keys and removal', () => {
      it('gives null from get and stat for a key never stored', async () => {
        await assertAbsent(newKey());
      });

      it('removes a blob, and removing again is fine', async () => {
        const key = newKey();
        await store.put(key, Readable.from([Buffer.from('bye')]), 3, 'text/plain');
        await store.remove(key);
        await store.remove(key);
        await assertAbsent(key);
      });

      it('removing a key never stored is a no-op', async () => {
        await store.remove(newKey());
      });

      it('a removed key can be stored again', async () => {
        const key = newKey();
        await store.put(key, Readable.from([Buffer.from('one')]), 3, 'text/plain');
        await store.remove(key);
        await store.put(key, Readable.from([Buffer.from('two!')]), 4, 'text/csv');
        assert.deepEqual(await read(key), Buffer.from('two!'));
      });
    });

    describe('list', () => {
      const listed = async (): Promise<Map<string, Date>> => {
        const out = new Map<string, Date>();
        for await (const { key, lastModified } of store.list()) out.set(key, lastModified);
        return out;
      };

      it('lists stored blobs with when they were written, and not removed or failed ones', async () => {
        const kept = newKey();
        const removed = newKey();
        const failed = newKey();
        // S3 keeps whole seconds: allow for the truncation below the clock reading before the put.
        const before = Date.now() - 1_000;
        await store.put(kept, Readable.from([Buffer.from('listed')]), 6, 'text/plain');
        await store.put(removed, Readable.from([Buffer.from('gone')]), 4, 'text/plain');
        const afterPuts = Date.now() + 1_000;
        await store.remove(removed);
        await assert.rejects(store.put(failed, Readable.from([Buffer.from('short')]), 10, 'text/plain'));

        const all = await listed();
        const at = all.get(kept);
        assert.ok(at instanceof Date, 'a stored blob is listed');
        assert.ok(at.getTime() >= before && at.getTime() <= afterPuts, `last modified ${at.toISOString()} is when it was put`);
        assert.equal(all.has(removed), false, 'a removed blob is not listed');
        assert.equal(all.has(failed), false, 'a failed put is not listed');
      });

      it('a put over a key lists the key once, with the newer time', async () => {
        const key = newKey();
        await store.put(key, Readable.from([Buffer.from('one')]), 3, 'text/plain');
        const first = (await listed()).get(key);
        await store.put(key, Readable.from([Buffer.from('two')]), 3, 'text/plain');
        let count = 0;
        let second: Date | undefined;
        for await (const entry of store.list()) {
          if (entry.key === key) {
            count++;
            second = entry.lastModified;
          }
        }
        assert.equal(count, 1);
        assert.ok(first && second && second.getTime() >= first.getTime());
      });
    });

    describe('multipart uploads', () => {
      const md5Etag = (bytes: Uint8Array): string => `"${createHash('md5').update(bytes).digest('hex')}"`;
      // Uneven chunks, so nothing lines up with the part's size.
      const chunked = (bytes: Buffer, step = 70_001): Readable => {
        const chunks: Buffer[] = [];
        for (let at = 0; at < bytes.length; at += step) chunks.push(bytes.subarray(at, at + step));
        return Readable.from(chunks);
      };
      const start = async (contentType = 'application/octet-stream'): Promise<{ key: string; uploadId: string }> => {
        const key = newKey();
        const uploadId = await store.createMultipart(key, contentType);
        assert.equal(typeof uploadId, 'string');
        uploads.push({ key, uploadId });
        return { key, uploadId };
      };
      const inProgress = async (): Promise<Map<string, { key: string; initiated: Date }>> => {
        const out = new Map<string, { key: string; initiated: Date }>();
        for await (const { key, uploadId, initiated } of store.listMultipart()) out.set(uploadId, { key, initiated });
        return out;
      };
      const part1 = randomBytes(MIN_PART_BYTES);
      const part2 = randomBytes(MIN_PART_BYTES);
      const part3 = randomBytes(123_457);

      it('parts sent out of order, one twice, make the blob in part order, with the content type given at creation', async () => {
        const { key, uploadId } = await start('application/zip');
        const etag3 = await store.putPart(key, uploadId, 3, chunked(part3), part3.length);
        // Part 1 first sent with other bytes, then again: the second replaces the first.
        const stale = randomBytes(MIN_PART_BYTES);
        assert.equal(await store.putPart(key, uploadId, 1, chunked(stale), stale.length), md5Etag(stale));
        const etag1 = await store.putPart(key, uploadId, 1, chunked(part1), part1.length);
        const etag2 = await store.putPart(key, uploadId, 2, Readable.from([part2]), part2.length);
        assert.deepEqual([etag1, etag2, etag3], [md5Etag(part1), md5Etag(part2), md5Etag(part3)], 'etags are S3\'s: the quoted md5 of the part');
        const expected: PartInfo[] = [
          { partNumber: 1, size: part1.length, etag: etag1 },
          { partNumber: 2, size: part2.length, etag: etag2 },
          { partNumber: 3, size: part3.length, etag: etag3 },
        ];
        assert.deepEqual(await store.listParts(key, uploadId), expected);
        assert.equal(await store.stat(key), null, 'no blob before completion');

        const whole = Buffer.concat([part1, part2, part3]);
        const parts = expected.map(({ partNumber, etag }) => ({ partNumber, etag }));
        assert.equal(await store.completeMultipart(key, uploadId, parts), whole.length);
        const blob = await store.get(key);
        assert.ok(blob);
        assert.equal(blob.size, whole.length);
        assert.equal(blob.contentType, 'application/zip');
        assert.equal(sha256(await buffer(blob.body)), sha256(whole));
        // Completing again (a retried call) answers the same size; the upload itself is gone.
        assert.equal(await store.completeMultipart(key, uploadId, parts), whole.length);
        assert.equal(await store.listParts(key, uploadId), null);
        assert.equal((await inProgress()).has(uploadId), false);
        await assert.rejects(store.putPart(key, uploadId, 4, Readable.from([Buffer.from('late')]), 4), NoSuchUpload);
        const tail = await store.get(key, { start: whole.length - 10, end: whole.length + 10 });
        assert.ok(tail);
        assert.deepEqual(await buffer(tail.body), whole.subarray(-10));
      });

      it('etags may be given quoted or bare; a single part may be small', async () => {
        const { key, uploadId } = await start('text/plain');
        const etag = await store.putPart(key, uploadId, 1, Readable.from([Buffer.from('tiny')]), 4);
        assert.equal(await store.completeMultipart(key, uploadId, [{ partNumber: 1, etag: etag.slice(1, -1) }]), 4);
        assert.deepEqual(await read(key), Buffer.from('tiny'));
        assert.deepEqual(await store.stat(key), { size: 4, contentType: 'text/plain' });
      });

      it('a long or short part body is refused with PartSizeMismatch, destroyed, and the part sent before stays', async () => {
        const { key, uploadId } = await start();
        const etag = await store.putPart(key, uploadId, 2, Readable.from([part3]), part3.length);
        const bodies = [
          Readable.from([part3, Buffer.from('x')]), // one byte too many, after the whole part
          Readable.from([part3.subarray(0, 1000)]), // short
          Readable.from([]), // empty
        ];
        for (const body of bodies) {
          await assert.rejects(store.putPart(key, uploadId, 2, body, part3.length), (err: unknown) => {
            assert.ok(err instanceof PartSizeMismatch, String(err));
            assert.equal(err.expected, part3.length);
            return true;
          });
          assert.ok(body.destroyed, 'a refused body is released');
        }
        // An endless body: refused soon after its declared size, never read to its end.
        let pulled = 0;
        const endless = new Readable({
          read() {
            pulled += 64 * 1024;
            this.push(Buffer.alloc(64 * 1024, 7));
          },
        });
        await assert.rejects(store.putPart(key, uploadId, 1, endless, MIN_PART_BYTES), PartSizeMismatch);
        assert.ok(endless.destroyed);
        assert.ok(pulled < MIN_PART_BYTES + 2 * 1024 * 1024, `read ${pulled} bytes of a part of ${MIN_PART_BYTES}`);
        // A body failing midway is refused too, with its own error.
        await assert.rejects(store.putPart(key, uploadId, 2, failingBody(part3.subarray(0, 5000)), part3.length), /connection reset/);
        assert.deepEqual(await store.listParts(key, uploadId), [{ partNumber: 2, size: part3.length, etag }]);
      });

      it('a completion naming a wrong etag, a missing part, a too small part or parts out of order is InvalidPart, and the upload stays usable', async () => {
        const { key, uploadId } = await start('application/pdf');
        const small = randomBytes(1000);
        const etag1 = await store.putPart(key, uploadId, 1, Readable.from([part1]), part1.length);
        const etag2 = await store.putPart(key, uploadId, 2, Readable.from([small]), small.length);
        const etag3 = await store.putPart(key, uploadId, 3, Readable.from([part3]), part3.length);
        const wrong = md5Etag(Buffer.from('something else'));
        const refused = [
          [{ partNumber: 1, etag: wrong }, { partNumber: 3, etag: etag3 }],
          [{ partNumber: 1, etag: etag1 }, { partNumber: 4, etag: etag3 }],
          [{ partNumber: 1, etag: etag1 }, { partNumber: 2, etag: etag2 }, { partNumber: 3, etag: etag3 }],
          [{ partNumber: 3, etag: etag3 }, { partNumber: 1, etag: etag1 }],
          [{ partNumber: 1, etag: etag1 }, { partNumber: 1, etag: etag1 }],
          [],
        ];
        for (const parts of refused) {
          await assert.rejects(store.completeMultipart(key, uploadId, parts), InvalidPart, JSON.stringify(parts));
        }
        assert.equal(await store.stat(key), null);
        assert.equal((await store.listParts(key, uploadId))?.length, 3);
        // A part may be sent again after a refused completion; a too small part may still be the last.
        const etag2b = await store.putPart(key, uploadId, 2, Readable.from([part2]), part2.length);
        assert.equal(await store.completeMultipart(key, uploadId, [
          { partNumber: 1, etag: etag1 }, { partNumber: 2, etag: etag2b }, { partNumber: 3, etag: etag3 },
        ]), part1.length + part2.length + part3.length);
        assert.equal(sha256((await read(key))!), sha256(Buffer.concat([part1, part2, part3])));
        assert.equal((await store.stat(key))?.contentType, 'application/pdf');
      });

      it('an aborted upload is gone: no parts, not listed, no blob; aborting again is a no-op', async () => {
        const { key, uploadId } = await start();
        const etag = await store.putPart(key, uploadId, 1, Readable.from([part3]), part3.length);
        assert.equal((await inProgress()).has(uploadId), true);
        await store.abortMultipart(key, uploadId);
        assert.equal(await store.listParts(key, uploadId), null);
        assert.equal((await inProgress()).has(uploadId), false);
        await assertAbsent(key);
        await store.abortMultipart(key, uploadId);
        const body = Readable.from([part3]);
        await assert.rejects(store.putPart(key, uploadId, 1, body, part3.length), NoSuchUpload);
        assert.ok(body.destroyed);
        await assert.rejects(store.completeMultipart(key, uploadId, [{ partNumber: 1, etag }]), NoSuchUpload);
        await assertAbsent(key);
      });

      it('uploads in progress are listed with when they began; their parts are never listed as blobs', async () => {
        const before = Date.now() - 1_000;
        const a = await start();
        const b = await start();
        await store.putPart(a.key, a.uploadId, 1, Readable.from([part3]), part3.length);
        const afterwards = Date.now() + 1_000;
        const listed = await inProgress();
        for (const { key, uploadId } of [a, b]) {
          const entry = listed.get(uploadId);
          assert.ok(entry, 'an upload in progress is listed');
          assert.equal(entry.key, key);
          const at = entry.initiated.getTime();
          assert.ok(at >= before && at <= afterwards, `initiated ${entry.initiated.toISOString()} is when it began`);
        }
        for await (const { key } of store.list()) assert.ok(key !== a.key && key !== b.key, 'list() shows blobs only');
      });

      it('an upload belongs to its key: another key finds no such upload', async () => {
        const { key, uploadId } = await start();
        const other = newKey();
        assert.equal(await store.listParts(other, uploadId), null);
        await assert.rejects(store.putPart(other, uploadId, 1, Readable.from([Buffer.from('x')]), 1), NoSuchUpload);
        await store.abortMultipart(other, uploadId);
        assert.deepEqual(await store.listParts(key, uploadId), [], 'still there for its own key');
      });

      it('refuses malformed keys, upload ids and part numbers with a TypeError, releasing the body', async () => {
        const { key, uploadId } = await start();
        for (const [k, id] of [['../x', uploadId], [key, ''], [key, 'a/b'], [key, '../up'], [key, 'id with space']] as const) {
          const body = Readable.from([Buffer.from('x')]);
          await assert.rejects(store.putPart(k, id, 1, body, 1), TypeError, `${k} ${id}`);
          assert.ok(body.destroyed);
          await assert.rejects(store.listParts(k, id), TypeError);
          await assert.rejects(store.completeMultipart(k, id, [{ partNumber: 1, etag: '"x"' }]), TypeError);
          await assert.rejects(store.abortMultipart(k, id), TypeError);
        }
        for (const partNumber of [0, -1, 1.5, 10_001, Number.NaN]) {
          const body = Readable.from([Buffer.from('x')]);
          await assert.rejects(store.putPart(key, uploadId, partNumber, body, 1), TypeError, String(partNumber));
          assert.ok(body.destroyed);
          await assert.rejects(store.completeMultipart(key, uploadId, [{ partNumber, etag: '"x"' }]), TypeError);
        }
        for (const size of [-1, 0.5, Number.NaN]) {
          await assert.rejects(store.putPart(key, uploadId, 1, Readable.from([]), size), TypeError, String(size));
        }
        await assert.rejects(store.createMultipart('a/b', 'text/plain'), TypeError);
        assert.deepEqual(await store.listParts(key, uploadId), []);
      });

      it('presignPart is offered exactly where presignGet is (clients reach the store)', () => {
        assert.equal(typeof store.presignPart, typeof store.presignGet);
      });
    });

    describe('keys', () => {
      it('rejects keys that are not plain server-made names', async () => {
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
          used.push(key);
          await store.put(key, Readable.from([Buffer.from('ok')]), 2, 'text/plain');
          assert.deepEqual(await store.stat(key), { size: 2, contentType: 'text/plain' });
        }
      });
    });
  });
