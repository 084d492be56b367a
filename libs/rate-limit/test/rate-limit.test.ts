import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { rateLimiterContract } from '../src/contract.ts';
import { makeRateLimiter } from '../src/index.ts';
import { decide, eventually, freePort, recordingLogger, watchUnhandled } from './helpers.ts';

// No server needed: the memory variant, and a Redis that is configured but never reachable.
const unhandled = watchUnhandled();
after(() => {
  unhandled.stop();
  assert.deepEqual(unhandled.errors, [], 'no unhandled rejection or uncaught exception');
});

rateLimiterContract('memory', async (options) => makeRateLimiter(options));

describe('rate limiter without Redis (memory)', () => {
  it('allows `points` requests per key and window, then refuses with the time to wait', async () => {
    const { limiter, status } = makeRateLimiter({ points: 3, windowSeconds: 60 });
    assert.ok(limiter instanceof RateLimiterMemory);
    const first = await limiter.consume('user-1');
    assert.equal(first.remainingPoints, 2);
    assert.equal(await decide(limiter.consume('user-1')), 'allowed');
    assert.equal(await decide(limiter.consume('user-1')), 'allowed');
    await assert.rejects(limiter.consume('user-1'), (res: unknown) => {
      assert.ok(res instanceof RateLimiterRes);
      assert.equal(res.remainingPoints, 0);
      assert.ok(res.msBeforeNext > 0 && res.msBeforeNext <= 60_000);
      return true;
    });
    // Another key has its own budget; get() peeks without spending.
    assert.equal(await decide(limiter.consume('ip-10.0.0.1')), 'allowed');
    assert.equal((await limiter.get('ip-10.0.0.1'))?.consumedPoints, 1);
    assert.equal(await limiter.get('never-seen'), null);
    assert.deepEqual(status(), { mode: 'memory', fallbackDecisions: 0, connectionErrors: 0 });
  });

  it('counts per instance: two processes without Redis do not share a budget', async () => {
    const a = makeRateLimiter({ points: 2, windowSeconds: 60 });
    const b = makeRateLimiter({ points: 2, windowSeconds: 60 });
    for (const rl of [a, b]) {
      assert.equal(await decide(rl.limiter.consume('same-user')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('same-user')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('same-user')), 'refused');
    }
  });

  it('is always ready and closes', async () => {
    const rl = makeRateLimiter({ points: 1, windowSeconds: 1 });
    await rl.ready();
    await rl.close();
  });

  it('refuses nonsensical settings', () => {
    assert.throws(() => makeRateLimiter({ points: 0, windowSeconds: 60 }), RangeError);
    assert.throws(() => makeRateLimiter({ points: 1.5, windowSeconds: 60 }), RangeError);
    assert.throws(() => makeRateLimiter({ points: 30, windowSeconds: 0 }), RangeError);
  });
});

describe('rate limiter with a Redis that is never reachable', () => {
  it('keeps limiting locally, reports not ready, logs once, never throws', async () => {
    const port = await freePort();
    const logger = recordingLogger();
    const rl = makeRateLimiter({
      points: 3, windowSeconds: 60, logger,
      redis: { url: `redis://:s3cret@127.0.0.1:${port}` },
    });
    try {
      // Answers at once, from the local limiter, and still refuses past the limit.
      assert.equal(await decide(rl.limiter.consume('u')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('u')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('u')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('u')), 'refused');
      // Peeking (the gateway's probes) answers too.
      assert.equal((await rl.limiter.get('u'))?.consumedPoints, 4);
      await assert.rejects(rl.ready(), /Redis at .* is (connecting|reconnecting|close)/);
      assert.equal(rl.status().mode, 'fallback');
      assert.equal(rl.status().fallbackDecisions, 4);

      // Reconnect attempts keep failing; the outage is logged once, with the password hidden.
      await eventually(() => assert.ok(rl.status().connectionErrors >= 3));
      const warnings = logger.lines.filter((line) => line.level === 'warn');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!.msg, /not reachable yet; each replica limits on its own/);
      assert.doesNotMatch(JSON.stringify(logger.lines), /s3cret/);
    } finally {
      await rl.close();
    }
    // Still answers after close (from memory).
    assert.equal(await decide(rl.limiter.consume('after-close')), 'allowed');
  });

  it('accepts a pino logger', async () => {
    const sink: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        sink.push(chunk.toString());
        done();
      },
    });
    const rl = makeRateLimiter({
      points: 1, windowSeconds: 1, logger: pino({ level: 'info' }, destination),
      redis: { url: `redis://127.0.0.1:${await freePort()}` },
    });
    try {
      await eventually(() => assert.match(sink.join(''), /"level":40.*Redis not reachable yet/));
    } finally {
      await rl.close();
    }
  });
});
