import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { PassThrough, type Readable } from 'node:stream';
import { setImmediate as turn } from 'node:timers/promises';
import { makeByteThrottle } from '../src/commands/throttle.ts';

// The per-user byte budget of docshare's part URLs (commands/throttle.ts), on an injected clock
// and mocked timers: what is asserted is the booking arithmetic (which bytes pass at once, how
// long the others are held), never how long anything took.

const RATE = 1_000; // bytes per second: 1 byte per millisecond
const BURST = 250; // BURST_MS of budget: 250 bytes at this rate

/** A throttle on a clock the test moves, with setTimeout mocked: `advance(ms)` moves both. */
const setup = (t: TestContext, rate = RATE) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let clock = 1_000_000;
  const throttle = makeByteThrottle(rate, () => clock);
  const advance = async (ms: number): Promise<void> => {
    clock += ms;
    t.mock.timers.tick(ms);
    await turn();
  };
  const idle = (ms: number): void => {
    clock += ms;
  };
  return { throttle, advance, idle };
};

/** A part's body and what of it came out of the paced stream so far. */
const paced = (throttle: ReturnType<typeof makeByteThrottle>, userId: number) => {
  const body = new PassThrough();
  const out = throttle.pace(userId, body);
  const seen = { bytes: 0 };
  out.on('data', (chunk: Buffer) => { seen.bytes += chunk.length; });
  const send = async (bytes: number): Promise<void> => {
    body.write(Buffer.alloc(bytes, 1));
    await turn();
  };
  return { body, out, seen, send };
};

describe('byte throttle', () => {
  it('0 or less is unlimited: the body itself, untouched', () => {
    for (const rate of [0, -1]) {
      const body = new PassThrough();
      assert.equal(makeByteThrottle(rate, () => 0).pace(1, body), body);
    }
  });

  it('a quiet user\'s first burst (250 ms of budget) passes at once; the bytes beyond are held for bytes / rate', async (t) => {
    const { throttle, advance } = setup(t);
    const a = paced(throttle, 1);
    await a.send(BURST);
    assert.equal(a.seen.bytes, BURST, 'the burst is not held');
    await a.send(100);
    assert.equal(a.seen.bytes, BURST, '100 bytes beyond the burst are held');
    await advance(99);
    assert.equal(a.seen.bytes, BURST, 'still held 1 ms before their 100 ms');
    await advance(1);
    assert.equal(a.seen.bytes, BURST + 100, 'released after 100 bytes / 1000 B/s');
  });

  it('one chunk larger than the burst is held for what it takes beyond the burst', async (t) => {
    const { throttle, advance } = setup(t);
    const a = paced(throttle, 1);
    await a.send(700);
    assert.equal(a.seen.bytes, 0);
    await advance(449);
    assert.equal(a.seen.bytes, 0);
    await advance(1);
    assert.equal(a.seen.bytes, 700, '(700 - 250) bytes at 1 byte/ms');
  });

  it('chunks booked back to back queue on the line: each waits for the bytes booked before it', async (t) => {
    const { throttle, advance } = setup(t);
    const a = paced(throttle, 1);
    await a.send(BURST);
    await a.send(50);
    await a.send(30);
    assert.equal(a.seen.bytes, BURST);
    await advance(50);
    // The second chunk is booked when the first is released: its line is free at +50 ms, it ends at +80.
    assert.equal(a.seen.bytes, BURST + 50);
    await advance(29);
    assert.equal(a.seen.bytes, BURST + 50);
    await advance(1);
    assert.equal(a.seen.bytes, BURST + 80);
  });

  it('the budget is the user\'s, shared by all their parts in flight; another user has their own', async (t) => {
    const { throttle, advance } = setup(t);
    const first = paced(throttle, 1);
    const second = paced(throttle, 1);
    const other = paced(throttle, 2);
    await first.send(BURST);
    await second.send(100);
    await other.send(BURST);
    assert.equal(first.seen.bytes, BURST);
    assert.equal(second.seen.bytes, 0, 'the user\'s burst was spent by their other part');
    assert.equal(other.seen.bytes, BURST, 'another user is not held by the first');
    await advance(100);
    assert.equal(second.seen.bytes, 100);
  });

  it('an idle line gives back at most the burst, never more', async (t) => {
    const { throttle, advance, idle } = setup(t);
    const a = paced(throttle, 1);
    await a.send(BURST);
    idle(60_000);
    await a.send(BURST + 100);
    assert.equal(a.seen.bytes, BURST, 'a minute of silence does not bank a minute of budget');
    await advance(100);
    assert.equal(a.seen.bytes, 2 * BURST + 100);
  });

  it('a faster rate holds proportionally less', async (t) => {
    const { throttle, advance } = setup(t, 10 * RATE);
    const a = paced(throttle, 1);
    await a.send(10 * BURST + 1_000);
    assert.equal(a.seen.bytes, 0);
    await advance(99);
    assert.equal(a.seen.bytes, 0);
    await advance(1);
    assert.equal(a.seen.bytes, 10 * BURST + 1_000, '1000 bytes beyond the burst at 10 bytes/ms');
  });

  it('an error of the body reaches the paced stream, also while a chunk is held (the hold is dropped)', async (t) => {
    const { throttle, advance } = setup(t);
    const a = paced(throttle, 1);
    const failed = once(a.out, 'error');
    await a.send(BURST);
    await a.send(100);
    const boom = new Error('client went away');
    a.body.destroy(boom);
    const [error] = await failed as [Error];
    assert.equal(error, boom);
    await advance(1_000);
    assert.equal(a.seen.bytes, BURST, 'the held chunk never comes out of a failed stream');
    assert.equal(a.out.destroyed, true);
  });

  it('an error of the body before anything was sent reaches the paced stream', async (t) => {
    const { throttle } = setup(t);
    const body = new PassThrough();
    const out: Readable = throttle.pace(1, body);
    const failed = once(out, 'error');
    const boom = new Error('reset');
    body.destroy(boom);
    assert.equal((await failed as [Error])[0], boom);
  });

  it('the end of the body ends the paced stream once the held bytes are out', async (t) => {
    const { throttle, advance } = setup(t);
    const a = paced(throttle, 1);
    const ended = once(a.out, 'end');
    await a.send(BURST + 10);
    a.body.end();
    await turn();
    assert.equal(a.out.readableEnded, false, 'not ended while bytes are held');
    await advance(10);
    await ended;
    assert.equal(a.seen.bytes, BURST + 10);
  });

  it('a reader that gives up (the store failed) stops the body being fed to it', async (t) => {
    const { throttle } = setup(t);
    const a = paced(throttle, 1);
    await a.send(10);
    a.out.destroy();
    await turn();
    a.body.write(Buffer.alloc(10));
    await turn();
    assert.equal(a.seen.bytes, 10);
    assert.equal(a.body.readableFlowing, false, 'the body is no longer piped (paused)');
  });
});
