import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { ClaimStore } from './port.ts';

/** The behaviour every ClaimStore adapter must show; `make` gives a ready store (called once). */
export const claimStoreContract = (name: string, make: () => Promise<ClaimStore>): void =>
  void describe(`ClaimStore contract: ${name}`, () => {
    let store: ClaimStore;
    // Fresh scopes and keys per test so a shared backing store needs no reset between runs.
    const fresh = (what: string): string => `${what}-${randomUUID()}`;

    before(async () => {
      store = await make();
    });
    after(async () => {
      await store.close();
    });

    it('a first claim is created and can be read back', async () => {
      const scope = fresh('email');
      const key = fresh('key');
      const value = { accountId: 'acc-1', passwordHash: 'scrypt$abc', roles: ['reader'] };
      assert.deepEqual(await store.claim(scope, key, value), { created: true, value });
      assert.deepEqual(await store.get(scope, key), value);
    });

    it('a second claim of a key gets the first value and created false', async () => {
      const scope = fresh('email');
      const key = fresh('key');
      await store.claim(scope, key, { accountId: 'first' });
      assert.deepEqual(await store.claim(scope, key, { accountId: 'second' }), {
        created: false,
        value: { accountId: 'first' },
      });
      assert.deepEqual(await store.get(scope, key), { accountId: 'first' });
    });

    it('of 50 concurrent claims of one key exactly one is created and all see its value', async () => {
      const scope = fresh('category');
      const key = fresh('key');
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.claim(scope, key, { n: i })));
      const winners = results.filter((r) => r.created);
      assert.equal(winners.length, 1);
      const winner = winners[0]?.value;
      for (const r of results) assert.deepEqual(r.value, winner);
      assert.deepEqual(await store.get(scope, key), winner);
    });

    it('concurrent claims of different keys are all created', async () => {
      const scope = fresh('category');
      const keys = Array.from({ length: 20 }, () => fresh('key'));
      const results = await Promise.all(keys.map((k) => store.claim(scope, k, k)));
      assert.ok(results.every((r) => r.created));
      for (const k of keys) assert.equal(await store.get(scope, k), k);
    });

    it('scopes are independent', async () => {
      const key = fresh('shared-key');
      const a = fresh('scope-a');
      const b = fresh('scope-b');
      assert.deepEqual(await store.claim(a, key, 'in a'), { created: true, value: 'in a' });
      assert.deepEqual(await store.claim(b, key, 'in b'), { created: true, value: 'in b' });
      assert.equal(await store.get(a, key), 'in a');
      assert.equal(await store.get(b, key), 'in b');
      assert.equal(await store.get(fresh('scope-c'), key), null);
    });

    it('get of a key never claimed is null', async () => {
      assert.equal(await store.get(fresh('scope'), fresh('key')), null);
    });

    it('keeps JSON values of every shape, and odd keys', async () => {
      const scope = fresh('scope');
      const values: unknown[] = [0, false, '', 'ünï\ncode "quoted" \u2028', [1, [2, { three: null }]], { nested: { a: [true] } }];
      for (const [i, value] of values.entries()) {
        const key = `${fresh('key')} / ${i} \n "x"`;
        assert.deepEqual(await store.claim(scope, key, value), { created: true, value });
        assert.deepEqual(await store.get(scope, key), value);
      }
    });

    it('what a caller does to a value afterwards does not change the stored one', async () => {
      const scope = fresh('scope');
      const key = fresh('key');
      const value = { roles: ['reader'] };
      await store.claim(scope, key, value);
      value.roles.push('admin');
      const read = await store.get<{ roles: string[] }>(scope, key);
      assert.deepEqual(read, { roles: ['reader'] });
      read?.roles.push('owner');
      assert.deepEqual(await store.get(scope, key), { roles: ['reader'] });
    });
  });
