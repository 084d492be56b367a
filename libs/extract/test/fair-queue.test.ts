// The fair queue in front of the extraction pool: who gets a free slot. Files are stand-ins that
// end when the test says so; "within one budget" is counted in files that end, never in time.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeFairQueue, nextOwner, type OwnerTurns } from '../src/fair-queue.ts';

/** A queue whose files start when their turn comes and end when the test ends them; `log` records starts and ends in order. */
const harness = (options: Parameters<typeof makeFairQueue>[0]) => {
  const queue = makeFairQueue(options);
  const log: string[] = [];
  const ends = new Map<string, (outcome: 'ok' | 'timeout') => void>();
  const settled: Promise<unknown>[] = [];
  const submit = (owner: number, name: string): void => {
    settled.push(queue.run(owner, () => new Promise<void>((resolve) => {
      log.push(`start ${name}`);
      ends.set(name, (outcome) => {
        if (outcome === 'timeout') queue.strike(owner);
        log.push(`end ${name}`);
        resolve();
      });
    })).catch(() => {}));
  };
  /** Ends a running file; its slot is handed on before this returns (after the queue's microtasks). */
  const end = async (name: string, outcome: 'ok' | 'timeout' = 'ok'): Promise<void> => {
    const finish = ends.get(name);
    assert.ok(finish, `${name} is not running (log: ${log.join(', ')})`);
    ends.delete(name);
    finish(outcome);
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  const running = (): string[] => [...ends.keys()].sort();
  return { queue, log, submit, end, running, settled };
};

const turns = (owners: Partial<OwnerTurns>[]): OwnerTurns[] =>
  owners.map((o, i) => ({ owner: i + 1, waiting: 0, running: 0, lastTurn: -1, demoted: false, ...o }));

describe('fair queue: nextOwner', () => {
  it('given waiting owners, the one whose last turn is oldest goes next; a newcomer before anyone served', () => {
    assert.equal(nextOwner(turns([{ waiting: 5, lastTurn: 7 }, { waiting: 1, lastTurn: 3 }])), 2);
    assert.equal(nextOwner(turns([{ waiting: 5, lastTurn: 7 }, { waiting: 1, lastTurn: -1 }])), 2);
  });

  it('given equal turns, the earlier arrival goes first; owners with nothing waiting are passed over', () => {
    assert.equal(nextOwner(turns([{ waiting: 0, lastTurn: -1 }, { waiting: 2 }, { waiting: 2 }])), 2);
    assert.equal(nextOwner(turns([{ waiting: 0 }, { waiting: 0 }])), undefined);
  });

  it('given a demoted owner and anyone else waiting, the other goes, whatever their turns', () => {
    assert.equal(nextOwner(turns([{ waiting: 9, lastTurn: -1, demoted: true }, { waiting: 1, lastTurn: 50 }])), 2);
  });

  it('given only demoted owners waiting, one of their files at a time per owner', () => {
    assert.equal(nextOwner(turns([{ waiting: 9, demoted: true }])), 1);
    assert.equal(nextOwner(turns([{ waiting: 9, running: 1, demoted: true }])), undefined);
    assert.equal(nextOwner(turns([{ waiting: 9, running: 1, demoted: true }, { waiting: 1, demoted: true, lastTurn: 4 }])), 2);
  });
});

describe('fair queue: one owner\'s hostile files delay another\'s by at most one budget', () => {
  it('one slot: A queued six files, B\'s file starts as soon as A\'s running file ends (before A\'s second)', async () => {
    const h = harness({ concurrency: 1 });
    for (let i = 1; i <= 6; i++) h.submit(1, `A${i}`);
    assert.deepEqual(h.running(), ['A1']);
    h.submit(2, 'B1');
    await h.end('A1', 'timeout');
    assert.deepEqual(h.running(), ['B1']);
    assert.deepEqual(h.log, ['start A1', 'end A1', 'start B1']);
  });

  it('two slots: A fills both, B starts when the first of them ends; then A, demoted, runs one file at a time', async () => {
    const h = harness({ concurrency: 2 });
    for (let i = 1; i <= 6; i++) h.submit(1, `A${i}`);
    assert.deepEqual(h.running(), ['A1', 'A2']);
    h.submit(2, 'B1');
    h.submit(2, 'B2');
    await h.end('A2', 'timeout');
    assert.deepEqual(h.running(), ['A1', 'B1'], 'B took the first slot that came free');
    await h.end('A1', 'timeout');
    assert.ok(h.queue.demoted(1), 'two files over budget demote A');
    assert.deepEqual(h.running(), ['B1', 'B2'], 'a demoted owner waits while anyone else waits');
    await h.end('B1');
    assert.deepEqual(h.running(), ['A3', 'B2']);
    await h.end('B2');
    assert.deepEqual(h.running(), ['A3'], 'a demoted owner runs one file at a time, even with a slot free');
    h.submit(3, 'C1');
    assert.deepEqual(h.running(), ['A3', 'C1'], 'a newcomer starts at once: the demoted owner never holds every slot');
  });

  it('round robin among owners who keep files queued', async () => {
    const h = harness({ concurrency: 1 });
    for (const name of ['A1', 'A2', 'A3']) h.submit(1, name);
    for (const name of ['B1', 'B2']) h.submit(2, name);
    h.submit(3, 'C1');
    for (const name of ['A1', 'B1', 'C1', 'A2', 'B2', 'A3']) {
      assert.deepEqual(h.running(), [name]);
      await h.end(name);
    }
  });

  it('strikes expire: an owner is demoted only while `demoteAfter` strikes fall within the window', async () => {
    let clock = 0;
    const h = harness({ concurrency: 1, demoteAfter: 2, strikeWindowMs: 1_000, now: () => clock });
    h.queue.strike(1);
    clock = 500;
    h.queue.strike(1);
    assert.equal(h.queue.demoted(1), true);
    clock = 1_200;
    assert.equal(h.queue.demoted(1), false, 'the first strike is older than the window');
    assert.equal(h.queue.stats().demoted, 0);
  });

  it('close rejects the files waiting and refuses new ones; a running file finishes', async () => {
    const h = harness({ concurrency: 1 });
    const first = h.queue.run(1, async () => 'ran');
    const waiting = h.queue.run(1, async () => 'never');
    h.queue.close(new Error('closed'));
    await assert.rejects(waiting, /closed/);
    await assert.rejects(h.queue.run(2, async () => 'late'), /closed/);
    assert.equal(await first, 'ran');
  });

  it('a failing file frees its slot and the caller hears its error', async () => {
    const queue = makeFairQueue({ concurrency: 1 });
    await assert.rejects(queue.run(1, async () => { throw new Error('blob store down'); }), /blob store down/);
    await assert.rejects(queue.run(1, () => { throw new Error('sync throw'); }), /sync throw/);
    assert.equal(await queue.run(1, async () => 42), 42);
    assert.deepEqual(queue.stats(), { running: 0, waiting: 0, owners: 0, demoted: 0 });
  });
});
