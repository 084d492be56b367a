/**
 * The kafkajs idle-loop patch (src/kafka/kafkajs-patch.ts) on kafkajs's real RequestQueue, no
 * broker: setTimeout is replaced by a recorder while a queue runs, so every timer the queue arms
 * is seen and fired by hand, deterministically. The tests run in order: the first ones need the
 * prototype still unpatched.
 */
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { applyKafkajsIdlePatch, KAFKAJS_IDLE_PATCH_VERSION } from '../src/kafka/kafkajs-patch.ts';

const require = createRequire(import.meta.url);

/** The parts of kafkajs's RequestQueue (src/network/requestQueue/index.js) the tests touch. */
interface RequestQueue {
  pending: unknown[];
  inflight: Map<number, unknown>;
  throttledUntil: number;
  throttleCheckTimeoutId: unknown;
  scheduleCheckPendingRequests(): void;
  checkPendingRequests(): void;
  push(request: { entry: Record<string, unknown>; expectResponse: boolean; sendRequest: () => void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer | null; size: number }): void;
  destroy(): void;
}
type RequestQueueClass = (new (options: Record<string, unknown>) => RequestQueue) & { prototype: RequestQueue };

const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as RequestQueueClass;
const unpatched = RequestQueue.prototype.scheduleCheckPendingRequests;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

const newQueue = (maxInFlightRequests: number | null = null): RequestQueue =>
  new RequestQueue({ maxInFlightRequests, requestTimeout: 30_000, enforceRequestTimeout: false, clientId: 'patch-test', broker: 'nowhere:9092', logger: quiet });

interface Armed {
  delay: number;
  fire(): void;
}

/**
 * Runs `body` with setTimeout replaced by a recorder: `armed` lists every timer armed meanwhile,
 * none of them scheduled; `fire()` runs one's callback (as the event loop would), inside the window.
 */
function withRecordedTimeouts(body: (armed: Armed[]) => void): Armed[] {
  const armed: Armed[] = [];
  const real = globalThis.setTimeout;
  globalThis.setTimeout = ((callback: () => void, delay?: number) => {
    armed.push({ delay: delay ?? 0, fire: callback });
    return { ref() { return this; }, unref() { return this; }, hasRef: () => false, refresh() { return this; }, [Symbol.toPrimitive]: () => 0 };
  }) as unknown as typeof setTimeout;
  try {
    body(armed);
  } finally {
    globalThis.setTimeout = real;
  }
  return armed;
}

/** Fires the last armed timer `times` times (each firing may arm the next); returns how many were armed in all. */
const runTimers = (queue: RequestQueue, times: number): number =>
  withRecordedTimeouts((armed) => {
    queue.scheduleCheckPendingRequests();
    for (let n = 0; n < times && armed.length > 0; n++) {
      const before = armed.length;
      armed.at(-1)!.fire();
      if (armed.length === before) break; // not re-armed: the loop ended
    }
  }).length;

