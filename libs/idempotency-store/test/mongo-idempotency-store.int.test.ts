import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { idempotencyStoreContract } from '../src/contract.ts';
import { openMongoIdempotencyStore } from '../src/mongo-idempotency-store.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer, transactionsOrChangeStreams } from '../../event-store/test/mongo-server.ts';

const server = await connectTestServer();
after(() => server.cleanup());

it('reports which MongoDB wire server answered', (t) => {
  t.diagnostic(`MongoDB wire server: ${server.server}`);
  assert.ok(server.server.length > 0);
});

const db = server.freshDb('idempotency_contract');
// A second store on the same database: a restart, or another docs-command replica.
idempotencyStoreContract('mongo', () => openMongoIdempotencyStore(db), async (closed) => {
  await closed.close();
  return openMongoIdempotencyStore(db);
});

it('keeps the answer as a document, and still replays an answer kept as JSON text before', async () => {
  const keptDb = server.freshDb('idempotency_shape');
  const store = await openMongoIdempotencyStore(keptDb);
  const raw = keptDb.collection<{ _id: string } & Record<string, unknown>>('idempotency_keys');
  const at = Date.now();
  const answer = { status: 201, headers: { 'x-docshare-consistency': '42' }, body: '{"status":"success","ids":[[1,2],[]]}' };
  const begun = await store.begin('u/new', at, 60_000);
  assert.equal(begun.state, 'started');
  if (begun.state !== 'started') return;
  assert.equal(await store.complete('u/new', begun.token, { fingerprint: 'f', answer, expiresAt: at + 1000 }), true);
  const done = await raw.findOne({ _id: 'done/u/new' });
  assert.deepEqual({ ...done, expireAt: done?.['expireAt'] instanceof Date }, {
    _id: 'done/u/new', fingerprint: 'f', answer, expiresAt: at + 1000, expireAt: true,
  });
  // An answer an earlier version kept, as JSON text.
  await raw.insertOne({ _id: 'done/u/old', fingerprint: 'g', answer: JSON.stringify(answer), expiresAt: at + 1000, expireAt: new Date(at + 1000) });
  assert.deepEqual(await store.begin('u/old', at, 60_000), { state: 'done', fingerprint: 'g', answer, expiresAt: at + 1000 });
  await store.close();
});

it('leaves expired keys to the TTL index, which removes them (the stand-in\'s runs each minute); live keys stay and replay', { timeout: 300_000 }, async () => {
  const day = 86_400_000;
  const ttlDb = server.freshDb('idempotency_ttl');
  const store = await openMongoIdempotencyStore(ttlDb);
  const raw = ttlDb.collection<{ _id: string }>('idempotency_keys');
  const ttl = (await raw.indexes()).find((index) => index.key['expireAt'] === 1);
  assert.equal(ttl?.expireAfterSeconds, 0);
  const ids = async (key: string): Promise<string[]> =>
    (await raw.find({ _id: { $in: [`claim/${key}`, `done/${key}`] } }).toArray()).map((doc) => doc._id).sort();
  const keep = async (key: string, at: number): Promise<void> => {
    const begun = await store.begin(key, at, 60_000);
    if (begun.state !== 'started') return assert.fail(`not started: ${begun.state}`);
    const answer = { status: 201, headers: {}, body: '{"status":"success"}' };
    assert.equal(await store.complete(key, begun.token, { fingerprint: key, answer, expiresAt: at + day }), true);
  };
  await keep('user-1/old', Date.now() - 2 * day);
  await keep('user-1/live', Date.now());
  try {
    // No deadline of its own: a slow machine only waits longer (the 5-minute timeout only stops a TTL that never comes).
    while ((await ids('user-1/old')).length > 0) await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.deepEqual(await ids('user-1/live'), ['claim/user-1/live', 'done/user-1/live']);
    const replayed = await store.begin('user-1/live', Date.now(), 60_000);
    assert.equal(replayed.state === 'done' && replayed.fingerprint, 'user-1/live');
  } finally {
    await store.close();
  }
});

it('takes a lapsed claim over in one conditional write: of concurrent begins exactly one starts, a stale owner can no longer abandon it', async () => {
  const store = await openMongoIdempotencyStore(server.freshDb('idempotency_takeover'));
  const at = Date.now();
  const first = await store.begin('k', at, 1000);
  assert.equal(first.state, 'started');
  const later = at + 5000;
  const results = await Promise.all(Array.from({ length: 20 }, () => store.begin('k', later, 60_000)));
  const started = results.filter((r) => r.state === 'started');
  assert.equal(started.length, 1);
  assert.ok(results.every((r) => r.state === 'started' || r.state === 'in_flight'));
  if (first.state === 'started') await store.abandon('k', first.token);
  assert.deepEqual(await store.begin('k', later + 1, 60_000), { state: 'in_flight' });
  await store.close();
});

it('uses no transaction and no change stream (the stand-in fails a transaction at commit and has no change streams)', async () => {
  const { db: recorded, commands } = await server.recordedDb('idempotency_no_txn');
  const store = await openMongoIdempotencyStore(recorded);
  const at = Date.now();
  const begun = await store.begin('k', at, 1000);
  if (begun.state !== 'started') return assert.fail(begun.state);
  await store.renew('k', begun.token, at, 1000);
  await store.complete('k', begun.token, { fingerprint: 'f', answer: { status: 200, headers: {}, body: '{}' }, expiresAt: at + 10 });
  await store.begin('k', at + 1, 1000);
  const again = await store.begin('k', at + 5000, 1000);
  if (again.state === 'started') await store.abandon('k', again.token);
  await store.close();
  assert.ok(commands.length > 8);
  assert.deepEqual(transactionsOrChangeStreams(commands), []);
});

it('removeScope is two deletes on anchored _id prefixes (ranges of the _id index), and removes both documents of a key', async () => {
  const { db: recorded, commands } = await server.recordedDb('idempotency_remove');
  const store = await openMongoIdempotencyStore(recorded);
  const at = Date.now();
  const begun = await store.begin('12/a.b', at, 60_000);
  if (begun.state !== 'started') return assert.fail('not started');
  await store.complete('12/a.b', begun.token, { fingerprint: 'f', answer: { status: 201, headers: {}, body: '{}' }, expiresAt: at + 60_000 });
  await store.begin('123/a', at, 60_000);
  commands.splice(0);
  assert.equal(await store.removeScope('12/'), 1);
  const deletes = commands.splice(0).filter((c) => c.commandName === 'delete').map((c) => JSON.stringify(c.command['deletes']?.[0]?.q)).sort();
  assert.deepEqual(deletes, ['{"_id":{"$regex":"^claim/12/"}}', '{"_id":{"$regex":"^done/12/"}}']);
  const left = await recorded.collection('idempotency_keys').find({}, { projection: { _id: 1 } }).toArray();
  assert.deepEqual(left.map((d) => d._id), ['claim/123/a']);
  await store.close();
});
