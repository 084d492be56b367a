/**
 * bench:stack's resumable-upload arithmetic: the part layout, what a resumed upload sent beyond
 * what was missing, and the rate-limit points an upload spent between two probes.
 *   npm exec -- node --test --test-reporter=spec bench/stack/test/resumable.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { partPlan, pointsSpent, rateLimitOf, resumeAccount } from '../resumable.ts';

const MiB = 1024 * 1024;

test('a file is cut in full parts and a shorter last one, numbered from 1', () => {
  assert.deepEqual(partPlan(20 * MiB + 5, 8 * MiB), [
    { partNumber: 1, start: 0, size: 8 * MiB },
    { partNumber: 2, start: 8 * MiB, size: 8 * MiB },
    { partNumber: 3, start: 16 * MiB, size: 4 * MiB + 5 },
  ]);
  assert.deepEqual(partPlan(16 * MiB, 8 * MiB).map((p) => p.size), [8 * MiB, 8 * MiB], 'an exact multiple has no empty last part');
  assert.deepEqual(partPlan(1, 8 * MiB), [{ partNumber: 1, start: 0, size: 1 }]);
  assert.throws(() => partPlan(0, 8 * MiB), /size 0/);
  assert.throws(() => partPlan(10, 0), /part size 0/);
});

test('a resume that sends only the missing parts sends nothing extra', () => {
  const size = 10 * 8 * MiB + 3;
  const account = resumeAccount(size, 8 * MiB, [1, 2, 3, 5], [4, 6, 7, 8, 9, 10, 11]);
  assert.equal(account.missing, 6 * 8 * MiB + 3);
  assert.equal(account.sent, account.missing);
  assert.equal(account.extra, 0);
  assert.equal(account.extraParts, 0);
});

test('parts held by the server and sent again, or a part sent twice, count as extra', () => {
  const size = 4 * 8 * MiB;
  const again = resumeAccount(size, 8 * MiB, [1, 2], [2, 3, 4]);
  assert.equal(again.missing, 2 * 8 * MiB);
  assert.equal(again.extra, 8 * MiB);
  assert.equal(again.extraParts, 1);
  const retried = resumeAccount(size, 8 * MiB, [1, 2], [3, 3, 4, 1]);
  assert.equal(retried.extraParts, 2);
  assert.throws(() => resumeAccount(size, 8 * MiB, [], [5]), /part 5 is not one of the 4 parts/);
});

test('the rate limit read from an answer: none without RateLimit-Remaining', () => {
  assert.deepEqual(rateLimitOf(new Headers({ 'RateLimit-Remaining': '27', 'RateLimit-Reset': '41' })), { remaining: 27, resetSeconds: 41 });
  assert.equal(rateLimitOf(new Headers({ ETag: '"abc"' })), null, 'a part PUT (exempt) carries no rate-limit header');
  assert.equal(rateLimitOf(new Headers({ 'RateLimit-Remaining': 'x' })), null);
});

test('points spent between two probes take the second probe off, and mean nothing once the window may have rolled', () => {
  // before 100; create + complete (2) + the second probe (1) → 97
  assert.equal(pointsSpent({ remaining: 100, resetSeconds: 3600 }, { remaining: 97 }, 12), 2);
  assert.ok(Number.isNaN(pointsSpent({ remaining: 100, resetSeconds: 10 }, { remaining: 97 }, 12)), 'the window ended meanwhile');
  assert.ok(Number.isNaN(pointsSpent({ remaining: 10, resetSeconds: 3600 }, { remaining: 29 }, 1)), 'a budget that grew: a new window');
});
