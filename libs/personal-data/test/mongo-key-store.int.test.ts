import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { dataKeyStoreContract, fakeWrapped } from '../src/contract.ts';
import { openMongoKeyStore } from '../src/mongo-key-store.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer, transactionsOrChangeStreams } from '../../event-store/test/mongo-server.ts';

const server = await connectTestServer();
after(() => server.cleanup());

it('reports which MongoDB wire server answered', (t) => {
  t.diagnostic(`MongoDB wire server: ${server.server}`);
  assert.ok(server.server.length > 0);
});

dataKeyStoreContract('mongo', async () => ({ store: await openMongoKeyStore(server.freshDb('data_keys_contract')), cleanup: async () => {} }));

describe('mongo data key store', () => {
  it('keeps one document per key; a destroy leaves a tombstone without the wrapped key', async () => {
    const db = server.freshDb('data_keys_shape');
    const store = await openMongoKeyStore(db);
    const wrapped = fakeWrapped();
    await store.create('user-1', wrapped);
    assert.deepEqual(await db.collection('data_keys').find({}).toArray(), [{ _id: 'user-1', state: 'live', wrapped }]);
    await store.destroy('user-1', '2026-01-01T00:00:00.000Z');
    const docs = await db.collection('data_keys').find({}).toArray();
    assert.deepEqual(docs, [{ _id: 'user-1', state: 'destroyed', destroyedAt: '2026-01-01T00:00:00.000Z' }]);
    assert.equal(JSON.stringify(docs).includes(wrapped.ct), false);
    await store.close();
  });

  it('first create wins across two stores on one database; destroys and creates racing end destroyed', async () => {
    const db = server.freshDb('data_keys_replicas');
    const [a, b] = [await openMongoKeyStore(db), await openMongoKeyStore(db)];
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).create('user-7', fakeWrapped())));
    for (const result of results) assert.deepEqual(result, results[0]);
    await Promise.all([
      a.destroy('user-8', '2026-01-01T00:00:00.000Z'), b.create('user-8', fakeWrapped()),
      b.destroy('user-8', '2026-01-01T00:00:01.000Z'), a.create('user-8', fakeWrapped()),
    ]);
    assert.equal((await a.get(['user-8'])).get('user-8')?.state, 'destroyed');
    await Promise.all([a.close(), b.close()]);
    const reopened = await openMongoKeyStore(db);
    assert.deepEqual((await reopened.get(['user-7'])).get('user-7'), results[0]);
    await reopened.close();
  });

  it('gets many keys in one find, and uses no transaction or change stream', async () => {
    const { db, commands } = await server.recordedDb('data_keys_commands');
    const store = await openMongoKeyStore(db);
    await Promise.all(['user-1', 'user-2', 'user-3'].map((id) => store.create(id, fakeWrapped())));
    commands.splice(0);
    assert.equal((await store.get(['user-1', 'user-2', 'user-3', 'user-4'])).size, 3);
    assert.deepEqual(commands.map((c) => c.commandName), ['find']);
    await store.destroy('user-1', '2026-01-01T00:00:00.000Z');
    await store.rewrap('user-2', fakeWrapped(), fakeWrapped());
    await store.list(null, 10);
    await store.close();
    assert.deepEqual(transactionsOrChangeStreams(commands), []);
    await assert.rejects(store.get(['user-1']), /closed/);
  });
});
