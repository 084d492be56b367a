import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { readStoreContract } from '../src/contract.ts';
import { makeMemoryReadStore } from '../src/memory-read-store.ts';
import { makeMongoReadStore } from '../src/mongo-read-store.ts';
import { BSON } from 'mongodb';
import type { Document } from 'mongodb';
import type { Filter, FindOptions, GuardedUpdate, ReadStore, Scalar, Update } from '../src/port.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer } from '../../event-store/test/mongo-server.ts';
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
    assert.ok(BSON.calculateObjectSize(stored as Document) <= first + 8, `${BSON.calculateObjectSize(stored as Document)} bytes`);
  });

  it('reads documents an earlier version wrote with _seen: hidden, and guarded from then on by _pos', async () => {
    const db = server.freshDb('rs_legacy');
    const store = makeMongoReadStore(db);
    await db.collection('stats').insertOne({ _id: 'u' as never, views: 3, _seen: { 'file-1': 2, 'file-2': 1 } });
    assert.deepEqual(await store.get('stats', 'u'), { _id: 'u', views: 3 });
    assert.deepEqual(await store.find('stats', { views: 3 }), [{ _id: 'u', views: 3 }]);
    assert.equal(await one(store, 'stats', 'u', { inc: { views: 1 } }, 40), 1);
    assert.equal(await one(store, 'stats', 'u', { inc: { views: 1 } }, 40), 0);
    assert.deepEqual(await store.get('stats', 'u'), { _id: 'u', views: 4 });
    // Settling (a duplicate key) on such a document also takes it as having applied nothing.
    await db.collection('stats').insertOne({ _id: 'v' as never, views: 3, _seen: { 'file-1': 2 } });
    assert.equal(await store.applyBatch([
      { collection: 'stats', id: 'v', update: { inc: { views: 1 } }, position: 10 },
      { collection: 'stats', id: 'v', update: { set: { views: 0 } }, position: 11 },
    ]), 2);
    assert.deepEqual(await store.get('stats', 'v'), { _id: 'v', views: 0 });
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
