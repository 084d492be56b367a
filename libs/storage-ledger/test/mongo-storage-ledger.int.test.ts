import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { storageLedgerContract } from '../src/contract.ts';
import { openMongoStorageLedger } from '../src/mongo-storage-ledger.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer, transactionsOrChangeStreams } from '../../event-store/test/mongo-server.ts';

const server = await connectTestServer();
after(() => server.cleanup());
const resolve = async () => 'not_recorded' as const;

let dbs = 0;
storageLedgerContract('mongo', (options) => openMongoStorageLedger(server.freshDb(`ledger_contract_${++dbs}`), options));

describe('mongo storage ledger', () => {
  it('two ledgers (replicas) on one database never hold more than the quota between them', async () => {
    const db = server.freshDb('ledger_replicas');
    const [a, b] = [await openMongoStorageLedger(db, { resolve }), await openMongoStorageLedger(db, { resolve })];
    const held = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).reserve(1, `h${i}`, 100, 1_000).then((r) => r.held)));
    assert.equal(held.reduce((x, y) => x + y, 0), 1_000);
    assert.equal(await a.usage(1), 1_000);
    await Promise.all([a.close(), b.close()]);
  });

  it('reads a document the previous version wrote (entries without until) and repairs it as before', async () => {
    const db = server.freshDb('ledger_old_shape');
    await db.collection('storage_ledger').insertOne({ _id: 1 as never, used: 100, entries: { 'hold:h': { bytes: 50, at: 1_000 } }, recent: [], v: 1 });
    const ledger = await openMongoStorageLedger(db, { resolve, now: () => 1_000 + 60_001, leaseMs: 60_000, resolveHold: async () => 'open' });
    assert.equal(await ledger.usage(1), 100);
    await ledger.close();
  });

  it('stores a session hold\'s until as a number in its entry', async () => {
    const db = server.freshDb('ledger_until');
    const ledger = await openMongoStorageLedger(db, { resolve });
    const until = Date.now() + 86_400_000;
    await ledger.reserve(1, 's', 10, 100, { until, exact: true });
    const doc = await db.collection('storage_ledger').findOne({ _id: 1 as never });
    assert.equal(doc?.entries['hold:s'].until, until);
    assert.equal(typeof doc?.entries['hold:s'].until, 'number');
    await ledger.close();
  });

  it('a step is one find and one write by _id, in no transaction', async () => {
    const { db, commands } = await server.recordedDb('ledger_commands');
    const ledger = await openMongoStorageLedger(db, { resolve });
    await ledger.reserve(1, 'h', 10, 100);
    commands.splice(0);
    await ledger.resize(1, 'h', 5, 100);
    assert.deepEqual(commands.map((c) => c.commandName), ['find', 'update']);
    await ledger.close();
    assert.deepEqual(transactionsOrChangeStreams(commands), []);
  });
});
