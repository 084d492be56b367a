import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { makeLease } from '../src/lease.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer, transactionsOrChangeStreams } from '../../event-store/test/mongo-server.ts';

const server = await connectTestServer();
after(() => server.cleanup());

describe('lease on the real server', () => {
  it('is one document, taken, renewed and released by one conditional write each', async () => {
    const { db, commands } = await server.recordedDb('lease_doc');
    let clock = 5_000_000;
    const now = (): number => clock;
    const a = makeLease({ db, name: 'outbox-relay:x', owner: 'a', leaseMs: 3_000, now });
    const b = makeLease({ db, name: 'outbox-relay:x', owner: 'b', leaseMs: 3_000, now });
    const sent = (): string[] => commands.splice(0).map((c) => c.commandName);
    assert.equal(await a.hold(), true);
    assert.deepEqual(sent(), ['update']);
    assert.equal(await b.hold(), false);
    assert.deepEqual(sent(), ['update']);
    clock += 2_500;
    assert.equal(await a.hold(), true, 'renewed');
    assert.deepEqual(sent(), ['update']);
    assert.deepEqual(await db.collection('leases').find({}).toArray(), [
      { _id: 'outbox-relay:x', owner: 'a', expiresAt: new Date(clock + 3_000) },
    ]);
    sent();
    await a.release();
    assert.deepEqual(sent(), ['update']);
    assert.equal(await b.hold(), true);
    assert.equal(await db.collection('leases').countDocuments({}), 1);
    assert.deepEqual(transactionsOrChangeStreams(commands), []);
  });

  it('goes to exactly one of many contenders for an expired lease, however often they race', async () => {
    const db = server.freshDb('lease_race');
    let clock = 1_000_000;
    const now = (): number => clock;
    for (let round = 0; round < 10; round++) {
      const leases = Array.from({ length: 12 }, (_, i) => makeLease({ db, name: 'job', owner: `r${round}o${i}`, leaseMs: 1_000, now }));
      const held = await Promise.all(leases.map((lease) => lease.hold()));
      assert.equal(held.filter(Boolean).length, 1, `round ${round}`);
      clock += 1_000;
    }
  });

  it('a stale holder can neither renew nor release the lease its successor took', async () => {
    const db = server.freshDb('lease_stale');
    let clock = 1_000_000;
    const now = (): number => clock;
    const a = makeLease({ db, name: 'job', owner: 'a', leaseMs: 1_000, now });
    const b = makeLease({ db, name: 'job', owner: 'b', leaseMs: 1_000, now });
    assert.equal(await a.hold(), true);
    clock += 1_000;
    assert.equal(await b.hold(), true);
    assert.equal(await a.hold(), false);
    await a.release();
    const c = makeLease({ db, name: 'job', owner: 'c', leaseMs: 1_000, now });
    assert.equal(await c.hold(), false, 'b still holds it');
    assert.equal(b.held(), true);
  });
});
