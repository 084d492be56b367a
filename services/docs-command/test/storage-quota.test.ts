import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError, M, tooLarge } from '@docshare/contracts';
import { PassThrough } from 'node:stream';
import { makeMemoryStorageLedger } from '@docshare/storage-ledger';
import { makeStorageQuota } from '../src/commands/storage-quota.ts';
import { declaredLength, drainSmallBody } from '../src/http/request-body.ts';

const MAX = 1_000;

/** A quota over a fresh ledger in which each user already stores what `initial` says. */
const quotaOf = async (quotaBytes: number, initial: Record<number, number> = {}) => {
  const ledger = makeMemoryStorageLedger({ resolve: async () => 'not_recorded' });
  await ledger.seed(async () => new Map(Object.entries(initial).map(([k, v]) => [Number(k), v])));
  return { q: makeStorageQuota({ quotaBytes, ledger }), ledger };
};

const isQuotaError = (error: unknown): boolean =>
  error instanceof DocshareError && error.kind === 'too_large' && error.message === M.storageQuotaExceeded;

describe('storage quota', () => {
  it('0 means unlimited: the upload limit stays MAX_UPLOAD_BYTES and nothing is held, but the upload is counted', async () => {
    const { q, ledger } = await quotaOf(0, { 1: 10 ** 12 });
    const r = await q.reserve(1, 10 ** 9);
    assert.equal(r.limitFor(MAX), MAX);
    await r.confirm(10 ** 9);
    assert.equal(await ledger.usage(1), 10 ** 12);
    assert.throws(() => r.explain(tooLarge(M.fileTooLarge)), { message: M.fileTooLarge });
    await r.pend(5, 10);
    await ledger.settle(1, { kind: 'upload', fileId: 5 });
    assert.equal(await ledger.usage(1), 10 ** 12 + 10);
  });

  it('refuses a user at or over the quota before anything is read', async () => {
    for (const used of [500, 501]) {
      const { q, ledger } = await quotaOf(500, { 1: used });
      await assert.rejects(q.reserve(1, 10), isQuotaError);
      await assert.rejects(q.reserve(1, undefined), isQuotaError);
      assert.equal(await ledger.usage(1), used);
    }
  });

  it('reads the file within the free space when it is smaller than MAX_UPLOAD_BYTES; "File too large" there means the quota', async () => {
    const { q } = await quotaOf(5_000, { 1: 4_700, 2: 100 });
    const tight = await q.reserve(1, undefined);
    assert.equal(tight.limitFor(MAX), 300);
    assert.throws(() => tight.explain(tooLarge(M.fileTooLarge)), isQuotaError);
    assert.throws(() => tight.explain(new DocshareError('invalid', M.fileRequired)), { message: M.fileRequired });
    const roomy = await q.reserve(2, undefined);
    assert.equal(roomy.limitFor(MAX), MAX);
    assert.throws(() => roomy.explain(tooLarge(M.fileTooLarge)), { message: M.fileTooLarge });
  });

  it('concurrent uploads of one user cannot jointly overshoot', async () => {
    const { q, ledger } = await quotaOf(100);
    const a = await q.reserve(1, 60);
    const b = await q.reserve(1, 60);
    assert.equal(b.limitFor(MAX), 40, 'b may read only what a does not hold');
    assert.equal(await ledger.usage(1), 100);
    await assert.rejects(q.reserve(1, 1), isQuotaError);
    await a.confirm(10);
    assert.equal(await ledger.usage(1), 50, 'a holds its real size once known');
    const c = await q.reserve(1, undefined);
    assert.equal(c.limitFor(MAX), 50);
    // Another user is not affected.
    assert.equal((await q.reserve(2, undefined)).limitFor(MAX), 100);
    await b.release(); await b.release();
    await c.release();
    assert.equal(await ledger.usage(1), 10);
  });

  it('a chunked upload holds all the free space until its size is known', async () => {
    const { q, ledger } = await quotaOf(100, { 1: 20 });
    const a = await q.reserve(1, undefined);
    await assert.rejects(q.reserve(1, 1), isQuotaError);
    await a.confirm(30);
    assert.equal(await ledger.usage(1), 50);
  });

  it('checks the real size against the quota when it is larger than what was declared', async () => {
    const { q } = await quotaOf(100, { 1: 50 });
    const a = await q.reserve(1, 10);
    await assert.rejects(a.confirm(60), isQuotaError);
    await a.confirm(50);
  });

  it('an upload counts from its hold, through pending, to settled, once; a deletion gives its bytes back at once', async () => {
    const { q, ledger } = await quotaOf(100);
    const a = await q.reserve(1, 70);
    await a.confirm(70);
    await a.pend(9, 70);
    await a.release();
    assert.equal(await ledger.usage(1), 70, 'a release after the pend gives nothing back');
    await ledger.settle(1, { kind: 'upload', fileId: 9 });
    const b = await q.reserve(1, 40);
    await assert.rejects(b.confirm(40), isQuotaError);
    await b.release();
    await q.pendDeletion(1, 9, 70);
    assert.equal(await ledger.usage(1), 70, 'a pending deletion still counts');
    await ledger.settle(1, { kind: 'delete', fileId: 9 });
    assert.equal((await q.reserve(1, undefined)).limitFor(MAX), 100);
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
