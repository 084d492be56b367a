import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError, M, tooLarge } from '@docshare/contracts';
import { PassThrough } from 'node:stream';
import { declaredLength, drainSmallBody, makeStorageQuota } from '../src/storage-quota.ts';

const MAX = 1_000;

/** A stats read model stand-in: what `usedBy` answers per user (`through`: the last upload it counts). */
const usage = (initial: Record<number, number> = {}) => {
  const stored = new Map(Object.entries(initial).map(([k, v]) => [Number(k), v]));
  const through = new Map<number, number>();
  return { stored, through, usedBy: async (userId: number) => ({ bytes: stored.get(userId) ?? 0, through: through.get(userId) ?? 0 }) };
};

const isQuotaError = (error: unknown): boolean =>
  error instanceof DocshareError && error.kind === 'too_large' && error.message === M.storageQuotaExceeded;

describe('storage quota', () => {
  it('0 means unlimited: the upload limit stays MAX_UPLOAD_BYTES and nothing is held', async () => {
    const q = makeStorageQuota({ quotaBytes: 0, ...usage({ 1: 10 ** 12 }) });
    const r = await q.reserve(1, 10 ** 9);
    assert.equal(r.limitFor(MAX), MAX);
    await r.confirm(10 ** 9);
    assert.equal(q.heldBy(1), 0);
    assert.throws(() => r.explain(tooLarge(M.fileTooLarge)), { message: M.fileTooLarge });
  });

  it('refuses a user at or over the quota before anything is read', async () => {
    for (const used of [500, 501]) {
      const q = makeStorageQuota({ quotaBytes: 500, ...usage({ 1: used }) });
      await assert.rejects(q.reserve(1, 10), isQuotaError);
      await assert.rejects(q.reserve(1, undefined), isQuotaError);
      assert.equal(q.heldBy(1), 0);
    }
  });

  it('reads the file within the free space when it is smaller than MAX_UPLOAD_BYTES; "File too large" there means the quota', async () => {
    const q = makeStorageQuota({ quotaBytes: 5_000, ...usage({ 1: 4_700, 2: 100 }) });
    const tight = await q.reserve(1, undefined);
    assert.equal(tight.limitFor(MAX), 300);
    assert.throws(() => tight.explain(tooLarge(M.fileTooLarge)), isQuotaError);
    assert.throws(() => tight.explain(new DocshareError('invalid', M.fileRequired)), { message: M.fileRequired });
    const roomy = await q.reserve(2, undefined);
    assert.equal(roomy.limitFor(MAX), MAX);
    assert.throws(() => roomy.explain(tooLarge(M.fileTooLarge)), { message: M.fileTooLarge });
  });

  it('concurrent uploads of one user in one process cannot jointly overshoot', async () => {
    const q = makeStorageQuota({ quotaBytes: 100, ...usage() });
    const a = await q.reserve(1, 60);
    const b = await q.reserve(1, 60);
    assert.equal(b.limitFor(MAX), 40, 'b may read only what a does not hold');
    assert.equal(q.heldBy(1), 100);
    await assert.rejects(q.reserve(1, 1), isQuotaError);
    await a.confirm(10);
    assert.equal(q.heldBy(1), 50, 'a holds its real size once known');
    const c = await q.reserve(1, undefined);
    assert.equal(c.limitFor(MAX), 50);
    // Another user is not affected.
    assert.equal((await q.reserve(2, undefined)).limitFor(MAX), 100);
    b.release(); b.release();
    c.release();
    assert.equal(q.heldBy(1), 10);
  });

  it('a chunked upload holds all the free space until its size is known', async () => {
    const q = makeStorageQuota({ quotaBytes: 100, ...usage({ 1: 20 }) });
    const a = await q.reserve(1, undefined);
    await assert.rejects(q.reserve(1, 1), isQuotaError);
    await a.confirm(30);
    assert.equal((await q.reserve(1, undefined)).limitFor(MAX), 50);
  });

  it('checks the real size against the quota when it is larger than what was declared', async () => {
    const u = usage({ 1: 50 });
    const q = makeStorageQuota({ quotaBytes: 100, ...u });
    const lied = await q.reserve(1, 10);
    await assert.rejects(lied.confirm(51), isQuotaError);
    const fits = await q.reserve(1, 10);
    lied.release();
    await fits.confirm(50);
    assert.equal(q.heldBy(1), 50);
  });

  it('an upload recorded while another one read the usage is counted once, not missed', async () => {
    const u = usage();
    let reads = 0;
    let gate: (() => void) | undefined;
    const q = makeStorageQuota({
      quotaBytes: 100,
      usedBy: async (userId) => {
        reads += 1;
        const value = await u.usedBy(userId);
        // The second caller's first read sees the read model before the first upload shows in it.
        if (reads === 2) await new Promise<void>((resolve) => { gate = resolve; });
        return value;
      },
    });
    const first = await q.reserve(1, 80);
    await first.confirm(80);
    const second = q.reserve(1, undefined);
    await new Promise((resolve) => setImmediate(resolve));
    // Meanwhile the first upload is recorded, the read model shows it, and its hold is given back.
    u.stored.set(1, 80);
    first.release();
    gate?.();
    assert.equal((await second).limitFor(MAX), 20);
    assert.equal(reads, 3, 'the usage was read again after a hold was given back during the read');
  });

  it('a recorded upload counts once: held until the read model counts it, then only there, and dropped once applied', async () => {
    const u = usage();
    let apply: (() => void) | undefined;
    const waits: number[] = [];
    const q = makeStorageQuota({
      quotaBytes: 100, usedBy: u.usedBy,
      applied: (token, timeoutMs) => {
        waits.push(timeoutMs);
        return token === 7 ? new Promise<void>((resolve) => { apply = resolve; }) : Promise.resolve();
      },
    });
    const first = await q.reserve(1, 60);
    await first.confirm(60);
    first.release(7); // recorded at position 7: the answer goes, the hold stays
    const probe = await q.reserve(1, undefined);
    assert.equal(probe.limitFor(MAX), 40, 'not yet in the read model: the hold counts');
    probe.release();
    u.stored.set(1, 60);
    u.through.set(1, 7);
    const next = await q.reserve(1, undefined);
    assert.equal(next.limitFor(MAX), 40, 'in the read model now: counted there and not held twice');
    assert.equal(q.heldBy(1), 100, 'held: the recorded upload until applied, and the chunked reservation');
    next.release();
    apply?.();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(q.heldBy(1), 0, 'the applied hold is dropped');
    assert.deepEqual(waits, [30_000], 'a recorded upload\'s hold waits for the read model up to 30 s');
  });

  it('waits for the user\'s own last write (a token) before reading the usage', async () => {
    const u = usage({ 1: 100 });
    const q = makeStorageQuota({
      quotaBytes: 100, usedBy: u.usedBy,
      applied: async (token) => {
        // The user's deletion (token 9) reaches the read model while the reservation waits for it.
        if (token === 9) u.stored.set(1, 0);
      },
    });
    await assert.rejects(q.reserve(1, 10), isQuotaError);
    assert.equal((await q.reserve(1, 10, 9)).limitFor(MAX), 100);
  });

  it('reads a declared Content-Length only when it is a plain decimal', () => {
    assert.equal(declaredLength('1234'), 1234);
    assert.equal(declaredLength(' 0 '), 0);
    for (const h of [undefined, '', '-1', '1e3', '12abc', '9'.repeat(20)]) assert.equal(declaredLength(h), undefined);
  });

  it('drains a small body before a refusal, and leaves a large one unread', async () => {
    const body = (contentLength?: string) => Object.assign(new PassThrough(), {
      complete: false, headers: contentLength === undefined ? {} : { 'content-length': contentLength },
    });
    const small = body('5');
    small.end('hello');
    await drainSmallBody(small, 10);
    assert.equal(small.readableEnded, true, 'a small declared body is read to its end');

    const large = body('11');
    large.write('x'.repeat(11));
    await drainSmallBody(large, 10);
    assert.equal(large.readableLength, 11, 'a body declared over the limit is not read at all');

    const chunked = body();
    chunked.write('y'.repeat(25));
    await drainSmallBody(chunked, 10);
    assert.equal(chunked.readableEnded, false, 'an undeclared body is read only up to the limit');
    assert.equal(chunked.isPaused(), true);
  });
});
