import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { BlobTooLarge, RangeNotSatisfiable } from './port.ts';
import type { BlobStore } from './port.ts';

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
    after(async () => {
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
