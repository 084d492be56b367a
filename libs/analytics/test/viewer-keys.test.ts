import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeMemoryViewerSalts, makeViewerKeys, type ViewerSalts } from '../src/viewer-key.ts';

/** Salts that count the asks, over memory salts on the same clock. */
const countedSalts = (now: () => Date) => {
  const inner = makeMemoryViewerSalts({ now });
  const asked: string[] = [];
  const salts: ViewerSalts = { saltOf: (day) => (asked.push(day), inner.saltOf(day)), close: () => inner.close() };
  return { salts, asked };
};

describe('viewer keys', () => {
  const browser = { userId: null, address: '203.0.113.7', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0' };

  it('a signed-in user is u:<id>, whatever the address', async () => {
    const { salts, asked } = countedSalts(() => new Date());
    const keys = makeViewerKeys({ salts });
    assert.equal(await keys.keyOf({ ...browser, userId: 42 }), 'u:42');
    assert.equal(await keys.keyOf({ userId: 42, address: '198.51.100.1', userAgent: '' }), 'u:42');
    assert.deepEqual(asked, [], 'no salt needed');
  });

  it('an anonymous key is a: and 22 base64url characters, stable within a day, different across address, User-Agent and day', async () => {
    let clock = new Date('2026-03-10T00:00:01.000Z');
    const { salts, asked } = countedSalts(() => clock);
    const keys = makeViewerKeys({ salts, now: () => clock });
    const key = await keys.keyOf(browser);
    assert.match(key, /^a:[A-Za-z0-9_-]{22}$/);
    clock = new Date('2026-03-10T23:59:59.999Z');
    assert.equal(await keys.keyOf(browser), key);
    assert.notEqual(await keys.keyOf({ ...browser, address: '203.0.113.8' }), key);
    assert.notEqual(await keys.keyOf({ ...browser, userAgent: `${browser.userAgent} ` }), key);
    // The separator keeps the fields apart: moving a character from one to the other changes the key.
    assert.notEqual(await keys.keyOf({ userId: null, address: 'ab', userAgent: 'c' }), await keys.keyOf({ userId: null, address: 'a', userAgent: 'bc' }));
    assert.deepEqual(asked, ['2026-03-10'], 'the day\'s salt is asked once, then kept');
    clock = new Date('2026-03-11T00:00:00.000Z');
    const next = await keys.keyOf(browser);
    assert.match(next, /^a:[A-Za-z0-9_-]{22}$/);
    assert.notEqual(next, key);
    assert.deepEqual(asked, ['2026-03-10', '2026-03-11']);
  });

  it('two processes on one salt store give a visitor the same key; another store another key', async () => {
    const now = () => new Date('2026-03-10T08:00:00.000Z');
    const shared = makeMemoryViewerSalts({ now });
    const [a, b] = [makeViewerKeys({ salts: shared, now }), makeViewerKeys({ salts: shared, now })];
    const other = makeViewerKeys({ salts: makeMemoryViewerSalts({ now }), now });
    assert.equal(await a.keyOf(browser), await b.keyOf(browser));
    assert.notEqual(await other.keyOf(browser), await a.keyOf(browser));
  });

  it('concurrent first asks of a day share one salt request; a failed one is asked again', async () => {
    const now = () => new Date('2026-03-10T08:00:00.000Z');
    const inner = makeMemoryViewerSalts({ now });
    let calls = 0;
    let failing = true;
    const salts: ViewerSalts = {
      saltOf: async (day) => {
        calls++;
        if (failing) throw new Error('store unavailable');
        return inner.saltOf(day);
      },
      close: async () => {},
    };
    const keys = makeViewerKeys({ salts, now });
    const results = await Promise.allSettled([keys.keyOf(browser), keys.keyOf(browser), keys.keyOf(browser)]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
    assert.equal(calls, 1);
    failing = false;
    const [x, y] = await Promise.all([keys.keyOf(browser), keys.keyOf(browser)]);
    assert.equal(x, y);
    assert.equal(calls, 2);
  });
});
