/**
 * The view measures' arithmetic (bench/stack/views.ts): which read first counted each
 * acknowledged view, the days of a 366-day range, and the runners on fake servers (counts only,
 * no timing asserted).
 *   npm exec -- node --test --test-reporter=spec bench/stack/test/views.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ackedToCounted, countedLags, hotVsSpread, utcDaysEnding } from '../views.ts';

test('each acknowledged view is counted by the first read whose count reaches baseline + its rank', () => {
  const acks = [10, 20, 30];
  const observations = [{ at: 5, count: 100 }, { at: 25, count: 101 }, { at: 40, count: 103 }];
  assert.deepEqual(countedLags(acks, 100, observations), { lags: [15, 20, 10], unseen: 0 });
});

test('acknowledgements and reads in any order (several pollers) give the same lags', () => {
  const acks = [30, 10, 20];
  const observations = [{ at: 40, count: 103 }, { at: 25, count: 101 }, { at: 5, count: 100 }, { at: 27, count: 101 }];
  assert.deepEqual(countedLags(acks, 100, observations), { lags: [15, 20, 10], unseen: 0 });
});

test('a read that answered before the acknowledgement and already counted the view is a lag of 0', () => {
  assert.deepEqual(countedLags([50], 7, [{ at: 45, count: 8 }]), { lags: [0], unseen: 0 });
});

test('views no read counted are unseen, and the ones counted keep their lags', () => {
  assert.deepEqual(countedLags([10, 20, 30, 40], 0, [{ at: 35, count: 2 }]), { lags: [25, 15], unseen: 2 });
  assert.deepEqual(countedLags([10], 0, []), { lags: [], unseen: 1 });
  assert.deepEqual(countedLags([], 0, [{ at: 1, count: 0 }]), { lags: [], unseen: 0 });
});

test('the 366 UTC days ending today, across a leap day, ascending', () => {
  const days = utcDaysEnding(new Date('2024-12-31T23:59:59.999Z'), 366);
  assert.equal(days.length, 366);
  assert.equal(days[0], '2024-01-01');
  assert.equal(days.at(-1), '2024-12-31');
  assert.ok(days.includes('2024-02-29'));
  assert.equal(new Set(days).size, 366);
  assert.deepEqual(utcDaysEnding(new Date('2025-03-01T00:00:00.000Z'), 2), ['2025-02-28', '2025-03-01']);
});

test('hot vs spread sends the same number of views of each kind and counts 5xx answers apart', async () => {
  const sent = { hot: 0, spread: 0 };
  const result = await hotVsSpread({
    clients: 4, count: 50, rounds: 2, warmup: 10,
    hot: async (n) => {
      sent.hot += 1;
      return n % 10 === 3 ? { status: 503, text: 'busy' } : { status: 200, text: 'page' };
    },
    spread: async () => {
      sent.spread += 1;
      return { status: 200, text: 'page' };
    },
  });
  assert.deepEqual(sent, { hot: 55, spread: 55 });
  assert.equal(result.spread.ok, 50);
  assert.equal(result.spread.serverErrors, 0);
  assert.equal(result.hot.ok + result.hot.errors, 50);
  assert.equal(result.hot.serverErrors, result.hot.errors);
  assert.ok(result.hot.serverErrors > 0);
  assert.equal(result.hot.latencies.length, result.hot.ok);
});

test('acked → counted: every view a fake counter applies later is counted by every read, none unseen', async () => {
  let applied = 0;
  let daily = 5;
  const result = await ackedToCounted({
    rate: 400, seconds: 0.1, pollMs: 1, timeoutMs: 5_000,
    view: async () => {
      // acknowledged now, counted shortly after (as a projection does)
      setTimeout(() => { applied += 1; daily += 1; }, 3);
    },
    reads: { stats: async () => applied, daily: async () => daily },
  });
  assert.equal(result.acked, 40);
  assert.equal(result.failed, 0);
  for (const name of ['stats', 'daily']) {
    const counted = result.counted[name]!;
    assert.equal(counted.unseen, 0, name);
    assert.equal(counted.lags.length, 40, name);
  }
  assert.equal(result.counted.daily!.baseline, 5);
});

test('acked → counted: views never counted are unseen once the wait is over, and failed views are not waited for', async () => {
  const result = await ackedToCounted({
    rate: 200, seconds: 0.05, pollMs: 1, timeoutMs: 20,
    view: async (n) => { if (n % 2 === 1) throw new Error('refused'); },
    reads: { stats: async () => 0 },
  });
  assert.equal(result.acked, 5);
  assert.equal(result.failed, 5);
  assert.equal(result.errorKinds.refused, 5);
  assert.equal(result.counted.stats!.unseen, 5);
});

test('acked → counted: a read that cannot give its baseline is left out and named, the others measured', async () => {
  let applied = 0;
  const result = await ackedToCounted({
    rate: 200, seconds: 0.05, pollMs: 1, timeoutMs: 5_000,
    view: async () => { applied += 1; },
    reads: { stats: async () => applied, daily: async () => { throw new Error('404 no such route'); } },
  });
  assert.deepEqual(Object.keys(result.counted), ['stats']);
  assert.equal(result.counted.stats!.unseen, 0);
  assert.ok(Object.keys(result.errorKinds).some((k) => k.startsWith('read daily: baseline: 404')));
});
