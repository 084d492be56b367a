// The projection side's store commands: checkpoints written only when they move, coalesced into one
// command, never waited for by a batch; the generation pointer read once per batch in a steady stream.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Db } from 'mongodb';
import { testEvent } from '@docshare/contracts/testing';
import { makeMongoCheckpoints, type Checkpoints } from '@docshare/consistency';
import { fencedByGeneration, projectBatches } from '../src/index.ts';

type Op = { updateOne: { filter: { _id: string }; update: { $max: { through: number } }; upsert: boolean } };

/** A Db whose one collection records each bulkWrite, and fails the next `failNext` of them. */
const fakeCheckpointDb = () => {
  const writes: Op[][] = [];
  const stored = new Map<string, number>();
  const state = { failNext: 0 };
  const collection = {
    async bulkWrite(ops: Op[]) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (state.failNext > 0) {
        state.failNext--;
        throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
      }
      writes.push(ops);
      for (const { updateOne: { filter, update } } of ops) stored.set(filter._id, Math.max(stored.get(filter._id) ?? 0, update.$max.through));
      return {};
    },
    find(filter: { _id: { $in: string[] } }) {
      return { toArray: async () => filter._id.$in.filter((id) => stored.has(id)).map((_id) => ({ _id, through: stored.get(_id)! })) };
    },
  };
  return { db: { collection: () => collection } as unknown as Db, writes, stored, state };
};

describe('Mongo checkpoints', () => {
  it('writes the records made together (six partitions, two groups) as one command', async () => {
    const { db, writes } = fakeCheckpointDb();
    const checkpoints = makeMongoCheckpoints(db);
    const recorded: Promise<void>[] = [];
    for (let p = 0; p < 6; p++) recorded.push(checkpoints.record('files', p, 10 + p), checkpoints.record('stats', p, 10));
    await Promise.all(recorded);
    assert.equal(writes.length, 1);
    assert.equal(writes[0]!.length, 12);
    assert.equal(await checkpoints.low('files', 6), 10);
  });

  it('sends nothing for a checkpoint that did not move', async () => {
    const { db, writes } = fakeCheckpointDb();
    const checkpoints = makeMongoCheckpoints(db);
    await checkpoints.record('files', 0, 7);
    await checkpoints.record('files', 0, 7);
    await checkpoints.record('files', 0, 5);
    assert.equal(writes.length, 1);
    await checkpoints.record('files', 0, 8);
    assert.equal(writes.length, 2);
    assert.deepEqual(writes[1]!.map((op) => op.updateOne.update.$max.through), [8]);
  });

  it('keeps the highest of what was recorded while a write was in flight, and writes it next', async () => {
    const { db, writes, stored } = fakeCheckpointDb();
    const checkpoints = makeMongoCheckpoints(db, 'projection_checkpoints', { coalesceMs: 0 });
    const first = checkpoints.record('files', 0, 1);
    await new Promise((resolve) => setTimeout(resolve, 0)); // the first write is in flight
    const later = [checkpoints.record('files', 0, 2), checkpoints.record('files', 0, 4), checkpoints.record('files', 0, 3)];
    await Promise.all([first, ...later]);
    assert.equal(writes.length, 2);
    assert.equal(stored.get('files/0'), 4);
  });

  it('a failed write rejects its records and is tried again with what came since', async () => {
    const { db, writes, stored, state } = fakeCheckpointDb();
    const checkpoints = makeMongoCheckpoints(db, 'projection_checkpoints', { coalesceMs: 0, retryMaxMs: 5 });
    state.failNext = 1;
    await assert.rejects(checkpoints.record('files', 1, 9), /connection reset/);
    await checkpoints.record('files', 2, 3);
    assert.equal(stored.get('files/1'), 9, 'the failed value is written with the next one');
    assert.equal(stored.get('files/2'), 3);
    assert.ok(writes.length <= 2);
  });

  it('flush writes what is held back', async () => {
    const { db, stored } = fakeCheckpointDb();
    const checkpoints = makeMongoCheckpoints(db, 'projection_checkpoints', { coalesceMs: 60_000 });
    void checkpoints.record('files', 0, 5);
    assert.equal(stored.get('files/0'), undefined);
    await checkpoints.flush!();
    assert.equal(stored.get('files/0'), 5);
  });
});

describe('projectBatches', () => {
  it('applies the batch, records its checkpoint after it, and does not wait for that write', async () => {
    const order: string[] = [];
    const never: Checkpoints = {
      record: (group, partition, through) => {
        order.push(`record ${group}/${partition}@${through}`);
        return new Promise(() => {});
      },
      low: async () => 0,
    };
    const handle = projectBatches(async () => { order.push('apply'); }, never, 'files');
    // Done once the apply is: before the next turn of the event loop, with the write still pending.
    const settled = (batch: Parameters<typeof handle>[0]) => Promise.race([
      handle(batch).then(() => 'done'), new Promise((resolve) => setImmediate(() => resolve('still waiting'))),
    ]);
    assert.equal(await settled({ partition: 2, records: [{ position: 4, event: testEvent('file-1', 1) }], through: 6 }), 'done');
    assert.equal(await settled({ partition: 3, records: [], through: 6 }), 'done');
    assert.deepEqual(order, ['apply', 'record files/2@6', 'record files/3@6']);
  });
});

describe('fencedByGeneration', () => {
  const pointerDb = () => {
    const pointer = { prefix: 'files_', switching: undefined as undefined | { to: string; until: Date } };
    const reads = { count: 0 };
    const collection = {
      async findOne() {
        reads.count++;
        return { _id: 'files', since: new Date(0), ...pointer };
      },
    };
    return { db: { collection: () => collection } as unknown as Db, pointer, reads };
  };

  it('reads the pointer once per batch in a steady stream', async () => {
    const { db, reads } = pointerDb();
    const applied: string[] = [];
    const handle = fencedByGeneration(db, 'files', (prefix) => async () => { applied.push(prefix); });
    for (let i = 0; i < 5; i++) await handle([]);
    assert.deepEqual(applied, ['files_', 'files_', 'files_', 'files_', 'files_']);
    assert.equal(reads.count, 6, 'one before the first batch, then one after each');
  });

  it('a batch begun from the pointer reused across a switch is applied again where the pointer now points', async () => {
    const { db, pointer, reads } = pointerDb();
    const applied: string[] = [];
    const handle = fencedByGeneration(db, 'files', (prefix) => async () => { applied.push(prefix); });
    await handle([]);
    pointer.prefix = 'files_g2_'; // a rebuild switched after the last batch
    await handle([]);
    assert.deepEqual(applied, ['files_', 'files_', 'files_g2_']);
    await handle([]);
    assert.deepEqual(applied.at(-1), 'files_g2_');
    assert.ok(reads.count <= 6);
  });

  it('does not reuse a pointer older than reuseMs, nor apply while a switch is under way', async () => {
    const { db, pointer, reads } = pointerDb();
    const applied: string[] = [];
    const handle = fencedByGeneration(db, 'files', (prefix) => async () => { applied.push(prefix); }, 1, 0);
    await handle([]);
    await handle([]);
    assert.equal(reads.count, 4, 'two reads a batch when nothing may be reused');
    pointer.switching = { to: 'files_g3_', until: new Date(Date.now() + 60_000) };
    const during = handle([]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(applied.length, 2, 'held while the switch is under way');
    Object.assign(pointer, { prefix: 'files_g3_', switching: undefined });
    await during;
    assert.deepEqual(applied, ['files_', 'files_', 'files_g3_']);
  });
});
