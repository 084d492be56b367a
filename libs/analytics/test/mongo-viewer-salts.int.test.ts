import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { viewerSaltsContract } from '../src/contract.ts';
import { makeMongoViewerSalts, SALT_TTL_SECONDS, VIEWER_SALTS_COLLECTION } from '../src/mongo-viewer-salts.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer } from '../../event-store/test/mongo-server.ts';

const server = await connectTestServer();
after(() => server.cleanup());

let dbs = 0;
viewerSaltsContract('mongo', () => {
  const db = server.freshDb(`salts_contract_${++dbs}`);
  return async (options) => makeMongoViewerSalts(db, options);
});

describe('mongo viewer salts', () => {
  const now = () => new Date('2026-03-10T12:00:00.000Z');

  it('two adapters (replicas) racing on a new day get the same salt', async () => {
    const db = server.freshDb('salts_race');
    const [a, b] = [makeMongoViewerSalts(db, { now }), makeMongoViewerSalts(db, { now })];
    const salts = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).saltOf('2026-03-10')));
    for (const salt of salts) assert.deepEqual(salt, salts[0]);
    assert.equal(await db.collection(VIEWER_SALTS_COLLECTION).countDocuments(), 1);
    await Promise.all([a.close(), b.close()]);
  });

  it('stores {_id: day, salt, created_at} with a TTL index on created_at', async () => {
    const db = server.freshDb('salts_documents');
    const salts = makeMongoViewerSalts(db, { now });
    const salt = await salts.saltOf('2026-03-10');
    const doc = await db.collection(VIEWER_SALTS_COLLECTION).findOne({ _id: '2026-03-10' as never });
    assert.ok(doc);
    assert.deepEqual(Buffer.from(doc['salt'].value()), salt);
    assert.ok(doc['created_at'] instanceof Date);
    const ttl = (await db.collection(VIEWER_SALTS_COLLECTION).indexes()).find((index) => index.key['created_at'] === 1);
    assert.equal(ttl?.expireAfterSeconds, SALT_TTL_SECONDS);
    await salts.close();
  });
});
