import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { readStoreContract } from '../src/contract.ts';
import { makeMemoryReadStore } from '../src/memory-read-store.ts';
import { makeMongoReadStore } from '../src/mongo-read-store.ts';
import type { Filter, FindOptions, Scalar, Update } from '../src/port.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer } from '../../event-store/test/mongo-server.ts';
import { seededRandom } from './seeded-random.ts';

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

describe('mongo read store', () => {
  it('keeps one document per id under the prefix, with the guard bookkeeping in _seen', async () => {
    const db = server.freshDb('rs_shape');
    const store = makeMongoReadStore(db, { prefix: 'stats_' });
    await store.apply('stats', 'u1', { inc: { downloads: 1 }, setOnInsert: { user_id: 1 } }, { stream: 'file-3', version: 2 });
    await store.apply('stats', 'u1', { inc: { downloads: 1 }, set: { name: 'Ann' } }, { stream: 'user-1', version: 1 });
    assert.deepEqual(await db.collection('stats_stats').findOne({ _id: 'u1' as never }), {
      _id: 'u1', user_id: 1, downloads: 2, name: 'Ann', _seen: { 'file-3': 2, 'user-1': 1 },
    });
    assert.deepEqual(await store.get('stats', 'u1'), { _id: 'u1', user_id: 1, downloads: 2, name: 'Ann' });
  });

  it('creates the read models\' indexes on the first write to a collection, and again after clear', async () => {
    const db = server.freshDb('rs_indexes');
    const store = makeMongoReadStore(db, { prefix: 'files_' });
    await store.apply('files', '1', { set: { file_id: 1, owner_id: 7, deleted: false, enabled: true, uploaded_at: 'x' } }, { stream: 'file-1', version: 1 });
    const byName = async () => new Map((await db.collection('files_files').indexes()).map((index) => [index.name, index.key]));
    assert.deepEqual((await byName()).get('visible_listing'), { owner_id: 1, deleted: 1, enabled: 1, uploaded_at: -1, file_id: -1 });
    assert.deepEqual((await byName()).get('owner_listing'), { owner_id: 1, deleted: 1, uploaded_at: -1, file_id: -1 });
    await store.apply('comments', 'c1', { set: { file_owner_id: 7, posted_at: 'x', comment_id: 1 } }, { stream: 'file-1', version: 2 });
    assert.deepEqual(
      new Map((await db.collection('files_comments').indexes()).map((index) => [index.name, index.key])).get('received'),
      { file_owner_id: 1, posted_at: -1, comment_id: -1 },
    );
    await store.clear();
    await store.apply('files', '1', { set: { file_id: 1 } }, { stream: 'file-1', version: 1 });
    assert.ok((await byName()).has('visible_listing'));

    const plain = makeMongoReadStore(db, { prefix: 'plain_', indexes: {} });
    await plain.apply('files', '1', { set: { file_id: 1 } }, { stream: 'file-1', version: 1 });
    assert.deepEqual([...(await db.collection('plain_files').indexes()).map((index) => index.name)], ['_id_']);
  });

  it('clear drops only its own prefix\'s collections, even when another prefix starts with it', async () => {
    const db = server.freshDb('rs_clear');
    const live = makeMongoReadStore(db, { prefix: 'stats_' });
    const rebuilt = makeMongoReadStore(db, { prefix: 'stats_g1_' });
    const guard = { stream: 'file-1', version: 1 };
    await live.apply('stats', 'u', { inc: { n: 1 } }, guard);
    await rebuilt.apply('stats', 'u', { inc: { n: 5 } }, guard);
    await db.collection('events').insertOne({ _id: 'keep' as never });

    await live.clear();
    assert.deepEqual(await names(db), ['events', 'read_store_collections', 'stats_g1_stats']);
    assert.deepEqual(await rebuilt.get('stats', 'u'), { _id: 'u', n: 5 });
    assert.equal(await live.get('stats', 'u'), null);
    // A second store on the same prefix (another replica) clears what the first one wrote.
    await live.apply('stats', 'u', { inc: { n: 1 } }, guard);
    await makeMongoReadStore(db, { prefix: 'stats_' }).clear();
    assert.equal(await live.count('stats', {}), 0);
  });

  it('applies concurrent updates of one document from different streams without losing any', async () => {
    const store = makeMongoReadStore(server.freshDb('rs_concurrent'));
    await store.apply('stats', 'u', { set: { name: 'Ann' } }, { stream: 'user-1', version: 1 });
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => store.apply('stats', 'u', { inc: { downloads: 1 } }, { stream: `file-${i % 10}`, version: Math.floor(i / 10) + 1 })),
    );
    assert.ok(results.every(Boolean));
    // And duplicates of those deliveries, concurrently, change nothing.
    const again = await Promise.all(
      Array.from({ length: 30 }, (_, i) => store.apply('stats', 'u', { inc: { downloads: 1 } }, { stream: `file-${i % 10}`, version: Math.floor(i / 10) + 1 })),
    );
    assert.ok(again.every((applied) => !applied));
    assert.deepEqual(await store.get('stats', 'u'), { _id: 'u', name: 'Ann', downloads: 30 });
  });

  // The rest of what both stores refuse is in the contract; the memory store does not check filter field names.
  it('refuses a filter on a dotted path', async () => {
    const store = makeMongoReadStore(server.freshDb('rs_refuse'));
    await store.apply('c', 'd', { set: { n: 'text' } }, { stream: 's', version: 1 });
    await assert.rejects(store.find('c', { 'a.b': 1 }));
  });

  it('finds and counts what the memory store finds, across random writes', async () => {
    const mongo = makeMongoReadStore(server.freshDb('rs_parity'));
    const memory = makeMemoryReadStore();
    const random = seededRandom(7);
    const scalars: Scalar[] = [1, 2, '1', 'a', null, true, false];
    const values: unknown[] = [...scalars, ['a', 1], [null], { a: 1 }];
    const fields = ['f', 'g'];
    for (let step = 0; step < 150; step++) {
      const id = `d${random(25)}`;
      const update: Update = { set: { [fields[random(2)] as string]: values[random(values.length)] }, inc: { n: 1 } };
      const guard = { stream: `s${random(5)}`, version: random(4) };
      assert.equal(await mongo.apply('c', id, update, guard), await memory.apply('c', id, update, guard), `step ${step}`);
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
