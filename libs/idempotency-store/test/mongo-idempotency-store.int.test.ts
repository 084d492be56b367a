import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { idempotencyStoreContract } from '../src/contract.ts';
import { openMongoIdempotencyStore } from '../src/mongo-idempotency-store.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer } from '../../event-store/test/mongo-server.ts';

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

it('expired keys are swept away (also where no TTL index removes them); live keys stay and replay', { timeout: 300_000 }, async () => {
  const day = 86_400_000;
  const sweptDb = server.freshDb('idempotency_sweep');
  // The keys are written by a store that does not sweep (its default interval is 10 minutes), so
  // the old key is certainly there before the sweeping store opens: no race with the sweep.
  const writer = await openMongoIdempotencyStore(sweptDb);
  const raw = sweptDb.collection<{ _id: string }>('idempotency_keys');
  const ids = async (key: string): Promise<string[]> =>
    (await raw.find({ _id: { $in: [`claim/${key}`, `done/${key}`] } }).toArray()).map((doc) => doc._id).sort();
  const keep = async (key: string, at: number): Promise<void> => {
    const begun = await writer.begin(key, at, 60_000);
    if (begun.state !== 'started') return assert.fail(`not started: ${begun.state}`);
    const answer = { status: 201, headers: {}, body: '{"status":"success"}' };
    assert.equal(await writer.complete(key, begun.token, { fingerprint: key, answer, expiresAt: at + day }), true);
  };
  await keep('user-1/old', Date.now() - 2 * day);
  await keep('user-1/live', Date.now());
  await writer.close();
  assert.deepEqual(await ids('user-1/old'), ['claim/user-1/old', 'done/user-1/old']);
  const store = await openMongoIdempotencyStore(sweptDb, { sweepEveryMs: 50, sweepGraceMs: 0 });
  try {
    // No deadline of its own: a slow machine only waits longer (the 5-minute timeout only stops a sweep that never comes).
    while ((await ids('user-1/old')).length > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(await ids('user-1/live'), ['claim/user-1/live', 'done/user-1/live']);
    const replayed = await store.begin('user-1/live', Date.now(), 60_000);
    assert.equal(replayed.state === 'done' && replayed.fingerprint, 'user-1/live');
  } finally {
    await store.close();
  }
});
