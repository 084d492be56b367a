import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { CompletedKey, IdempotencyStore } from './port.ts';

const LEASE = 60_000;
const DAY = 24 * 3_600_000;

const completed = (fingerprint: string, at: number, status = 201): CompletedKey => ({
  fingerprint,
  answer: { status, headers: { 'x-docshare-consistency': '42' }, body: JSON.stringify({ status: 'success', file_id: '7', nested: [[1], []] }) },
  expiresAt: at + DAY,
});

/**
 * The behaviour every IdempotencyStore adapter must show. `make` gives a ready store; `reopen`,
 * when given, opens a second store on the same data (a restart, or another replica).
 */
export const idempotencyStoreContract = (
  name: string,
  make: () => Promise<IdempotencyStore>,
  reopen?: (closed: IdempotencyStore) => Promise<IdempotencyStore>,
): void =>
  void describe(`IdempotencyStore contract: ${name}`, () => {
    let store: IdempotencyStore;
    const fresh = (): string => `user-1/${randomUUID()}`;
    const t0 = Date.now();

    before(async () => {
      store = await make();
    });
    after(async () => {
      await store.close();
    });

    it('a free key is started; while in flight a second begin says in_flight', async () => {
      const key = fresh();
      const first = await store.begin(key, t0, LEASE);
      assert.equal(first.state, 'started');
      assert.deepEqual(await store.begin(key, t0 + 1, LEASE), { state: 'in_flight' });
    });

    it('a completed key replays its fingerprint and answer, exactly as stored', async () => {
      const key = fresh();
      const begun = await store.begin(key, t0, LEASE);
      assert.equal(begun.state, 'started');
      if (begun.state !== 'started') return;
      assert.equal(await store.complete(key, begun.token, completed('fp-1', t0)), true);
      assert.deepEqual(await store.begin(key, t0 + 5, LEASE), { state: 'done', ...completed('fp-1', t0) });
    });

    it('an abandoned key is free again', async () => {
      const key = fresh();
      const begun = await store.begin(key, t0, LEASE);
      if (begun.state !== 'started') return assert.fail('not started');
      await store.abandon(key, begun.token);
      assert.equal((await store.begin(key, t0 + 1, LEASE)).state, 'started');
    });

    it('a lapsed lease frees the key, and the stale owner can no longer complete, renew or abandon it', async () => {
      const key = fresh();
      const stale = await store.begin(key, t0, LEASE);
      if (stale.state !== 'started') return assert.fail('not started');
      const taker = await store.begin(key, t0 + LEASE + 1, LEASE);
      if (taker.state !== 'started') return assert.fail('lapsed key not taken over');
      assert.equal(await store.complete(key, stale.token, completed('stale', t0)), false);
      assert.equal(await store.renew(key, stale.token, t0 + LEASE + 2, LEASE), false);
      await store.abandon(key, stale.token);
      assert.deepEqual(await store.begin(key, t0 + LEASE + 3, LEASE), { state: 'in_flight' });
      assert.equal(await store.complete(key, taker.token, completed('new', t0)), true);
      const seen = await store.begin(key, t0 + LEASE + 4, LEASE);
      assert.equal(seen.state === 'done' && seen.fingerprint, 'new');
    });

    it('renew keeps a long request in flight past its first lease', async () => {
      const key = fresh();
      const begun = await store.begin(key, t0, LEASE);
      if (begun.state !== 'started') return assert.fail('not started');
      assert.equal(await store.renew(key, begun.token, t0 + LEASE - 1, LEASE), true);
      assert.deepEqual(await store.begin(key, t0 + LEASE + 10, LEASE), { state: 'in_flight' });
    });

    it('an expired answer is forgotten: the key starts afresh', async () => {
      const key = fresh();
      const begun = await store.begin(key, t0, LEASE);
      if (begun.state !== 'started') return assert.fail('not started');
      await store.complete(key, begun.token, completed('old', t0));
      const again = await store.begin(key, t0 + DAY + 1, LEASE);
      if (again.state !== 'started') return assert.fail(`expired key not started afresh: ${again.state}`);
      assert.equal(await store.complete(key, again.token, completed('new', t0 + DAY + 1)), true);
      const seen = await store.begin(key, t0 + DAY + 2, LEASE);
      assert.equal(seen.state === 'done' && seen.fingerprint, 'new');
    });

    it('a completed key can be neither completed again nor abandoned', async () => {
      const key = fresh();
      const begun = await store.begin(key, t0, LEASE);
      if (begun.state !== 'started') return assert.fail('not started');
      await store.complete(key, begun.token, completed('once', t0));
      assert.equal(await store.complete(key, begun.token, completed('twice', t0)), false);
      assert.equal(await store.renew(key, begun.token, t0 + 1, LEASE), false, 'a completed key is no longer in flight');
      await store.abandon(key, begun.token);
      const seen = await store.begin(key, t0 + 1, LEASE);
      assert.equal(seen.state === 'done' && seen.fingerprint, 'once');
      // Past the lease its request had, the answer still holds the key.
      const later = await store.begin(key, t0 + LEASE + 1, LEASE);
      assert.equal(later.state === 'done' && later.fingerprint, 'once');
    });

    it('of 30 concurrent begins of one key exactly one starts', async () => {
      const key = fresh();
      const results = await Promise.all(Array.from({ length: 30 }, () => store.begin(key, t0, LEASE)));
      assert.equal(results.filter((r) => r.state === 'started').length, 1);
      assert.equal(results.filter((r) => r.state === 'in_flight').length, 29);
    });

    it('keys are independent', async () => {
      const [a, b] = [fresh(), fresh()];
      assert.equal((await store.begin(a, t0, LEASE)).state, 'started');
      assert.equal((await store.begin(b, t0, LEASE)).state, 'started');
    });

    /** Completes `key` with an answer of fingerprint `fp`. */
    const answer = async (key: string, fp: string): Promise<void> => {
      const begun = await store.begin(key, t0, LEASE);
      if (begun.state !== 'started') return assert.fail(`${key} not started`);
      assert.equal(await store.complete(key, begun.token, completed(fp, t0)), true);
    };

    it('removeScope removes the answered and in-flight keys of the prefix only, counting the answers: 12/ leaves 123/ alone', async () => {
      const run = randomUUID();
      const [u12, u123, u1] = [`${run}:12/`, `${run}:123/`, `${run}:1/`];
      await answer(`${u12}a`, 'fp-12a');
      await answer(`${u12}b`, 'fp-12b');
      await store.begin(`${u12}flying`, t0, LEASE);
      await answer(`${u123}a`, 'fp-123a');
      await answer(`${u1}a`, 'fp-1a');
      assert.equal(await store.removeScope(u12), 2);
      for (const key of [`${u12}a`, `${u12}b`, `${u12}flying`]) assert.equal((await store.begin(key, t0 + 1, LEASE)).state, 'started', key);
      const kept = await Promise.all([`${u123}a`, `${u1}a`].map((key) => store.begin(key, t0 + 1, LEASE)));
      assert.deepEqual(kept.map((b) => b.state === 'done' && b.fingerprint), ['fp-123a', 'fp-1a']);
      assert.equal(await store.removeScope(`${run}:99/`), 0);
    });

    it('removeScope takes a prefix literally (no pattern), and a second removal finds nothing', async () => {
      const run = randomUUID();
      await answer(`${run}.a+/(x)`, 'literal');
      await answer(`${run}Xa+/(x)`, 'other');
      await answer(`${run}.aa/(x)`, 'other too');
      assert.equal(await store.removeScope(`${run}.a+/(`), 1);
      assert.equal(await store.removeScope(`${run}.a+/(`), 0);
      const left = await Promise.all([`${run}Xa+/(x)`, `${run}.aa/(x)`].map((key) => store.begin(key, t0 + 1, LEASE)));
      assert.deepEqual(left.map((b) => b.state), ['done', 'done']);
    });

    it('a request in flight under a removed key can no longer complete or renew it', async () => {
      const key = `${randomUUID()}:7/write`;
      const begun = await store.begin(key, t0, LEASE);
      if (begun.state !== 'started') return assert.fail('not started');
      await store.removeScope(key.slice(0, key.indexOf('/') + 1));
      assert.equal(await store.renew(key, begun.token, t0 + 1, LEASE), false);
      assert.equal(await store.complete(key, begun.token, completed('late', t0)), false);
      assert.equal((await store.begin(key, t0 + 2, LEASE)).state, 'started');
    });

    if (reopen) {
      it('removed answers stay removed across a reopen', async () => {
        const run = randomUUID();
        await answer(`${run}:5/a`, 'gone');
        await answer(`${run}:6/a`, 'kept');
        assert.equal(await store.removeScope(`${run}:5/`), 1);
        store = await reopen(store);
        assert.equal((await store.begin(`${run}:5/a`, t0 + 1, LEASE)).state, 'started');
        const kept = await store.begin(`${run}:6/a`, t0 + 1, LEASE);
        assert.equal(kept.state === 'done' && kept.fingerprint, 'kept');
      });

      it('a completed answer survives a reopen (restart); a key in flight does not block it past its lease', async () => {
        const done = fresh();
        const flying = fresh();
        const begun = await store.begin(done, t0, LEASE);
        if (begun.state !== 'started') return assert.fail('not started');
        await store.complete(done, begun.token, completed('durable', t0));
        await store.begin(flying, t0, LEASE);
        store = await reopen(store);
        const seen = await store.begin(done, t0 + 10, LEASE);
        assert.deepEqual(seen, { state: 'done', ...completed('durable', t0) });
        assert.equal((await store.begin(flying, t0 + LEASE + 1, LEASE)).state, 'started');
      });
    }
  });
