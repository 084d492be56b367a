import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { sleep } from '@docshare/contracts';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimiter } from './index.ts';

/** What the contract asks of `make`: a limiter with these settings, ready (its `ready()` resolves). */
export interface ContractLimiterOptions {
  points: number;
  windowSeconds: number;
  /** Fresh per call, so a shared backing store (one Redis) needs no reset between tests or runs. */
  keyPrefix: string;
}

type Decision = 'allowed' | 'refused';

/** The limiter's answer: allowed (resolves with a RateLimiterRes) or refused (rejects with one); anything else fails. */
const decide = async (consume: Promise<RateLimiterRes>): Promise<Decision> => {
  try {
    const res = await consume;
    assert.ok(res instanceof RateLimiterRes, `consume resolved with ${String(res)}`);
    return 'allowed';
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) return 'refused';
    throw rejection;
  }
};

/**
 * The behaviour every RateLimiter adapter must show (the in-memory one and the Redis one), seen
 * from one process: a fixed window of `points` per key, refusals that say how long to wait, keys
 * that do not share a budget, concurrent requests counted once each, and a limiter that keeps
 * deciding (never throwing) after `close()`. How replicas share a budget is the Redis adapter's
 * own test.
 */
export const rateLimiterContract = (name: string, make: (options: ContractLimiterOptions) => Promise<RateLimiter>): void =>
  void describe(`RateLimiter contract: ${name}`, () => {
    const opened: RateLimiter[] = [];
    const open = async (points: number, windowSeconds: number): Promise<RateLimiter> => {
      const rl = await make({ points, windowSeconds, keyPrefix: `docshare-rl-contract-${randomUUID()}` });
      opened.push(rl);
      return rl;
    };
    after(async () => {
      for (const rl of opened) await rl.close();
    });

    it('is ready, and decides from its own store (no fallback decisions)', async () => {
      const rl = await open(3, 60);
      await rl.ready();
      assert.equal(await decide(rl.limiter.consume('user-1')), 'allowed');
      assert.notEqual(rl.status().mode, 'fallback');
      assert.equal(rl.status().fallbackDecisions, 0);
    });

    it('allows `points` requests per key and window, then refuses with the time to wait', async () => {
      const rl = await open(3, 60);
      const first = await rl.limiter.consume('user-1');
      assert.equal(first.remainingPoints, 2);
      assert.equal(first.consumedPoints, 1);
      assert.equal(await decide(rl.limiter.consume('user-1')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('user-1')), 'allowed');
      await assert.rejects(rl.limiter.consume('user-1'), (res: unknown) => {
        assert.ok(res instanceof RateLimiterRes);
        assert.equal(res.remainingPoints, 0);
        assert.ok(res.msBeforeNext > 0 && res.msBeforeNext <= 60_000, `msBeforeNext ${res.msBeforeNext}`);
        return true;
      });
      assert.equal(await decide(rl.limiter.consume('user-1')), 'refused');
    });

    it('keys have budgets of their own; get() peeks without spending', async () => {
      const rl = await open(2, 60);
      assert.equal(await decide(rl.limiter.consume('user-a')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('user-a')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('user-a')), 'refused');
      assert.equal(await decide(rl.limiter.consume('ip-10.0.0.1')), 'allowed');
      assert.equal((await rl.limiter.get('ip-10.0.0.1'))?.consumedPoints, 1);
      assert.equal((await rl.limiter.get('ip-10.0.0.1'))?.consumedPoints, 1);
      assert.equal(await rl.limiter.get('never-seen'), null);
    });

    it('limiters with different key prefixes do not share a budget', async () => {
      const [a, b] = [await open(1, 60), await open(1, 60)];
      assert.equal(await decide(a.limiter.consume('same-user')), 'allowed');
      assert.equal(await decide(a.limiter.consume('same-user')), 'refused');
      assert.equal(await decide(b.limiter.consume('same-user')), 'allowed');
    });

    it('of 20 concurrent requests on one key with 5 points, exactly 5 are allowed', async () => {
      const rl = await open(5, 60);
      const answers = await Promise.all(Array.from({ length: 20 }, () => decide(rl.limiter.consume('burst'))));
      assert.equal(answers.filter((a) => a === 'allowed').length, 5);
      assert.equal(answers.filter((a) => a === 'refused').length, 15);
    });

    it('a refused key is allowed again once its window has passed', async () => {
      const rl = await open(1, 1);
      assert.equal(await decide(rl.limiter.consume('user-w')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('user-w')), 'refused');
      // Waits out what is left of the window (at most 1 s) as the refusal tells it, and a little more.
      const left = await rl.limiter.get('user-w');
      await sleep((left?.msBeforeNext ?? 0) + 100);
      assert.equal(await decide(rl.limiter.consume('user-w')), 'allowed');
    });

    it('after close() it keeps deciding, never throwing', async () => {
      const rl = await open(1, 60);
      await rl.close();
      assert.equal(await decide(rl.limiter.consume('after-close')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('after-close')), 'refused');
    });
  });
