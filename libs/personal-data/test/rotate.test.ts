import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { CloudEvent } from '@docshare/contracts';
import { makeMemoryKeyStore, makePersonalData, parseKek, rewrapAll } from '../src/index.ts';

const key = (): string => randomBytes(32).toString('base64url');
const registered = (userId: number): CloudEvent => ({
  specversion: '1.0', id: `e-${userId}`, source: '/test', type: 'docs.user.registered.v1', time: '2026-11-29T00:00:00Z',
  subject: `user-${userId}`, datacontenttype: 'application/json', correlationid: 'c', causationid: 'c', streamversion: 1,
  data: { userId, name: `Name ${userId}`, email: `u${userId}@example.com`, registeredAt: '2026-11-29T00:00:00Z' },
});

describe('KEK rotation (rewrapAll)', () => {
  it('rewraps every live key under the current KEK, after which the old KEK is no longer needed', async () => {
    const store = makeMemoryKeyStore();
    const [oldKey, newKey] = [`old:${key()}`, `new:${key()}`];
    const before = makePersonalData({ store, kek: parseKek(oldKey) });
    const sealed = await before.seal([1, 2, 3].map(registered));
    await before.destroy(3);

    const report = await rewrapAll(store, parseKek(`${newKey}\n${oldKey}`), 2);
    assert.deepEqual(report, { keys: 3, rewrapped: 2, destroyed: 1, raced: 0 });
    assert.ok((await store.list(null, 10)).every(({ key: k }) => k.state === 'destroyed' || k.wrapped.kid === 'new'));

    // Only the new KEK now: the same sealed events open, the destroyed one stays redacted.
    const after = makePersonalData({ store, kek: parseKek(newKey) });
    const opened = await after.open(sealed.map((event, i) => ({ position: i + 1, event })));
    assert.deepEqual(opened.map(({ event }) => (event.data as { name: string }).name), ['Name 1', 'Name 2', '[deleted]']);
    assert.deepEqual(await rewrapAll(store, parseKek(newKey)), { keys: 3, rewrapped: 0, destroyed: 1, raced: 0 });
  });

  it('leaves a key that changed meanwhile (compare-and-set) and counts it', async () => {
    const store = makeMemoryKeyStore();
    const [oldKey, newKey] = [`old:${key()}`, `new:${key()}`];
    await makePersonalData({ store, kek: parseKek(oldKey) }).seal([registered(1)]);
    const racing = { ...store, rewrap: async () => false };
    assert.deepEqual(await rewrapAll(racing, parseKek(`${newKey}\n${oldKey}`)), { keys: 1, rewrapped: 0, destroyed: 0, raced: 1 });
  });
});
