import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deflateRawSync } from 'node:zlib';
import { DAILY_PRECISION, HOURLY_PRECISION, UniqueCounter, type Precision } from '../src/sketch.ts';

const keys = (seed: string, from: number, to: number): string[] => Array.from({ length: to - from }, (_, i) => `${seed}:${from + i}`);
const counterOf = (precision: Precision, list: readonly string[]): UniqueCounter => {
  const counter = UniqueCounter.empty(precision);
  for (const key of list) counter.add(key);
  return counter;
};
const relativeError = (estimate: number, truth: number): number => Math.abs(estimate - truth) / truth;

describe('UniqueCounter', () => {
  it('counts exactly up to 2^p/16 distinct keys, a key added twice once', () => {
    assert.equal(DAILY_PRECISION, 14);
    assert.equal(HOURLY_PRECISION, 12);
    const counter = UniqueCounter.empty(14);
    assert.equal(counter.count(), 0);
    assert.equal(counter.exactUpTo, 1_024);
    for (let n = 1; n <= 1_024; n++) {
      assert.equal(counter.add(`u:${n}`), true);
      assert.equal(counter.add(`u:${n}`), false, 'a key already held changes nothing');
      assert.equal(counter.count(), n);
    }
    // The order keys come in does not matter.
    assert.equal(counterOf(14, Array.from({ length: 1_024 }, (_, i) => `u:${i + 1}`).reverse()).encode(), counter.encode());
    assert.equal(counterOf(12, keys('h', 0, 256)).count(), 256);
  });

  it('past the exact range becomes a HyperLogLog that stays close and keeps ignoring repeats', () => {
    const counter = counterOf(14, keys('k', 0, 1_025));
    assert.ok(counter.encode().startsWith('D14.'));
    assert.ok(relativeError(counter.count(), 1_025) < 0.02, `${counter.count()}`);
    const before = counter.encode();
    for (const key of keys('k', 0, 1_025)) assert.equal(counter.add(key), false);
    assert.equal(counter.encode(), before);
    const hourly = counterOf(12, keys('k', 0, 257));
    assert.ok(hourly.encode().startsWith('D12.'));
    assert.ok(Math.abs(hourly.count() - 257) <= 5, `${hourly.count()}`);
  });

  it('a merge counts the union, sparse while the union is small, dense past it', () => {
    const a = counterOf(14, keys('m', 0, 600));
    const b = counterOf(14, keys('m', 300, 900));
    a.merge(b);
    assert.equal(a.count(), 900);
    assert.ok(a.encode().startsWith('S14.'));
    assert.equal(a.encode(), counterOf(14, keys('m', 0, 900)).encode());

    const c = counterOf(14, keys('m', 600, 1_500));
    a.merge(c);
    assert.ok(a.encode().startsWith('D14.'));
    assert.equal(a.encode(), counterOf(14, keys('m', 0, 1_500)).encode(), 'the union\'s registers, whatever the way there');

    // Dense into sparse, dense into dense, sparse into dense: each equals the counter of the union.
    const big = counterOf(14, keys('n', 0, 5_000));
    const small = counterOf(14, keys('n', 4_000, 4_500).concat(keys('o', 0, 100)));
    const union = counterOf(14, keys('n', 0, 5_000).concat(keys('o', 0, 100))).encode();
    const first = UniqueCounter.decode(small.encode(), 14);
    first.merge(big);
    assert.equal(first.encode(), union);
    const second = UniqueCounter.decode(big.encode(), 14);
    second.merge(small);
    assert.equal(second.encode(), union);
    const third = counterOf(14, keys('n', 0, 2_000));
    third.merge(counterOf(14, keys('n', 2_000, 5_000).concat(keys('o', 0, 100))));
    assert.equal(third.encode(), union);
    third.merge(third);
    assert.equal(third.encode(), union);

    assert.throws(() => counterOf(12, []).merge(counterOf(14, [])), /precision/);
  });

  it('encodes compactly and decodes to the same counter, sparse and dense', () => {
    for (const [precision, n] of [[14, 0], [14, 1], [14, 1_024], [14, 1_025], [14, 100_000], [12, 200], [12, 50_000]] as const) {
      const counter = counterOf(precision, keys(`e${n}`, 0, n));
      const text = counter.encode();
      const back = UniqueCounter.decode(text, precision);
      assert.equal(back.encode(), text);
      assert.equal(back.count(), counter.count());
      // Decoded counters keep working: adding a held key changes nothing, a new one still counts.
      if (n > 0) assert.equal(back.add(`e${n}:0`), false);
      if (n <= 200) {
        assert.equal(back.add('a new key'), true);
        assert.equal(back.count(), n + 1);
      }
    }
    assert.equal(UniqueCounter.empty(14).encode(), 'S14.');
    assert.ok(counterOf(14, keys('s', 0, 1_024)).encode().length < 11_000);
    assert.ok(counterOf(14, keys('d', 0, 100_000)).encode().length < 16_000);
  });

  it('decodes anything else to an empty counter, never throwing', () => {
    const sparse = counterOf(14, keys('g', 0, 10)).encode();
    const dense = counterOf(14, keys('g', 0, 2_000)).encode();
    const hashes = Buffer.from(sparse.slice(4), 'base64');
    const swapped = Buffer.concat([hashes.subarray(8, 16), hashes.subarray(0, 8), hashes.subarray(16)]).toString('base64');
    const garbage: unknown[] = [
      undefined, null, 42, {}, [], '', 'S14', 'S14.', 'X14.AAAA', 'S13.', 's14.', 'S14.@@@@', 'S14.AAAA', 'S14.AAAAAAAAAAA', `S14.${hashes.toString('base64url')}x`,
      sparse.slice(0, -4), `S14.${swapped}`, `S14.${Buffer.concat([hashes.subarray(0, 8), hashes.subarray(0, 8)]).toString('base64')}`,
      `S14.${Buffer.alloc(1_025 * 8).toString('base64')}`, 'D14.', 'D14.AAAA', dense.slice(0, -8), `D14.${Buffer.alloc(16_384, 1).toString('base64')}`,
      `D14.${Buffer.from(dense.slice(4), 'base64').reverse().toString('base64')}`, sparse.replace('S14', 'S12'), dense.replace('D14', 'D12'),
      `D14.${deflateRawSync(Buffer.alloc(16_384, 52)).toString('base64')}`,
      `D14.${deflateRawSync(Buffer.alloc(1 << 20)).toString('base64')}`,
    ];
    for (const text of garbage) {
      const counter = UniqueCounter.decode(text, 14);
      assert.equal(counter.count(), 0, String(text).slice(0, 40));
      assert.equal(counter.encode(), 'S14.');
    }
    assert.equal(UniqueCounter.decode(sparse, 12).count(), 0, 'another precision');
    assert.equal(UniqueCounter.decode(sparse, 14).count(), 10);
    // The largest valid register (64 - p + 1) decodes, and even all of them at it count a finite number.
    const full = UniqueCounter.decode(`D14.${deflateRawSync(Buffer.alloc(16_384, 51)).toString('base64')}`, 14).count();
    assert.ok(full > 2 ** 50 && Number.isSafeInteger(full), `${full}`);
  });

  it('estimates within 2 % across the range at precision 14, for several key sets', () => {
    const errors: string[] = [];
    let worst = 0;
    for (const seed of ['a', 'b', 'c', 'd', 'e']) {
      const counter = UniqueCounter.empty(14);
      let added = 0;
      for (const n of [2_000, 5_000, 10_000, 30_000, 50_000, 100_000]) {
        for (; added < n; added++) counter.add(`viewer-${seed}-${added}`);
        const error = relativeError(counter.count(), n);
        worst = Math.max(worst, error);
        errors.push(`${seed}@${n}: ${(error * 100).toFixed(2)}%`);
        assert.ok(error < 0.02, `${seed}@${n}: ${counter.count()}`);
      }
    }
    console.log(`precision 14 relative errors (worst ${(worst * 100).toFixed(2)}%): ${errors.join(', ')}`);
  });

  it('estimates within 5 % at precision 12 (hourly, 1.6 % standard error)', () => {
    const errors: string[] = [];
    for (const seed of ['a', 'b', 'c']) {
      const counter = UniqueCounter.empty(12);
      let added = 0;
      for (const n of [1_000, 3_000, 10_000, 50_000]) {
        for (; added < n; added++) counter.add(`hour-${seed}-${added}`);
        errors.push(`${seed}@${n}: ${(relativeError(counter.count(), n) * 100).toFixed(2)}%`);
        assert.ok(relativeError(counter.count(), n) < 0.05, `${seed}@${n}: ${counter.count()}`);
      }
    }
    console.log(`precision 12 relative errors: ${errors.join(', ')}`);
  });

  it('adds quickly (measured, not asserted)', () => {
    const list = keys('speed', 0, 100_000);
    const counter = UniqueCounter.empty(14);
    const started = performance.now();
    for (const key of list) counter.add(key);
    const ms = performance.now() - started;
    const encodeStarted = performance.now();
    const text = counter.encode();
    const encodeMs = performance.now() - encodeStarted;
    console.log(`100,000 adds: ${ms.toFixed(1)} ms; encode ${encodeMs.toFixed(2)} ms, ${text.length} chars; count ${counter.count()}`);
    assert.ok(counter.count() > 0);
  });
});
