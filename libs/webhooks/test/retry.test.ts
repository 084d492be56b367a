import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_RETRY_AFTER_MS, nextRetryDelay, parseRetryAfter } from '../src/retry.ts';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const SCHEDULE = [5_000, 300_000, 1_800_000];

describe('parseRetryAfter', () => {
  it('reads delta-seconds', () => {
    assert.equal(parseRetryAfter('120', NOW), 120_000);
    assert.equal(parseRetryAfter(' 0 ', NOW), 0);
  });
  it('reads an HTTP-date; one in the past is 0', () => {
    assert.equal(parseRetryAfter('Sun, 01 Mar 2026 12:01:30 GMT', NOW), 90_000);
    assert.equal(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', NOW), 0);
  });
  it('is undefined when absent or unreadable', () => {
    assert.equal(parseRetryAfter(undefined, NOW), undefined);
    assert.equal(parseRetryAfter('soon', NOW), undefined);
    assert.equal(parseRetryAfter('-5', NOW), undefined);
    assert.equal(parseRetryAfter('', NOW), undefined);
  });
});

describe('nextRetryDelay', () => {
  it('follows the schedule, one entry per failure, then null (a dead letter)', () => {
    const mid = (): number => 0.5;
    assert.deepEqual([1, 2, 3, 4].map((n) => nextRetryDelay(SCHEDULE, n, undefined, mid)), [5_000, 300_000, 1_800_000, null]);
    assert.equal(nextRetryDelay([], 1), null);
  });
  it('jitters within ±10 %', () => {
    assert.equal(nextRetryDelay(SCHEDULE, 1, undefined, () => 0), 4_500);
    assert.equal(nextRetryDelay(SCHEDULE, 1, undefined, () => 1), 5_500);
  });
  it('a longer Retry-After wins; a shorter one does not shorten the schedule', () => {
    assert.equal(nextRetryDelay(SCHEDULE, 1, 60_000, () => 0.5), 60_000);
    assert.equal(nextRetryDelay(SCHEDULE, 2, 1_000, () => 0.5), 300_000);
  });
  it('caps Retry-After at 24 h, and still ends when the schedule is spent', () => {
    assert.equal(nextRetryDelay(SCHEDULE, 1, 7 * 86_400_000, () => 0.5), MAX_RETRY_AFTER_MS);
    assert.equal(nextRetryDelay(SCHEDULE, 4, 60_000), null);
  });
  it('refuses a failure count that is not a positive integer', () => {
    assert.throws(() => nextRetryDelay(SCHEDULE, 0), RangeError);
  });
});
