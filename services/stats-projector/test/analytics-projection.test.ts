import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { userViewer } from '@docshare/contracts';
import { makeMemoryReadStore, type GuardedUpdate, type ReadStore } from '@docshare/read-store';
import { deliveredTwice, inBatches, redeliveredBatches } from '@docshare/projection/testing';
import { DAILY_FILES, DAILY_USERS, HOURLY_FILES, STORED_FILES, statsHandler } from '../src/projection.ts';
import { makeStatsQueries } from '../src/queries.ts';
import { makeAnalyticsHistory, projected, snapshot } from './helpers.ts';

const DAY = '2026-11-20';

/** A history with every kind of event the time-bucketed model counts, v1 and v2. */
const history = () => {
  const h = makeAnalyticsHistory();
  h.user(1, 'Ada'); h.user(2, 'Bob'); h.user(3, 'Cy');
  h.upload(10, 1, 'a', { categoryId: 4, categoryName: 'Maths' }); h.upload(11, 1, 'b'); h.upload(12, 2, 'c');
  h.view(10, 1); h.download(10, 1, 2); h.download(10, 1, 1);
  h.viewV2(10, 1, userViewer(2)); h.viewV2(10, 1, 'a:anon'); h.viewV2(10, 1, userViewer(2)); h.viewV2(10, 1, userViewer(1));
  h.viewV2(11, 1, userViewer(3), '2026-11-21T00:10:00.000Z'); h.viewV2(12, 2, userViewer(1));
  h.downloadV2(10, 1, 3); h.downloadV2(10, 1, 1); h.downloadV2(11, 1, 3, '2026-11-21T01:00:00.000Z');
  h.update(11, 1, { forSale: true, price: 2 }); h.purchase(11, 1, 1, 2); h.purchase(11, 1, 2, 2);
  h.comment(1, 10, 1, 2, 'hi'); h.comment(2, 11, 1, 1, 'own');
  h.update(10, 1, { title: 'a2', enabled: false });
  h.remove(12, 2);
  return h.records;
};

const doc = async (store: ReadStore, collection: string, id: string) => {
  const found = await store.get(collection, id);
  assert.ok(found, `${collection}/${id}`);
  const { viewers: _v, downloaders: _d, ...counters } = found;
  return counters;
};

