import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { readStoreContract } from '../src/contract.ts';
import { makeMemoryReadStore } from '../src/memory-read-store.ts';
import { makeMongoReadStore } from '../src/mongo-read-store.ts';
import { BSON, MongoBulkWriteError } from 'mongodb';
import type { Document } from 'mongodb';
import type { Filter, FindOptions, GuardedUpdate, ReadStore, Scalar, Update } from '../src/port.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer, transactionsOrChangeStreams } from '../../event-store/test/mongo-server.ts';
import { replayRandomLog, seededRandom } from './seeded-random.ts';

const server = await connectTestServer();
after(() => server.cleanup());

it('reports which MongoDB wire server answered', (t) => {
  t.diagnostic(`MongoDB wire server: ${server.server}`);
  assert.ok(server.server.length > 0);
});

// `clear` empties the whole store, so the contract gets a database of its own.
readStoreContract('mongo', async () => makeMongoReadStore(server.freshDb('rs_contract')));

const names = async (db: ReturnType<typeof server.freshDb>): Promise<string[]> =>
  (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();

/** One update as its own batch. */
const one = (store: ReadStore, collection: string, id: string, update: Update, position: number): Promise<number> =>
  store.applyBatch([{ collection, id, update, position }]);

describe('mongo read store', () => {
  it('keeps one document per id under the prefix, with the position it applied last in _pos', async () => {
    const db = server.freshDb('rs_shape');
    const store = makeMongoReadStore(db, { prefix: 'stats_' });
    await one(store, 'stats', 'u1', { inc: { downloads: 1 }, setOnInsert: { user_id: 1 } }, 2);
    await one(store, 'stats', 'u1', { inc: { downloads: 1 }, set: { name: 'Ann' } }, 5);
    assert.deepEqual(await db.collection('stats_stats').findOne({ _id: 'u1' as never }), {
      _id: 'u1', user_id: 1, downloads: 2, name: 'Ann', _pos: 5,
    });
    assert.deepEqual(await store.get('stats', 'u1'), { _id: 'u1', user_id: 1, downloads: 2, name: 'Ann' });
  });

  it('keeps a stats document the same size however many events touched it', async () => {
    const db = server.freshDb('rs_size');
    const store = makeMongoReadStore(db);
    const raw = db.collection('stats');
    await one(store, 'stats', 'u', { inc: { views: 1 }, setOnInsert: { user_id: 7 } }, 1);
    const first = BSON.calculateObjectSize((await raw.findOne({ _id: 'u' as never })) as Document);
    // 1,000 updates from 1,000 positions, each its own write.
    for (let position = 2; position <= 1000; position++) {
      assert.equal(await one(store, 'stats', 'u', { inc: { views: 1 } }, position), 1);
    }
    const stored = await raw.findOne({ _id: 'u' as never });
    assert.deepEqual(stored, { _id: 'u', user_id: 7, views: 1000, _pos: 1000 });
    assert.ok(BSON.calculateObjectSize(stored) <= first + 8, `${BSON.calculateObjectSize(stored)} bytes`);
  });

  it('applies a batch in one unordered bulkWrite per collection and round, settling only the documents a duplicate key refused', async () => {
    const { db, commands } = await server.recordedDb('rs_bulk');
    const store = makeMongoReadStore(db);
    await store.applyBatch([{ collection: 'files', id: 'w', update: { set: { x: 1 } }, position: 1 }]);
    // `d` applied position 20 in an earlier delivery; the batch below overlaps it.
    await one(store, 'stats', 'd', { inc: { n: 1 } }, 20);
    const sent = (): Map<string, number> => {
      const counts = new Map<string, number>();
      for (const { commandName, command } of commands.splice(0)) {
        const key = `${commandName} ${String(command[commandName])}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return counts;
    };
    sent();
    const batch: GuardedUpdate[] = [12, 18, 23].flatMap((position) => ['a', 'd', 'b'].map((id) => ({
      collection: 'stats', id, update: { inc: { n: 10 }, set: { last: position } }, position,
    })));
    batch.push({ collection: 'files', id: 'f', update: { set: { t: 1 } }, position: 23 });
    assert.equal(await store.applyBatch(batch), 8);
    // One update command for each collection (3 ops on stats: one merged write per document),
    // then `d` alone: one read of its _pos, one guarded update.
    assert.deepEqual(Object.fromEntries(sent()), { 'update files': 1, 'update stats': 2, 'find stats': 1 });
    assert.deepEqual(await store.find('stats', {}, { sort: [['_id', 1]] }), [
      { _id: 'a', n: 30, last: 23 }, { _id: 'b', n: 30, last: 23 }, { _id: 'd', n: 11, last: 23 },
    ]);
    // Replayed whole: every op refused by its own duplicate key, each collection's documents read
    // in one find, nothing written.
    sent();
    assert.equal(await store.applyBatch(batch), 0);
    assert.deepEqual(Object.fromEntries(sent()), { 'update files': 1, 'update stats': 1, 'find files': 1, 'find stats': 1 });
  });

  it('relies on MongoDB\'s unordered bulkWrite: every op runs, each duplicate key is reported at its own index', async () => {
    const raw = server.freshDb('rs_unordered').collection<{ _id: string; n?: number }>('c');
    await raw.insertMany([{ _id: 'x', n: 1 }, { _id: 'z', n: 1 }]);
    const error = await raw.bulkWrite(['w', 'x', 'y', 'z', 'v'].map((id) => ({
      updateOne: { filter: { _id: id, n: { $exists: false } }, update: { $set: { n: 2 } }, upsert: true },
    })), { ordered: false }).then(() => null, (e: unknown) => e);
    assert.ok(error instanceof MongoBulkWriteError, String(error));
    assert.deepEqual(error.result.getWriteErrors().map((e) => [e.index, e.code]), [[1, 11000], [3, 11000]]);
    assert.equal(error.result.upsertedCount, 3);
    assert.deepEqual(await raw.find({}).sort({ _id: 1 }).toArray(), [
      { _id: 'v', n: 2 }, { _id: 'w', n: 2 }, { _id: 'x', n: 1 }, { _id: 'y', n: 2 }, { _id: 'z', n: 1 },
    ]);
  });

  it('sorts every find it sends (by _id when asked for no order): the stand-in\'s unsorted cursors can repeat documents across batches', async () => {
    const { db, commands } = await server.recordedDb('rs_sorted');
    const store = makeMongoReadStore(db);
    await store.applyBatch(Array.from({ length: 150 }, (_, i) => ({ collection: 'c', id: `d${i}`, update: { set: { k: i % 2 } }, position: i + 1 })));
    assert.equal((await store.find('c', {})).length, 150);
    assert.equal((await store.find('c', { k: 1 }, { limit: 10 })).length, 10);
    assert.equal((await store.find('c', { k: 0 }, { sort: [['k', -1]], skip: 70 })).length, 5);
    const finds = commands.filter((c) => c.commandName === 'find' && c.command['find'] === 'c');
    assert.equal(finds.length, 3);
    const sortOf = (sort: unknown): unknown => (sort instanceof Map ? Object.fromEntries(sort) : sort);
    assert.deepEqual(finds.map((c) => sortOf(c.command['sort'])), [{ _id: 1 }, { _id: 1 }, { k: -1 }]);
  });

  it('uses no transaction and no change stream (the stand-in fails a transaction at commit and has no change streams)', async () => {
    const { db, commands } = await server.recordedDb('rs_no_txn');
    const store = makeMongoReadStore(db, { prefix: 'p_', indexes: { stats: [{ name: 'by_n', key: [['n', 1]] }] } });
    await store.ensureIndexes();
    await one(store, 'stats', 'u', { inc: { n: 1 } }, 5);
    await store.applyBatch([{ collection: 'stats', id: 'u', update: { inc: { n: 1 } }, position: 4 }, { collection: 'stats', id: 'v', update: { set: { n: 1 } }, position: 6 }]);
    await store.get('stats', 'u');
    await store.find('stats', { n: 1 }, { sort: [['n', -1]], limit: 5 });
    await store.count('stats', {});
    await store.distinct('stats', 'n', {});
    await store.clear();
    assert.ok(commands.length > 8);
    assert.deepEqual(transactionsOrChangeStreams(commands), []);
  });

  it('creates the indexes it is given on the first write to a collection, and again after clear; none by default', async () => {
    const db = server.freshDb('rs_indexes');
    const store = makeMongoReadStore(db, { prefix: 'files_', indexes: {
      files: [
        { name: 'owner_listing', key: [['owner_id', 1], ['deleted', 1], ['uploaded_at', -1], ['file_id', -1]] },
        { name: 'visible_listing', key: [['owner_id', 1], ['deleted', 1], ['enabled', 1], ['uploaded_at', -1], ['file_id', -1]] },
      ],
      comments: [{ name: 'received_live', key: [['file_owner_id', 1], ['file_deleted', 1], ['posted_at', -1], ['comment_id', -1]] }],
    } });
    await one(store, 'files', '1', { set: { file_id: 1, owner_id: 7, deleted: false, enabled: true, uploaded_at: 'x' } }, 1);
    const byName = async () => new Map((await db.collection('files_files').indexes()).map((index) => [index.name, index.key]));
    assert.deepEqual((await byName()).get('visible_listing'), { owner_id: 1, deleted: 1, enabled: 1, uploaded_at: -1, file_id: -1 });
    assert.deepEqual((await byName()).get('owner_listing'), { owner_id: 1, deleted: 1, uploaded_at: -1, file_id: -1 });
    await one(store, 'comments', 'c1', { set: { file_owner_id: 7, posted_at: 'x', comment_id: 1 } }, 2);
    assert.deepEqual(
      new Map((await db.collection('files_comments').indexes()).map((index) => [index.name, index.key])).get('received_live'),
      { file_owner_id: 1, file_deleted: 1, posted_at: -1, comment_id: -1 },
    );
    await store.clear();
    await one(store, 'files', '1', { set: { file_id: 1 } }, 1);
    assert.ok((await byName()).has('visible_listing'));

    const plain = makeMongoReadStore(db, { prefix: 'plain_' });
    await one(plain, 'files', '1', { set: { file_id: 1 } }, 1);
    assert.deepEqual([...(await db.collection('plain_files').indexes()).map((index) => index.name)], ['_id_']);
  });

  it('clear drops only its own prefix\'s collections, even when another prefix starts with it', async () => {
    const db = server.freshDb('rs_clear');
    const live = makeMongoReadStore(db, { prefix: 'stats_' });
    const rebuilt = makeMongoReadStore(db, { prefix: 'stats_g1_' });
    await one(live, 'stats', 'u', { inc: { n: 1 } }, 1);
    await one(rebuilt, 'stats', 'u', { inc: { n: 5 } }, 1);
    await db.collection('events').insertOne({ _id: 'keep' as never });

    await live.clear();
    assert.deepEqual(await names(db), ['events', 'read_store_collections', 'stats_g1_stats']);
    assert.deepEqual(await rebuilt.get('stats', 'u'), { _id: 'u', n: 5 });
    assert.equal(await live.get('stats', 'u'), null);
    // A second store on the same prefix (another replica) clears what the first one wrote.
    await one(live, 'stats', 'u', { inc: { n: 1 } }, 1);
    await makeMongoReadStore(db, { prefix: 'stats_' }).clear();
    assert.equal(await live.count('stats', {}), 0);
  });

  // The rest of what both stores refuse is in the contract; the memory store does not check filter field names.
  it('refuses a filter on a dotted path', async () => {
    const store = makeMongoReadStore(server.freshDb('rs_refuse'));
    await one(store, 'c', 'd', { set: { n: 'text' } }, 1);
    await assert.rejects(store.find('c', { 'a.b': 1 }));
  });

  it('applies what the memory store applies, across random redelivered and overlapping batches', async () => {
    const mongo = makeMongoReadStore(server.freshDb('rs_redelivery'));
    const memory = makeMemoryReadStore();
    await replayRandomLog(seededRandom(11), 160, async (batch, label) => {
      assert.equal(await mongo.applyBatch(batch), await memory.applyBatch(batch), label);
    });
    for (const collection of ['a', 'b']) {
      const sort: FindOptions['sort'] = [['_id', 1]];
      assert.deepEqual(await mongo.find(collection, {}, { sort }), await memory.find(collection, {}, { sort }), collection);
    }
  });

  it('finds and counts what the memory store finds, across random writes', async () => {
    const mongo = makeMongoReadStore(server.freshDb('rs_parity'));
    const memory = makeMemoryReadStore();
    const random = seededRandom(7);
    const scalars: Scalar[] = [1, 2, '1', 'a', null, true, false];
    const values: unknown[] = [...scalars, ['a', 1], [null], { a: 1 }];
    const fields = ['f', 'g'];
    for (let step = 0; step < 150; step++) {
      const batch: GuardedUpdate[] = [];
      for (let i = random(4); i >= 0; i--) {
        const id = `d${random(25)}`;
        const update: Update = { set: { [fields[random(2)] as string]: values[random(values.length)] }, inc: { n: 1 } };
        batch.push({ collection: 'c', id, update, position: 1 + random(400) });
      }
      assert.equal(await mongo.applyBatch(batch), await memory.applyBatch(batch), `step ${step}`);
    }
    for (let q = 0; q < 40; q++) {
      const pick = (): Scalar => scalars[random(scalars.length)] as Scalar;
      const filter: Filter = random(2) === 0 ? { [fields[random(2)] as string]: pick() } : { f: { in: [pick(), pick()] }, g: pick() };
      const sort: FindOptions['sort'] = [['n', -1], ['_id', 1]];
      assert.deepEqual(await mongo.find('c', filter, { sort }), await memory.find('c', filter, { sort }), JSON.stringify(filter));
      assert.equal(await mongo.count('c', filter), await memory.count('c', filter), JSON.stringify(filter));
      assert.deepEqual(
        await mongo.find('c', filter, { sort, skip: 1, limit: 3 }),
        await memory.find('c', filter, { sort, skip: 1, limit: 3 }),
      );
    }
  });
});
