// Checkpoints in memory, the gate that waits on them, and the middleware that holds a read carrying a token.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONSISTENCY_HEADER } from '@docshare/contracts';
import { honourConsistency, makeConsistencyGate, makeMemoryCheckpoints, type Checkpoints } from '../src/index.ts';

describe('makeMemoryCheckpoints', () => {
  it('gives the lowest partition, 0 while one partition has none, and never moves back', async () => {
    const checkpoints = makeMemoryCheckpoints();
    await checkpoints.record('g', 0, 7);
    assert.equal(await checkpoints.low('g', 2), 0, 'partition 1 has nothing yet');
    await checkpoints.record('g', 1, 4);
    assert.equal(await checkpoints.low('g', 2), 4);
    await checkpoints.record('g', 1, 2);
    assert.equal(await checkpoints.low('g', 2), 4, 'an older record is ignored');
    assert.equal(await checkpoints.low('other', 2), 0, 'groups are apart');
  });
});

describe('makeConsistencyGate', () => {
  it('passes a token the group has reached, and one it reaches while waiting', async () => {
    const checkpoints = makeMemoryCheckpoints();
    const gate = makeConsistencyGate(checkpoints, 'g', 1, 60_000);
    await checkpoints.record('g', 0, 3);
    assert.equal(await gate.wait(3, 60_000), true);
    // The poll is a minute apart: only the record's wake-up can settle this wait.
    const waiting = gate.wait(5, 60_000);
    await checkpoints.record('g', 0, 5);
    assert.equal(await waiting, true);
  });

  it('answers false once the wait is over, and queries nothing for a token it already saw reached', async () => {
    let reads = 0;
    const checkpoints: Checkpoints = { record: async () => {}, low: async () => { reads++; return 2; } };
    const gate = makeConsistencyGate(checkpoints, 'g', 1, 1);
    assert.equal(await gate.wait(9, 20), false);
    assert.ok(reads >= 1);
    const before = reads;
    assert.equal(await gate.wait(2, 20), true);
    assert.equal(reads, before, 'a token at or below the known position passes without a read');
  });

  it('lets the waiters time out while the store fails', async () => {
    const checkpoints: Checkpoints = { record: async () => {}, low: async () => { throw new Error('down'); } };
    assert.equal(await makeConsistencyGate(checkpoints, 'g', 1, 1).wait(1, 20), false);
  });
});

describe('honourConsistency', () => {
  const run = (gate: { wait(token: number, timeoutMs: number): Promise<boolean> }, header?: string) => new Promise<{ err: unknown; timedOut: boolean }>((resolve) => {
    let timedOut = false;
    honourConsistency(gate, 10, () => { timedOut = true; })(
      { headers: header === undefined ? {} : { [CONSISTENCY_HEADER]: header } }, {}, (err?: unknown) => resolve({ err, timedOut }),
    );
  });

  it('passes a read without a token at once, and holds one with a token for the gate', async () => {
    const asked: number[] = [];
    const gate = { wait: async (token: number) => { asked.push(token); return false; } };
    assert.deepEqual(await run(gate), { err: undefined, timedOut: false });
    assert.deepEqual(asked, []);
    assert.deepEqual(await run(gate, '42'), { err: undefined, timedOut: true });
    assert.deepEqual(asked, [42]);
  });
});