describe('kafkajs idle-loop patch', () => {
  const temporary: string[] = [];
  after(async () => {
    await Promise.all(temporary.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('is not applied by importing the Kafka entry point', async () => {
    await import('../src/kafka.ts');
    assert.equal(RequestQueue.prototype.scheduleCheckPendingRequests, unpatched);
  });

  it('fixes a real loop: unpatched, an idle queue re-arms a negative (1 ms) check every time it fires', () => {
    const queue = newQueue();
    const armed = withRecordedTimeouts((timers) => {
      queue.scheduleCheckPendingRequests();
      for (let n = 0; n < 100; n++) timers.at(-1)!.fire();
    });
    queue.destroy();
    // Nothing pending, nothing throttled, yet every firing arms the next: ~1000 wake-ups a second per connection.
    assert.equal(armed.length, 101);
    assert.ok(armed.every((timer) => timer.delay < 0), 'delays are negative, which Node clamps to 1 ms (TimeoutNegativeWarning)');
  });

  it('the installed kafkajs is the version the patch was written for', () => {
    // Fails on a kafkajs upgrade: re-read scheduleCheckPendingRequests, then re-pin or drop the patch.
    assert.equal((require('kafkajs/package.json') as { version: string }).version, KAFKAJS_IDLE_PATCH_VERSION);
    assert.equal(KAFKAJS_IDLE_PATCH_VERSION, '2.2.4');
  });

  it('is applied by makeKafkaBus (through makeClient), which connects nothing until used', async () => {
    const { makeKafkaBus } = await import('../src/kafka.ts');
    const bus = makeKafkaBus({ brokers: ['127.0.0.1:1'], clientId: 'patch-test', topic: 'unused', deadLetterTopic: 'unused.dlq' });
    try {
      assert.notEqual(RequestQueue.prototype.scheduleCheckPendingRequests, unpatched);
      assert.deepEqual(applyKafkajsIdlePatch(), { applied: true, version: '2.2.4', already: true });
    } finally {
      await bus.close();
    }
  });

  it('patched, an idle queue arms no timer at all', () => {
    const queue = newQueue();
    assert.equal(runTimers(queue, 100), 0);
    assert.equal(queue.throttleCheckTimeoutId, null);
    // Also after the path a fulfilled request takes (fulfillRequest → checkPendingRequests → schedule).
    assert.equal(withRecordedTimeouts(() => queue.checkPendingRequests()).length, 0);
    queue.destroy();
  });

  it('patched, still polls every 10 ms while requests are pending, and stops once they are gone', () => {
    const queue = newQueue(1);
    queue.inflight.set(1, {}); // at maxInFlightRequests: the pending request has to wait
    queue.pending.push({});
    const armed = withRecordedTimeouts((timers) => {
      queue.scheduleCheckPendingRequests();
      timers.at(-1)!.fire(); // still blocked: re-armed
      queue.pending.length = 0; // sent meanwhile
      timers.at(-1)!.fire(); // nothing left: not re-armed
    });
    queue.destroy();
    assert.deepEqual(armed.map((timer) => timer.delay), [10, 10]);
  });

  it('patched, still wakes up when a client-side throttle ends, once', () => {
    const queue = newQueue();
    queue.throttledUntil = Date.now() + 5_000;
    const armed = withRecordedTimeouts((timers) => {
      queue.scheduleCheckPendingRequests();
      queue.throttledUntil = Date.now() - 1; // the throttle is over when the timer fires
      timers.at(-1)!.fire();
    });
    queue.destroy();
    assert.equal(armed.length, 1);
    assert.ok(armed[0]!.delay > 4_000 && armed[0]!.delay <= 5_000, `armed for the throttle's end, got ${armed[0]!.delay} ms`);
  });

  it('patched, a request pushed while throttled is still sent when the throttle ends, and the queue then goes quiet', () => {
    const queue = newQueue();
    queue.throttledUntil = Date.now() + 1_000;
    let sent = 0;
    let resolved = 0;
    const entry = { correlationId: 7, apiName: 'Metadata', apiKey: 3, apiVersion: 6, resolve: () => resolved++, reject: () => {} };
    const armed = withRecordedTimeouts((timers) => {
      queue.push({ entry, expectResponse: true, sendRequest: () => sent++ });
      assert.equal(sent, 0, 'throttled: queued, not sent');
      assert.equal(timers.length, 1, 'push() scheduled the check');
      queue.throttledUntil = Date.now() - 1;
      timers[0]!.fire();
      assert.equal(sent, 1, 'sent when the check ran');
      queue.fulfillRequest({ correlationId: 7, payload: null, size: 0 });
    });
    queue.destroy();
    assert.equal(resolved, 1);
    assert.equal(armed.length, 1, 'no timer after the queue emptied');
  });

  it('applying it again changes nothing (no second wrapper)', () => {
    const patched = RequestQueue.prototype.scheduleCheckPendingRequests;
    assert.deepEqual(applyKafkajsIdlePatch(), { applied: true, version: '2.2.4', already: true });
    assert.deepEqual(applyKafkajsIdlePatch(), { applied: true, version: '2.2.4', already: true });
    assert.equal(RequestQueue.prototype.scheduleCheckPendingRequests, patched);
    assert.equal(runTimers(newQueue(), 10), 0);
  });

  /** A fake kafkajs install of `version` whose RequestQueue is `source`; returns a file path to resolve it from. */
  const fakeKafkajs = async (
    version: string,
    source = 'module.exports = class RequestQueue { scheduleCheckPendingRequests() { this.calls = (this.calls ?? 0) + 1 } }\n',
  ): Promise<string> => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'kafkajs-patch-'));
    temporary.push(dir);
    const pkg = path.join(dir, 'node_modules', 'kafkajs');
    await mkdir(path.join(pkg, 'src/network/requestQueue'), { recursive: true });
    await writeFile(path.join(pkg, 'package.json'), JSON.stringify({ name: 'kafkajs', version, main: 'index.js' }));
    await writeFile(path.join(pkg, 'src/network/requestQueue/index.js'), source);
    return path.join(dir, 'here.js');
  };
  interface FakeQueue {
    pending: unknown[];
    throttledUntil: number;
    calls?: number;
    scheduleCheckPendingRequests(this: FakeQueue): void;
  }
  const fakeQueueClass = (from: string) =>
    createRequire(from)('kafkajs/src/network/requestQueue/index.js') as { prototype: FakeQueue };

  it('refuses any other kafkajs version, says why, and leaves it alone', async () => {
    const from = await fakeKafkajs('2.2.5');
    const result = applyKafkajsIdlePatch({ from });
    assert.equal(result.applied, false);
    assert.equal(result.version, '2.2.5');
    assert.match(!result.applied ? result.reason : '', /kafkajs 2\.2\.5 is installed; the idle-loop patch is only for 2\.2\.4/);
    const { prototype } = fakeQueueClass(from);
    const idle: FakeQueue = { pending: [], throttledUntil: -1, scheduleCheckPendingRequests: prototype.scheduleCheckPendingRequests };
    idle.scheduleCheckPendingRequests();
    assert.equal(idle.calls, 1, 'the original method runs even when idle');
    assert.equal(Object.getOwnPropertySymbols(prototype).length, 0);
  });

  it('on 2.2.4, skips the original only when nothing is pending or throttled', async () => {
    const from = await fakeKafkajs('2.2.4');
    assert.deepEqual(applyKafkajsIdlePatch({ from }), { applied: true, version: '2.2.4', already: false });
    const { prototype } = fakeQueueClass(from);
    const call = (state: Pick<FakeQueue, 'pending' | 'throttledUntil'>): number => {
      const queue: FakeQueue = { ...state, scheduleCheckPendingRequests: prototype.scheduleCheckPendingRequests };
      queue.scheduleCheckPendingRequests();
      return queue.calls ?? 0;
    };
    assert.equal(call({ pending: [], throttledUntil: -1 }), 0);
    assert.equal(call({ pending: [], throttledUntil: Date.now() - 1 }), 0);
    assert.equal(call({ pending: [{}], throttledUntil: -1 }), 1);
    assert.equal(call({ pending: [], throttledUntil: Date.now() + 60_000 }), 1);
  });

  it('reports a kafkajs 2.2.4 whose RequestQueue lacks the method instead of throwing', async () => {
    const from = await fakeKafkajs('2.2.4', 'module.exports = class RequestQueue {}\n');
    assert.deepEqual(applyKafkajsIdlePatch({ from }), {
      applied: false, version: '2.2.4', reason: 'kafkajs\'s RequestQueue has no scheduleCheckPendingRequests method',
    });
  });

  it('reports a missing kafkajs instead of throwing', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'kafkajs-patch-none-'));
    temporary.push(dir);
    const result = applyKafkajsIdlePatch({ from: path.join(dir, 'here.js') });
    assert.equal(result.applied, false);
    assert.equal(result.version, null);
    assert.match(!result.applied ? result.reason : '', /cannot read kafkajs's package\.json/);
  });
});
