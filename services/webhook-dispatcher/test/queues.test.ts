// The per-endpoint fair queue: FIFO per key, the concurrency bounds per key and in all,
// round-robin between keys, and the memory bounds (per key and in all), with runs that end only
// when the test releases them (no timing).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeFairQueue, type FairQueueOptions } from '../src/queues.ts';

/** A queue whose runs are held until released; `started` lists the items in the order they started. */
const harness = (options: Omit<FairQueueOptions<string, string>, 'run'>) => {
  const started: string[] = [];
  const release = new Map<string, () => void>();
  const queue = makeFairQueue<string, string>({
    ...options,
    run: (_key, item) => new Promise<void>((resolve) => {
      started.push(item);
      release.set(item, resolve);
    }),
  });
  /** Ends the run of `item` and lets the queue start what follows. */
  const finish = async (item: string): Promise<void> => {
    const done = release.get(item);
    assert.ok(done, `${item} is not running`);
    release.delete(item);
    done();
    // The run's promise, the queue's finally and the next start.
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { queue, started, finish, running: () => [...release.keys()] };
};

describe('webhook dispatcher: fair queue', () => {
  it('keeps one key\'s items in order with one in flight per key', async () => {
    const { queue, started, finish } = harness({ perKey: 1, total: 10, bound: 10 });
    for (const item of ['a1', 'a2', 'a3']) assert.equal(queue.push('a', item), true);
    assert.deepEqual(started, ['a1']);
    await finish('a1');
    assert.deepEqual(started, ['a1', 'a2']);
    await finish('a2');
    await finish('a3');
    assert.deepEqual(started, ['a1', 'a2', 'a3']);
    assert.deepEqual(queue.stats(), { queued: 0, inFlight: 0 });
    assert.equal(queue.depths().size, 0, 'an idle key is forgotten');
  });

  it('a key whose runs hang does not hold another key', async () => {
    const { queue, started, finish } = harness({ perKey: 1, total: 4, bound: 10 });
    queue.push('slow', 's1');
    queue.push('slow', 's2');
    queue.push('fast', 'f1');
    queue.push('fast', 'f2');
    assert.deepEqual(started, ['s1', 'f1']);
    await finish('f1');
    assert.deepEqual(started, ['s1', 'f1', 'f2'], 'fast goes on while s1 hangs');
    assert.deepEqual(queue.stats(), { queued: 1, inFlight: 2 });
  });

  it('serves keys round-robin within the total bound', async () => {
    const { queue, started, finish } = harness({ perKey: 2, total: 2, bound: 10 });
    for (const item of ['a1', 'a2', 'a3', 'a4']) queue.push('a', item);
    for (const item of ['b1', 'b2']) queue.push('b', item);
    assert.deepEqual(started, ['a1', 'a2'], 'two in all');
    await finish('a1');
    assert.deepEqual(started, ['a1', 'a2', 'b1'], 'b waits for no more than one of a\'s turns');
    await finish('a2');
    assert.deepEqual(started, ['a1', 'a2', 'b1', 'a3']);
    await finish('b1');
    assert.deepEqual(started, ['a1', 'a2', 'b1', 'a3', 'b2']);
  });

  it('holds at most `bound` per key and `maxHeld` in all, reservations included', async () => {
    const { queue, finish } = harness({ perKey: 1, total: 1, bound: 2, maxHeld: 3 });
    assert.equal(queue.reserve('a'), true);
    assert.equal(queue.push('a', 'a1'), true);
    assert.equal(queue.push('a', 'a2'), false, 'a holds two (one reserved)');
    assert.deepEqual([...queue.full()], ['a']);
    assert.equal(queue.push('b', 'b1'), true);
    assert.equal(queue.room(), 0);
    assert.equal(queue.push('c', 'c1'), false, 'three in all');
    assert.equal(queue.hasRoom('c'), false);
    queue.cancel('a');
    assert.equal(queue.hasRoom('c'), true);
    assert.deepEqual(queue.depths(), new Map([['a', 1], ['b', 1]]));
    await finish('a1');
    await finish('b1');
    assert.deepEqual(queue.stats(), { queued: 0, inFlight: 0 });
  });

  it('a reserved place runs its item once filled, in the order of the fills', async () => {
    const { queue, started, finish } = harness({ perKey: 1, total: 5, bound: 5 });
    assert.equal(queue.reserve('a'), true);
    assert.equal(queue.reserve('a'), true);
    assert.deepEqual(queue.stats(), { queued: 2, inFlight: 0 });
    queue.fill('a', 'a1');
    queue.fill('a', 'a2');
    assert.deepEqual(started, ['a1']);
    await finish('a1');
    assert.deepEqual(started, ['a1', 'a2']);
    assert.throws(() => queue.fill('a', 'a3'), /without a reservation/);
  });

  it('drain takes back what waits, leaves what runs; idle resolves when the runs end', async () => {
    const { queue, finish, running } = harness({ perKey: 1, total: 5, bound: 5 });
    queue.push('a', 'a1');
    queue.push('a', 'a2');
    queue.push('b', 'b1');
    assert.deepEqual(queue.drain(), [{ key: 'a', item: 'a2' }]);
    assert.deepEqual(running().sort(), ['a1', 'b1']);
    let idle = false;
    const waiting = queue.idle().then(() => { idle = true; });
    await finish('a1');
    assert.equal(idle, false);
    await finish('b1');
    await waiting;
    assert.deepEqual(queue.stats(), { queued: 0, inFlight: 0 });
  });

  it('a run that rejects is reported and frees its slot', async () => {
    const errors: unknown[] = [];
    const order: string[] = [];
    const queue = makeFairQueue<string, string>({
      perKey: 1, total: 1, bound: 5,
      run: async (_key, item) => {
        order.push(item);
        if (item === 'bad') throw new Error('boom');
      },
      onError: (error) => errors.push(error),
    });
    queue.push('a', 'bad');
    queue.push('a', 'good');
    await queue.idle();
    for (let i = 0; i < 5; i++) await Promise.resolve();
    await queue.idle();
    assert.deepEqual(order, ['bad', 'good']);
    assert.equal(errors.length, 1);
  });
});
