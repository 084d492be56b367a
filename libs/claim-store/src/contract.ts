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

    it('release removes a claim (true), after which the key can be claimed again', async () => {
      const scope = fresh('account');
      const key = fresh('key');
      await store.claim(scope, key, { userId: 1, name: 'Ann' });
      assert.equal(await store.release(scope, key), true);
      assert.equal(await store.get(scope, key), null);
      assert.deepEqual(await store.claim(scope, key, { userId: 2 }), { created: true, value: { userId: 2 } });
      assert.deepEqual(await store.get(scope, key), { userId: 2 });
    });

    it('release of a key not claimed, or released already, is false', async () => {
      const scope = fresh('account');
      const key = fresh('key');
      assert.equal(await store.release(scope, key), false);
      await store.claim(scope, key, 1);
      assert.equal(await store.release(scope, key), true);
      assert.equal(await store.release(scope, key), false);
    });

    it('release leaves the other keys of the scope and the same key in other scopes alone', async () => {
      const [a, b] = [fresh('scope-a'), fresh('scope-b')];
      const [key, other] = [fresh('key'), fresh('key')];
      await Promise.all([store.claim(a, key, 'a/key'), store.claim(a, other, 'a/other'), store.claim(b, key, 'b/key')]);
      assert.equal(await store.release(a, key), true);
      assert.equal(await store.get(a, key), null);
      assert.equal(await store.get(a, other), 'a/other');
      assert.equal(await store.get(b, key), 'b/key');
    });

    it('claims made while a release is in progress are all kept, and a claim racing the release of its key ends claimed', async () => {
      const scope = fresh('scope');
      const gone = fresh('gone');
      await store.claim(scope, gone, 'old');
      const keys = Array.from({ length: 20 }, () => fresh('key'));
      const [released, ...claimed] = await Promise.all([
        store.release(scope, gone),
        ...keys.map((k) => store.claim(scope, k, k)),
        store.claim(scope, gone, 'new'),
      ]);
      assert.equal(released, true);
      assert.ok(claimed.every((r) => r.created || r.value === 'old'));
      for (const k of keys) assert.equal(await store.get(scope, k), k);
      // The racing claim either came before the release (then found 'old', now released) or after it (created 'new').
      const last = claimed.at(-1);
      assert.equal(await store.get(scope, gone), last?.created === true ? 'new' : null);
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
