import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MongoBulkWriteError, MongoServerError } from 'mongodb';
import type { BulkWriteResult, Db } from 'mongodb';
import { makeMemoryReadStore } from '../src/memory-read-store.ts';
import { makeMongoReadStore } from '../src/mongo-read-store.ts';
import type { GuardedUpdate } from '../src/port.ts';
import { replayRandomLog, seededRandom } from './seeded-random.ts';

/*
 * The Mongo store's write path on a fake server, counting what it sends (the integration tests
 * run it on the real server). 'mongodb' runs every op of an unordered bulkWrite and reports each
 * failure at its own index, as MongoDB and its stand-in do; 'stops-at-first-error' is a server
 * that stops at the first failing op, reports it at index 0 and no counts: the store must still
 * leave every document exact. The fake knows only the filters and updates the store sends.
 */

type Mode = 'mongodb' | 'stops-at-first-error';
type Stored = Record<string, unknown> & { _id: string };
type Filter = { _id: string; _pos?: unknown };
type Update = { $set?: Record<string, unknown>; $inc?: Record<string, number>; $setOnInsert?: Record<string, unknown> };
interface UpdateOne { updateOne: { filter: Filter; update: Update; upsert?: boolean } }

function matches(doc: Stored, filter: Filter): boolean {
  const { _id, _pos: condition, ...rest } = filter;
  assert.deepEqual(rest, {}, `unexpected filter ${JSON.stringify(filter)}`);
  if (doc._id !== _id) return false;
  const pos = doc['_pos'];
  if (condition === undefined) return true;
  if (typeof condition === 'number') return pos === condition;
  const c = JSON.stringify(condition);
  const notGte = /^\{"\$not":\{"\$gte":(\d+)\}\}$/.exec(c);
  if (notGte) return !(typeof pos === 'number' && pos >= Number(notGte[1]));
  if (c === '{"$exists":false}') return pos === undefined;
  throw new Error(`unexpected filter ${c}`);
}

function applyTo(doc: Stored, update: Update, inserting: boolean): void {
  const names = [update.$set, update.$inc, update.$setOnInsert].flatMap((fields) => Object.keys(fields ?? {}));
  if (new Set(names).size !== names.length) throw new MongoServerError({ message: 'conflict', code: 40 });
  for (const name of Object.keys(update.$inc ?? {})) {
    const held = doc[name] ?? 0;
    if (typeof held !== 'number') throw new MongoServerError({ message: 'Cannot apply $inc to a non-numeric value', code: 14 });
  }
  if (inserting) Object.assign(doc, structuredClone(update.$setOnInsert ?? {}));
  Object.assign(doc, structuredClone(update.$set ?? {}));
  for (const [name, by] of Object.entries(update.$inc ?? {})) doc[name] = ((doc[name] as number | undefined) ?? 0) + by;
}

function project(doc: Stored, projection?: Record<string, 1>): Stored {
  if (!projection) return structuredClone(doc);
  return Object.fromEntries(Object.entries(doc).filter(([name]) => name === '_id' || name in projection)) as Stored;
}

