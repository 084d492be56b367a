import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { DataKeyStore, StoredKey, WrappedKey } from './port.ts';

/*
 * The behaviour every DataKeyStore adapter must show. `make` gives a ready store (called once for
 * the suite) and how to clean it up. Ids are fresh per test so a shared backing store needs no
 * reset; `list` is checked inside a prefix of the test's own, so other tests' keys do not matter.
 */

const b64 = (bytes: number): string => randomBytes(bytes).toString('base64url');
/** A stand-in wrapping: the store keeps the fields as they are and never looks inside. */
export const fakeWrapped = (kid = 'k1'): WrappedKey => ({ kid, iv: b64(12), ct: b64(32), tag: b64(16) });

export const dataKeyStoreContract = (
  name: string,
  make: () => Promise<{ store: DataKeyStore; cleanup(): Promise<void> }>,
): void =>
  void describe(`DataKeyStore contract: ${name}`, () => {
    let store: DataKeyStore;
    let cleanup: () => Promise<void>;
    const fresh = (what = 'user'): string => `${what}-${randomUUID()}`;
    const live = (wrapped: WrappedKey): StoredKey => ({ state: 'live', wrapped });

    before(async () => {
      ({ store, cleanup } = await make());
    });
    after(async () => {
      await store.close();
      await cleanup();
    });

    it('stores a first key and gives it back', async () => {
      const id = fresh();
      const wrapped = fakeWrapped();
      assert.deepEqual(await store.create(id, wrapped), live(wrapped));
      assert.deepEqual(await store.get([id]), new Map([[id, live(wrapped)]]));
    });

    it('the first create wins: a second gets the first key', async () => {
      const id = fresh();
      const first = fakeWrapped();
      await store.create(id, first);
      assert.deepEqual(await store.create(id, fakeWrapped()), live(first));
      assert.deepEqual((await store.get([id])).get(id), live(first));
    });

    it('of 30 concurrent creates of one id exactly one key is kept and all get it', async () => {
      const id = fresh();
      const candidates = Array.from({ length: 30 }, () => fakeWrapped());
      const results = await Promise.all(candidates.map((wrapped) => store.create(id, wrapped)));
      const kept = (await store.get([id])).get(id);
      assert.ok(kept?.state === 'live');
      assert.ok(candidates.some((c) => c.ct === kept.wrapped.ct));
      for (const result of results) assert.deepEqual(result, kept);
    });

    it('gets many ids in one call, leaving out ids never created', async () => {
      const ids = Array.from({ length: 25 }, () => fresh());
      const wrapped = ids.map(() => fakeWrapped());
      await Promise.all(ids.map((id, i) => store.create(id, wrapped[i]!)));
      const missing = fresh();
      const found = await store.get([...ids, missing, ids[0]!]);
      assert.equal(found.size, ids.length);
      ids.forEach((id, i) => assert.deepEqual(found.get(id), live(wrapped[i]!)));
      assert.equal(found.has(missing), false);
      assert.deepEqual(await store.get([]), new Map());
    });

    it('destroy removes the wrapped key, leaves a tombstone, and is idempotent', async () => {
      const id = fresh();
      const other = fresh();
      const otherKey = fakeWrapped();
      await store.create(id, fakeWrapped());
      await store.create(other, otherKey);
      await store.destroy(id, '2026-01-02T03:04:05.000Z');
      const expected: StoredKey = { state: 'destroyed', destroyedAt: '2026-01-02T03:04:05.000Z' };
      assert.deepEqual((await store.get([id])).get(id), expected);
      // Again: nothing changes, the first time stays.
      await store.destroy(id, '2026-02-02T00:00:00.000Z');
      assert.deepEqual((await store.get([id])).get(id), expected);
      assert.deepEqual((await store.get([other])).get(other), live(otherKey));
    });

    it('destroy of an id never created records a tombstone', async () => {
      const id = fresh();
      await store.destroy(id, '2026-01-01T00:00:00.000Z');
      assert.deepEqual((await store.get([id])).get(id), { state: 'destroyed', destroyedAt: '2026-01-01T00:00:00.000Z' });
    });

    it('a create after destroy stays destroyed', async () => {
      const id = fresh();
      await store.create(id, fakeWrapped());
      await store.destroy(id, '2026-01-01T00:00:00.000Z');
      const answer = await store.create(id, fakeWrapped());
      assert.equal(answer.state, 'destroyed');
      assert.equal((await store.get([id])).get(id)?.state, 'destroyed');
    });

    it('concurrent destroys and creates of one id end destroyed', async () => {
      const id = fresh();
      await Promise.all([
        store.create(id, fakeWrapped()),
        store.destroy(id, '2026-01-01T00:00:00.000Z'),
        store.create(id, fakeWrapped()),
        store.destroy(id, '2026-01-01T00:00:01.000Z'),
      ]);
      assert.equal((await store.get([id])).get(id)?.state, 'destroyed');
      assert.equal((await store.create(id, fakeWrapped())).state, 'destroyed');
    });

    it('rewrap replaces a live wrapping only when the expected one is current', async () => {
      const id = fresh();
      const first = fakeWrapped('old');
      const next = fakeWrapped('new');
      await store.create(id, first);
      // Same kid, another ciphertext: stale.
      assert.equal(await store.rewrap(id, { ...first, ct: b64(32) }, fakeWrapped('new')), false);
      assert.equal(await store.rewrap(id, first, next), true);
      assert.deepEqual((await store.get([id])).get(id), live(next));
      // The old wrapping is stale now.
      assert.equal(await store.rewrap(id, first, fakeWrapped('other')), false);
      assert.deepEqual((await store.get([id])).get(id), live(next));
    });

    it('of concurrent rewraps from one expected wrapping exactly one wins', async () => {
      const id = fresh();
      const first = fakeWrapped('old');
      await store.create(id, first);
      const candidates = Array.from({ length: 10 }, () => fakeWrapped('new'));
      const won = await Promise.all(candidates.map((c) => store.rewrap(id, first, c)));
      assert.equal(won.filter(Boolean).length, 1);
      assert.deepEqual((await store.get([id])).get(id), live(candidates[won.indexOf(true)]!));
    });

    it('rewrap of a destroyed or unknown key is refused', async () => {
      const id = fresh();
      const first = fakeWrapped();
      await store.create(id, first);
      await store.destroy(id, '2026-01-01T00:00:00.000Z');
      assert.equal(await store.rewrap(id, first, fakeWrapped()), false);
      assert.equal((await store.get([id])).get(id)?.state, 'destroyed');
      assert.equal(await store.rewrap(fresh(), first, fakeWrapped()), false);
      assert.equal((await store.get([id])).get(id)?.state, 'destroyed');
    });

    it('lists every key in id order, page by page', async () => {
      // A prefix of this test's own between two marks, so the page walk covers exactly its keys.
      const prefix = `list-${randomUUID()}`;
      const ids = Array.from({ length: 23 }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
      const shuffled = [...ids].sort(() => Math.random() - 0.5);
      const keys = new Map(shuffled.map((id) => [id, fakeWrapped()]));
      for (const id of shuffled) await store.create(id, keys.get(id)!);
      await store.destroy(ids[5]!, '2026-01-01T00:00:00.000Z');

      const seen: Array<{ id: string; key: StoredKey }> = [];
      let cursor: string | null = prefix;
      for (;;) {
        const page = await store.list(cursor, 5);
        assert.ok(page.length <= 5);
        const mine = page.filter((entry) => entry.id.startsWith(`${prefix}-`));
        seen.push(...mine);
        if (mine.length < page.length || page.length < 5) break;
        cursor = page.at(-1)!.id;
      }
      assert.deepEqual(seen.map((entry) => entry.id), ids);
      for (const { id, key } of seen) {
        if (id === ids[5]) assert.deepEqual(key, { state: 'destroyed', destroyedAt: '2026-01-01T00:00:00.000Z' });
        else assert.deepEqual(key, live(keys.get(id)!));
      }
    });

    it('lists from the start with null, in ascending id order', async () => {
      const id = fresh('a');
      await store.create(id, fakeWrapped());
      const page = await store.list(null, 1_000_000);
      assert.ok(page.some((entry) => entry.id === id));
      const ids = page.map((entry) => entry.id);
      assert.deepEqual(ids, [...ids].sort());
      assert.deepEqual(await store.list(null, 0), []);
    });
  });