describe('stats projection: daily and hourly activity', () => {
  it('counts each kind of activity per file, owner and day (v1 and v2), unique viewers and downloaders without the owner', async () => {
    const store = await projected(history());
    assert.deepEqual(await doc(store, DAILY_FILES, `10:${DAY}`), {
      _id: `10:${DAY}`, file_id: 10, owner_id: 1, date: DAY,
      // 1 v1 view + 4 v2 (the owner's counts as a view); 2 v1 + 2 v2 downloads; a comment.
      views: 5, unique_viewers: 2, downloads: 4, unique_downloaders: 2, comments: 1,
    });
    assert.deepEqual(await doc(store, DAILY_FILES, '11:2026-11-21'), {
      _id: '11:2026-11-21', file_id: 11, owner_id: 1, date: '2026-11-21', views: 1, unique_viewers: 1, downloads: 1, unique_downloaders: 1,
    });
    // The repeated sale counts once; the owner's own comment counts (as total_comments).
    assert.deepEqual(await doc(store, DAILY_FILES, `11:${DAY}`), { _id: `11:${DAY}`, file_id: 11, owner_id: 1, date: DAY, sales: 1, comments: 1 });
    // Ada's day: viewers u:2 and a:anon of file 10; downloaders u:2 (v1) and u:3 (v2).
    assert.deepEqual(await doc(store, DAILY_USERS, `1:${DAY}`), {
      _id: `1:${DAY}`, owner_id: 1, date: DAY, views: 5, unique_viewers: 2, downloads: 4, unique_downloaders: 2, sales: 1, comments: 2,
    });
    assert.deepEqual(await doc(store, HOURLY_FILES, '10:2026-11-20T10'), {
      _id: '10:2026-11-20T10', file_id: 10, owner_id: 1, hour: '2026-11-20T10', views: 5, unique_viewers: 2,
    });
    const stats = await makeStatsQueries(store).statsOf(1);
    assert.equal(stats.total_views, 6);
    assert.equal(stats.total_downloads, 5);
    assert.equal(stats.total_sales, 1);
  });

  it('keeps each file\'s facts: title, category, enabled, deleted', async () => {
    const store = await projected(history());
    assert.deepEqual(await store.get(STORED_FILES, '10'), {
      _id: '10', owner_id: 1, size: 3, title: 'a2', category_id: 4, category_name: 'Maths', enabled: false, deleted: false,
    });
    assert.equal((await store.get(STORED_FILES, '11'))?.enabled, true);
    assert.equal((await store.get(STORED_FILES, '12'))?.deleted, true);
  });

  it('ends in the same state when every event is delivered twice, in batches of any size, and redelivered overlapping', async () => {
    const records = history();
    const once = await snapshot(await projected(records));
    assert.deepEqual(await snapshot(await projected(deliveredTwice(records))), once);
    for (const size of [2, 3, 5, records.length]) {
      assert.deepEqual(await snapshot(await projected(records, inBatches(records, size))), once, `batches of ${size}`);
      assert.deepEqual(await snapshot(await projected(records, redeliveredBatches(records, size))), once, `redelivered batches of ${size}`);
    }
  });

  it('changes nothing when each new kind of event is fed a second time, alone or with its batch', async () => {
    const h = makeAnalyticsHistory();
    h.user(1, 'Ada'); h.upload(10, 1, 'a');
    const kinds = [
      h.viewV2(10, 1, userViewer(2)), h.viewV2(10, 1, 'a:x'), h.downloadV2(10, 1, 2), h.view(10, 1), h.download(10, 1, 3),
      h.update(10, 1, { title: 'b' }), h.update(10, 1, { forSale: true, price: 1 }), h.purchase(10, 1, 1, 2),
      h.comment(1, 10, 1, 2, 'x'), h.remove(10, 1),
    ];
    const store = makeMemoryReadStore();
    const handle = statsHandler(store);
    for (const record of h.records) {
      await handle([record]);
      const before = await snapshot(store);
      await handle([record]);
      assert.deepEqual(await snapshot(store), before, `${record.event.type} again`);
    }
    const before = await snapshot(store);
    await handle(kinds);
    assert.deepEqual(await snapshot(store), before, 'the whole batch again');
  });

  it('1,000 views by 100 signed-in users: views 1000 and unique viewers 100, by day, owner and hour', async () => {
    const h = makeAnalyticsHistory();
    h.user(1, 'Ada'); h.upload(10, 1, 'a');
    for (let i = 0; i < 1000; i++) h.viewV2(10, 1, userViewer(100 + (i % 100)), `${DAY}T12:${String(i % 60).padStart(2, '0')}:00.000Z`);
    for (const size of [1000, 64]) {
      const store = await projected(h.records, inBatches(h.records, size));
      for (const [collection, id] of [[DAILY_FILES, `10:${DAY}`], [DAILY_USERS, `1:${DAY}`], [HOURLY_FILES, '10:2026-11-20T12']] as const) {
        const d = await store.get(collection, id);
        assert.equal(d?.views, 1000, `${collection} views, batches of ${size}`);
        assert.equal(d?.unique_viewers, 100, `${collection} unique viewers, batches of ${size}`);
      }
    }
  });

  it('the owner\'s own views and downloads count, but not as unique viewers or downloaders', async () => {
    const h = makeAnalyticsHistory();
    h.user(1, 'Ada'); h.upload(10, 1, 'a');
    for (let i = 0; i < 5; i++) { h.viewV2(10, 1, userViewer(1)); h.downloadV2(10, 1, 1); }
    const store = await projected(h.records);
    const day = await store.get(DAILY_FILES, `10:${DAY}`);
    assert.equal(day?.views, 5);
    assert.equal(day?.downloads, 5);
    assert.equal(day?.unique_viewers ?? 0, 0);
    assert.equal(day?.unique_downloaders ?? 0, 0);
    assert.equal((await makeStatsQueries(store).statsOf(1)).total_views, 5);
  });

  it('counts a v1-only log (an old deployment\'s): views and downloads by day, downloaders by user id', async () => {
    const h = makeAnalyticsHistory();
    h.user(1, 'Ada'); h.upload(10, 1, 'a');
    h.view(10, 1); h.view(10, 1); h.download(10, 1, 2); h.download(10, 1, 2); h.download(10, 1, 1);
    const store = await projected(h.records);
    assert.deepEqual(await doc(store, DAILY_FILES, `10:${DAY}`), {
      _id: `10:${DAY}`, file_id: 10, owner_id: 1, date: DAY, views: 2, downloads: 3, unique_downloaders: 1,
    });
    assert.equal((await makeStatsQueries(store).statsOf(1)).total_views, 2);
  });

  it('a batch of 1,000 views of one file is one applyBatch, one find per sketch collection, and updates that merge to one write per document', async () => {
    const h = makeAnalyticsHistory();
    h.user(1, 'Ada'); h.upload(10, 1, 'a');
    const warm = h.records.length;
    for (let i = 0; i < 1000; i++) h.viewV2(10, 1, i % 3 === 0 ? userViewer(1) : `a:${i}`);
    const inner = await projected(h.records.slice(0, warm));
    const calls: string[] = [];
    const batches: GuardedUpdate[][] = [];
    const store: ReadStore = {
      ...inner,
      find: (collection, filter, options) => { calls.push(`find ${collection}`); return inner.find(collection, filter, options); },
      get: (collection, id) => { calls.push(`get ${collection}`); return inner.get(collection, id); },
      applyBatch: (updates) => { calls.push('applyBatch'); batches.push([...updates]); return inner.applyBatch(updates); },
    };
    await statsHandler(store)(h.records.slice(warm));
    assert.deepEqual(calls.sort(), ['applyBatch', `find ${DAILY_FILES}`, `find ${DAILY_USERS}`, `find ${HOURLY_FILES}`]);
    const perDoc = new Map<string, GuardedUpdate[]>();
    for (const u of batches[0] ?? []) perDoc.set(`${u.collection}/${u.id}`, [...(perDoc.get(`${u.collection}/${u.id}`) ?? []), u]);
    assert.equal(perDoc.size, 4, 'the user\'s stats, the file\'s day and hour, the owner\'s day');
    // What the MongoDB store's mergeWrites joins into one write: no field both set and inc'ed, no setOnInsert.
    for (const [id, updates] of perDoc) {
      const set = new Set(updates.flatMap((u) => Object.keys(u.update.set ?? {})));
      const inc = new Set(updates.flatMap((u) => Object.keys(u.update.inc ?? {})));
      assert.deepEqual([...set].filter((f) => inc.has(f)), [], id);
      assert.ok(updates.every((u) => u.update.setOnInsert === undefined), id);
      // The sketch is set once, on the document's last update.
      assert.ok(updates.slice(0, -1).every((u) => !('viewers' in (u.update.set ?? {}))), id);
    }
    const day = await inner.get(DAILY_FILES, `10:${DAY}`);
    assert.equal(day?.views, 1000);
    assert.equal(day?.unique_viewers, 666);
  });
});