function fakeServer(mode: Mode) {
  const collections = new Map<string, Map<string, Stored>>();
  const calls = { bulkWrite: 0, bulkOps: 0, updateOne: 0, findOne: 0, find: 0 };
  const docsOf = (name: string): Map<string, Stored> => {
    let docs = collections.get(name);
    if (!docs) collections.set(name, (docs = new Map()));
    return docs;
  };
  const updateOne = (docs: Map<string, Stored>, filter: Filter, update: Update, upsert = false) => {
    const doc = docs.get(filter._id);
    if (doc && matches(doc, filter)) {
      const next = structuredClone(doc);
      applyTo(next, update, false);
      docs.set(doc._id, next);
      return { matchedCount: 1, upsertedCount: 0 };
    }
    if (!upsert) return { matchedCount: 0, upsertedCount: 0 };
    if (doc) throw new MongoServerError({ message: 'E11000 duplicate key error', code: 11000 });
    const inserted: Stored = { _id: filter._id };
    if (typeof filter._pos === 'number') inserted['_pos'] = filter._pos;
    applyTo(inserted, update, true);
    docs.set(inserted._id, inserted);
    return { matchedCount: 0, upsertedCount: 1 };
  };
  const collection = (name: string) => {
    const docs = docsOf(name);
    return {
      async insertOne(doc: Stored) {
        if (docs.has(doc._id)) throw new MongoServerError({ message: 'E11000 duplicate key error', code: 11000 });
        docs.set(doc._id, structuredClone(doc));
      },
      async findOne(filter: Filter, options: { projection?: Record<string, 1> } = {}) {
        calls.findOne++;
        const doc = docs.get(filter._id);
        if (!doc || !matches(doc, filter)) return null;
        return project(doc, options.projection);
      },
      find(filter: { _id: { $in: string[] } }, options: { projection?: Record<string, 1> } = {}) {
        assert.deepEqual(Object.keys(filter), ['_id']);
        assert.deepEqual(Object.keys(filter._id), ['$in']);
        calls.find++;
        const found = filter._id.$in.flatMap((id) => (docs.has(id) ? [project(docs.get(id) as Stored, options.projection)] : []));
        const cursor = { toArray: async () => found, sort: () => cursor };
        return cursor;
      },
      async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}) {
        calls.updateOne++;
        return updateOne(docs, filter, update, options.upsert);
      },
      async bulkWrite(ops: UpdateOne[], options: { ordered?: boolean }) {
        assert.equal(options.ordered, false);
        calls.bulkWrite++;
        calls.bulkOps += ops.length;
        let matchedCount = 0;
        let upsertedCount = 0;
        const upsertedIds: Record<number, string> = {};
        const writeErrors: { index: number; code: number; errmsg: string }[] = [];
        for (const [index, { updateOne: op }] of ops.entries()) {
          try {
            const result = updateOne(docs, op.filter, op.update, op.upsert);
            matchedCount += result.matchedCount;
            upsertedCount += result.upsertedCount;
            if (result.upsertedCount > 0) upsertedIds[index] = op.filter._id;
          } catch (error) {
            if (!(error instanceof MongoServerError)) throw error;
            if (mode === 'stops-at-first-error') {
              writeErrors.push({ index: 0, code: error.code as number, errmsg: error.message });
              matchedCount = upsertedCount = 0;
              break;
            }
            writeErrors.push({ index, code: error.code as number, errmsg: error.message });
          }
        }
        const result = { matchedCount, upsertedCount, upsertedIds, getWriteErrors: () => writeErrors };
        if (writeErrors.length > 0) {
          const first = writeErrors[0] as { code: number; errmsg: string };
          throw new MongoBulkWriteError({ message: first.errmsg, code: first.code }, result as unknown as BulkWriteResult);
        }
        return result;
      },
    };
  };
  const db = { collection, command: async () => ({ version: '7.0.0' }) } as unknown as Db;
  /** A collection's documents as the store would return them, by `_id`. */
  const dump = (name: string) => [...docsOf(name).values()]
    .map(({ _pos: _ignored, ...fields }) => fields)
    .sort((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0));
  const raw = (name: string, id: string) => docsOf(name).get(id);
  return { db, calls, dump, raw, docsOf };
}

