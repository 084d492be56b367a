import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffMs, jitteredBackoffMs } from '../src/backoff.ts';

describe('backoffMs', () => {
  it('starts at the base, doubles per attempt and stops at the cap', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((a) => backoffMs(a, 200, 5_000)), [200, 400, 800, 1_600, 3_200, 5_000]);
  });
  it('stays at the cap however many attempts (no overflow), and treats attempt 0 as the first', () => {
    assert.equal(backoffMs(10_000, 100, 30_000), 30_000);
    assert.equal(backoffMs(0, 250, 1_000), 250);
  });
});

describe('jitteredBackoffMs', () => {
  it('spreads each delay between half and all of backoffMs', () => {
    assert.equal(jitteredBackoffMs(3, 100, 10_000, () => 0), 200);
    assert.equal(jitteredBackoffMs(3, 100, 10_000, () => 1), 400);
    assert.equal(jitteredBackoffMs(9, 100, 1_000, () => 0.5), 750);
  });
});
