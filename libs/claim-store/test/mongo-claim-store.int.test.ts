import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { claimStoreContract } from '../src/contract.ts';
import { openMongoClaimStore } from '../src/mongo-claim-store.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer, transactionsOrChangeStreams } from '../../event-store/test/mongo-server.ts';

const server = await connectTestServer();
after(() => server.cleanup());

it('reports which MongoDB wire server answered', (t) => {
  t.diagnostic(`MongoDB wire server: ${server.server}`);
  assert.ok(server.server.length > 0);
});

claimStoreContract('mongo', () => openMongoClaimStore(server.freshDb('claims_contract')));

describe('mongo claim store', () => {
  it('keeps one document per claim, the value as JSON text under "<scope>/<key>"', async () => {
    const db = server.freshDb('claims_shape');
    const store = await openMongoClaimStore(db);
    await store.claim('account', 'ann@example.com', { userId: 1, roles: [['a', 'b'], []] });
    const docs = await db.collection('claims').find({}).toArray();
    assert.equal(docs.length, 1);
    assert.deepEqual({ ...docs[0], claimedAt: docs[0]?.['claimedAt'] instanceof Date }, {
      _id: 'account/ann@example.com', scope: 'account', key: 'ann@example.com',
      value: '{"userId":1,"roles":[["a","b"],[]]}', claimedAt: true,
    });
    await store.close();
  });

  it('first claim wins across two stores (replicas) on one database, and survives a reopen', async () => {
    const db = server.freshDb('claims_replicas');
    const [a, b] = [await openMongoClaimStore(db), await openMongoClaimStore(db)];
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).claim('category-name', 'science', { categoryId: i })));
    const winners = results.filter((r) => r.created);
    assert.equal(winners.length, 1);
    for (const r of results) assert.deepEqual(r.value, winners[0]?.value);
    await Promise.all([a.close(), b.close()]);
    const reopened = await openMongoClaimStore(db);
    assert.deepEqual(await reopened.get('category-name', 'science'), winners[0]?.value);
    await reopened.close();
  });

  it('keeps keys that differ only after a / apart, and refuses a / in a scope', async () => {
    const store = await openMongoClaimStore(server.freshDb('claims_sep'));
    assert.equal((await store.claim('s', 'a/b', 1)).created, true);
    assert.equal((await store.claim('s', 'a', 2)).created, true);
    assert.equal(await store.get('s', 'a/b'), 1);
    await assert.rejects(store.claim('s/a', 'b', 3), TypeError);
    await store.close();
  });

  it('claims a key in one insert, the first claim read back only by a loser (no "<scope>\\0<key>" id of earlier versions looked up)', async () => {
    const { db, commands } = await server.recordedDb('claims_commands');
    const store = await openMongoClaimStore(db);
    const sent = (): string[] => commands.splice(0).map((c) => `${c.commandName} ${JSON.stringify(c.command['filter'] ?? c.command['documents']?.[0]?._id ?? null)}`);
    assert.deepEqual(await store.claim('account', 'ann@example.com', { userId: 1 }), { created: true, value: { userId: 1 } });
    assert.deepEqual(sent(), ['insert "account/ann@example.com"']);
    assert.deepEqual(await store.claim('account', 'ann@example.com', { userId: 2 }), { created: false, value: { userId: 1 } });
    assert.deepEqual(sent(), ['insert "account/ann@example.com"', 'find {"_id":"account/ann@example.com"}']);
    // A NUL is an ordinary character of a scope or key.
    assert.equal((await store.claim('s\u0000a', 'b', 3)).created, true);
    assert.equal(await store.get('s\u0000a', 'b'), 3);
    await store.close();
    assert.deepEqual(transactionsOrChangeStreams(commands), []);
  });

  it('release is one delete by _id, and the document is gone', async () => {
    const { db, commands } = await server.recordedDb('claims_release');
    const store = await openMongoClaimStore(db);
    await store.claim('account', 'index-of-ann', { userId: 1, name: 'sealed' });
    commands.splice(0);
    assert.equal(await store.release('account', 'index-of-ann'), true);
    assert.deepEqual(commands.splice(0).map((c) => `${c.commandName} ${JSON.stringify(c.command['deletes']?.[0]?.q ?? null)}`), [
      'delete {"_id":"account/index-of-ann"}',
    ]);
    assert.equal(await db.collection('claims').countDocuments({}), 0);
    await store.close();
  });

  it('rejects values that are not JSON-serialisable, storing nothing', async () => {
    const store = await openMongoClaimStore(server.freshDb('claims_json'));
    await assert.rejects(store.claim('s', 'k', undefined), TypeError);
    await assert.rejects(store.claim('s', 'k', () => 1), TypeError);
    assert.equal(await store.get('s', 'k'), null);
    assert.deepEqual(await store.claim('s', 'k', 'fine'), { created: true, value: 'fine' });
    await store.close();
    await assert.rejects(store.claim('s', 'k2', 'v'), /closed/);
  });
});