describe('mongo read store write path (fake MongoDB server)', () => {
  it('sends one unordered bulkWrite per collection and round, merging each document\'s updates', async () => {
    const server = fakeServer('mongodb');
    const store = makeMongoReadStore(server.db, { indexes: {} });
    const batch: GuardedUpdate[] = Array.from({ length: 500 }, (_, i) => ({
      collection: i % 5 === 0 ? 'files' : 'stats', id: `u${i % 200}`, update: { inc: { n: 1, bytes: i } }, position: i + 1,
    }));
    assert.equal(await store.applyBatch(batch), 500);
    assert.deepEqual(server.calls, { bulkWrite: 2, bulkOps: 200, updateOne: 0, findOne: 0, find: 0 });
    assert.deepEqual(server.raw('stats', 'u1'), { _id: 'u1', n: 3, bytes: 1 + 201 + 401, _pos: 402 });

    // A field set and then incremented splits that document's writes into two rounds.
    const split = await store.applyBatch([
      { collection: 'stats', id: 'u1', update: { set: { n: 0 } }, position: 600 },
      { collection: 'stats', id: 'u2', update: { inc: { n: 1 } }, position: 601 },
      { collection: 'stats', id: 'u1', update: { inc: { n: 5 } }, position: 602 },
      { collection: 'stats', id: 'u2', update: { inc: { n: 1 } }, position: 603 },
    ]);
    assert.equal(split, 4);
    assert.deepEqual(server.calls, { bulkWrite: 4, bulkOps: 203, updateOne: 0, findOne: 0, find: 0 });
    assert.deepEqual(server.raw('stats', 'u1'), { _id: 'u1', n: 5, bytes: 603, _pos: 602 });
  });

  it('settles only the documents that hit a duplicate key, from the op index MongoDB reports, reading them in one find', async () => {
    const server = fakeServer('mongodb');
    const store = makeMongoReadStore(server.db, { indexes: {} });
    assert.equal(await store.applyBatch([{ collection: 's', id: 'd', update: { inc: { n: 1 } }, position: 20 }]), 1);
    const batch: GuardedUpdate[] = [12, 18, 23].flatMap((position) => ['a', 'd', 'b'].map((id) => ({
      collection: 's', id, update: { inc: { n: 10 }, set: { last: position } }, position,
    })));
    let before = { ...server.calls };
    const since = () => Object.fromEntries(Object.entries(server.calls).map(([name, count]) => [name, count - before[name as keyof typeof before]]));
    assert.equal(await store.applyBatch(batch), 7);
    assert.deepEqual(since(), { bulkWrite: 1, bulkOps: 3, updateOne: 1, findOne: 0, find: 1 });
    assert.deepEqual(server.dump('s'), [
      { _id: 'a', n: 30, last: 23 }, { _id: 'b', n: 30, last: 23 }, { _id: 'd', n: 11, last: 23 },
    ]);
    // Replayed: every op refused, the three documents read in one find, nothing written.
    before = { ...server.calls };
    assert.equal(await store.applyBatch(batch), 0);
    assert.deepEqual(since(), { bulkWrite: 1, bulkOps: 3, updateOne: 0, findOne: 0, find: 1 });
  });

  it('fails the batch on an error other than a duplicate key', async () => {
    const server = fakeServer('mongodb');
    const store = makeMongoReadStore(server.db, { indexes: {} });
    await store.applyBatch([{ collection: 's', id: 't', update: { set: { x: 'text' } }, position: 1 }]);
    await assert.rejects(store.applyBatch([
      { collection: 's', id: 'a', update: { inc: { x: 1 } }, position: 2 },
      { collection: 's', id: 't', update: { inc: { x: 1 } }, position: 2 },
    ]), (error: unknown) => error instanceof MongoServerError && error.code === 14);
  });

  for (const mode of ['mongodb', 'stops-at-first-error'] as const) {
    it(`applies what the memory store applies, across random redelivered batches (${mode})`, async () => {
      const server = fakeServer(mode);
      const mongo = makeMongoReadStore(server.db, { indexes: {} });
      const memory = makeMemoryReadStore();
      await replayRandomLog(seededRandom(mode.length), 400, async (batch, label) => {
        const applied = await mongo.applyBatch(batch);
        const expected = await memory.applyBatch(batch);
        // A server that does not say what it applied may leave the count short, never the documents.
        if (mode === 'mongodb') assert.equal(applied, expected, label);
        else assert.ok(applied <= expected, label);
        for (const collection of ['a', 'b']) {
          assert.deepEqual(server.dump(collection), await memory.find(collection, {}, { sort: [['_id', 1]] }), `${label}, ${collection}`);
        }
      });
      assert.ok(server.calls.find > 50, `settled ${server.calls.find} times`);
    });
  }
});
