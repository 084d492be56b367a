import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeFreshReads } from '../src/keyed-queue.ts';

/** A read whose answer is the value at the moment it began, resolved when the test says. */
const controlledReads = () => {
  let value = 0;
  const started: { at: number; resolve: () => void; reject: (error: Error) => void }[] = [];
  const read = (): Promise<number> => {
    const at = value;
    return new Promise<number>((resolve, reject) => started.push({ at, resolve: () => resolve(at), reject }));
  };
  return { read, started, set: (v: number) => { value = v; } };
};

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('makeFreshReads', () => {
  it('answers every call with a read that began after it, sharing one read among the calls made while another runs', async () => {
    const fresh = makeFreshReads();
    const { read, started, set } = controlledReads();
    const first = fresh('k', read);
    set(1); // a write acknowledged after the first read began
    const waiting = Array.from({ length: 100 }, () => fresh('k', read));
    await flush();
    assert.equal(started.length, 1, 'the callers wait for the running read to settle');
    started[0]!.resolve();
    assert.equal(await first, 0);
    await flush();
    assert.equal(started.length, 2, 'one more read for the hundred callers');
    started[1]!.resolve();
    assert.deepEqual(new Set(await Promise.all(waiting)), new Set([1]), 'each sees the write made before its call');
  });

  it('keeps keys apart, and frees a key after a failed read', async () => {
    const fresh = makeFreshReads();
    const { read, started } = controlledReads();
    const a = fresh('a', read);
    const b = fresh('b', read);
    assert.equal(started.length, 2);
    const afterA = fresh('a', read);
    started[0]!.reject(new Error('store down'));
    await assert.rejects(a, /store down/);
    await flush();
    assert.equal(started.length, 3, 'the waiter gets a read of its own after the failure');
    started[2]!.resolve();
    started[1]!.resolve();
    assert.equal(await afterA, 0);
    assert.equal(await b, 0);
    const later = fresh('a', read);
    assert.equal(started.length, 4, 'an idle key starts a read at once');
    started[3]!.resolve();
    assert.equal(await later, 0);
  });
});
