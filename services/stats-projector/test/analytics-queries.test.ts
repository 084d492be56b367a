import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError, M, userViewer } from '@docshare/contracts';
import { closeServer, IDENTITY_HEADER, listen, makeLogger } from '@docshare/http';
import type { ReadStore } from '@docshare/read-store';
import { makeStatsQueries } from '../src/queries.ts';
import { makeStatsApp } from '../src/app.ts';
import { makeAnalyticsHistory, projected } from './helpers.ts';

const BASE = 'http://docs.test';
/** The tests' clock: 2026-11-22 12:30 UTC. */
const NOW = new Date('2026-11-22T12:30:00.000Z');
const now = () => NOW;
const at = (day: string, hour = '12'): string => `${day}T${hour}:05:00.000Z`;

/**
 * Ada (1) owns 10 (Maths), 11, 13 (disabled), 14 (deleted); Bob (2) owns 12 (Maths). Views by
 * day: 10 five on the 20th and three on the 22nd, 11 one on the 22nd, 12 two on the 22nd.
 */
const history = () => {
  const h = makeAnalyticsHistory();
  h.user(1, 'Ada'); h.user(2, 'Bob');
  h.upload(10, 1, 'ten', { categoryId: 4, categoryName: 'Maths' }); h.upload(11, 1, 'eleven', { categoryId: 5, categoryName: 'Art' });
  h.upload(12, 2, 'twelve', { categoryId: 4, categoryName: 'Maths' }); h.upload(13, 1, 'thirteen'); h.upload(14, 1, 'fourteen');
  for (let i = 0; i < 5; i++) h.viewV2(10, 1, `a:${i}`, at('2026-11-20'));
  for (let i = 0; i < 3; i++) h.viewV2(10, 1, `a:${i}`, at('2026-11-22'));
  h.viewV2(11, 1, 'a:9', at('2026-11-22', '11'));
  h.viewV2(12, 2, 'a:1', at('2026-11-22')); h.viewV2(12, 2, 'a:2', at('2026-11-22'));
  for (let i = 0; i < 20; i++) { h.viewV2(13, 1, `a:${i}`, at('2026-11-22')); h.viewV2(14, 1, `a:${i}`, at('2026-11-22')); }
  h.update(13, 1, { enabled: false }); h.remove(14, 1);
  h.downloadV2(11, 1, 2, at('2026-11-21')); h.downloadV2(11, 1, 2, at('2026-11-21'));
  return h;
};

let store: ReadStore;
before(async () => { store = await projected(history().records); });

describe('stats queries over the memory read store', () => {
  it('api-daily: every day of the range, zeros included, and the totals; all files or one', async () => {
    const q = makeStatsQueries(store, { publicBaseUrl: BASE, now });
    const all = await q.daily(1, { from: '2026-11-19', to: '2026-11-23' });
    assert.deepEqual(all.days.map((d) => [d.date, d.views, d.unique_viewers, d.downloads, d.unique_downloaders]), [
      ['2026-11-19', 0, 0, 0, 0], ['2026-11-20', 5, 5, 0, 0], ['2026-11-21', 0, 0, 2, 1], ['2026-11-22', 44, 20, 0, 0], ['2026-11-23', 0, 0, 0, 0],
    ]);
    // a:9 (file 11) is among a:0..a:19 (files 13, 14): one unique viewer of Ada that day.
    assert.deepEqual(all.totals, { views: 49, unique_viewers: 25, downloads: 2, unique_downloaders: 1, sales: 0, comments: 0 });
    assert.deepEqual([all.timezone, all.from, all.to], ['UTC', '2026-11-19', '2026-11-23']);
    const one = await q.daily(1, { from: '2026-11-20', to: '2026-11-22', fileId: 10 });
    assert.deepEqual(one.days.map((d) => d.views), [5, 0, 3]);
    assert.equal(one.totals.unique_viewers, 8, 'summed over days: keys cannot be followed across days');
  });

  it('api-daily: another user\'s file, an unknown one and a deleted one are not found', async () => {
    const q = makeStatsQueries(store, { now });
    for (const fileId of [12, 99, 14]) {
      await assert.rejects(q.daily(1, { from: '2026-11-20', to: '2026-11-20', fileId }),
        (e: unknown) => e instanceof DocshareError && e.kind === 'not_found' && e.message === M.fileNotFound, `file ${fileId}`);
    }
  });

  it('api-top: the caller\'s not-deleted files by the metric over the last days, value desc then id, limited', async () => {
    const q = makeStatsQueries(store, { publicBaseUrl: BASE, now });
    assert.deepEqual(await q.top(1, { metric: 'views', days: 7, limit: 10 }), [
      { id: '13', title: 'thirteen', link: `${BASE}/docs/13`, value: 20 },
      { id: '10', title: 'ten', link: `${BASE}/docs/10`, value: 8 },
      { id: '11', title: 'eleven', link: `${BASE}/docs/11`, value: 1 },
    ]);
    // Today only: the 20th falls out of the window.
    assert.deepEqual((await q.top(1, { metric: 'views', days: 1, limit: 2 })).map((r) => [r.id, r.value]), [['13', 20], ['10', 3]]);
    assert.deepEqual((await q.top(1, { metric: 'unique_viewers', days: 3, limit: 10 })).map((r) => [r.id, r.value]), [['13', 20], ['10', 8], ['11', 1]]);
    assert.deepEqual((await q.top(1, { metric: 'downloads', days: 3, limit: 10 })).map((r) => [r.id, r.value]), [['11', 2]]);
    assert.deepEqual(await q.top(1, { metric: 'sales', days: 90, limit: 10 }), []);
    assert.deepEqual(await q.top(2, { metric: 'views', days: 7, limit: 10 }), [{ id: '12', title: 'twelve', link: `${BASE}/docs/12`, value: 2 }]);
  });

  it('api-trending: enabled, not-deleted files of every user by unique viewers then views, in the window and category', async () => {
    const q = makeStatsQueries(store, { publicBaseUrl: BASE, now });
    assert.deepEqual(await q.trending({ hours: 24, limit: 10 }), [
      { id: '10', title: 'ten', link: `${BASE}/docs/10`, category: 'Maths', unique_viewers: 3, views: 3 },
      { id: '12', title: 'twelve', link: `${BASE}/docs/12`, category: 'Maths', unique_viewers: 2, views: 2 },
      { id: '11', title: 'eleven', link: `${BASE}/docs/11`, category: 'Art', unique_viewers: 1, views: 1 },
    ]);
    assert.deepEqual((await q.trending({ hours: 1, limit: 10 })).map((r) => r.id), ['10', '12'], 'the current hour only');
    assert.deepEqual((await q.trending({ hours: 24, categoryId: 5, limit: 10 })).map((r) => r.id), ['11']);
    assert.deepEqual((await q.trending({ hours: 24, categoryId: 77, limit: 10 })), []);
    assert.deepEqual((await q.trending({ hours: 168, limit: 1 })).map((r) => [r.id, r.unique_viewers, r.views]), [['10', 5, 8]],
      'the union of the hours\' sketches: a:0..a:4 on the 20th, a:0..a:2 again on the 22nd');
  });

  it('api-trending: 500 views by one viewer rank below 50 viewers once each; the owner is no unique viewer', async () => {
    const h = makeAnalyticsHistory();
    h.user(1, 'Ada'); h.user(2, 'Bob');
    h.upload(20, 1, 'hot'); h.upload(21, 2, 'broad');
    for (let i = 0; i < 500; i++) h.viewV2(20, 1, userViewer(7), at('2026-11-22', String(10 + (i % 3))));
    for (let i = 0; i < 50; i++) h.viewV2(21, 2, `a:${i}`, at('2026-11-22', '11'));
    for (let i = 0; i < 80; i++) h.viewV2(21, 2, userViewer(2), at('2026-11-22', '12'));
    const q = makeStatsQueries(await projected(h.records), { now });
    assert.deepEqual((await q.trending({ hours: 24, limit: 10 })).map((r) => [r.id, r.unique_viewers, r.views]), [['21', 50, 130], ['20', 1, 500]]);
  });
});

describe('api-trending reads the sketches of the files that can rank only', () => {
  it('merges the hours of the contenders, and ranks exactly as merging every file would', async () => {
    // Over 2026-11-22 11h and 12h: 20 files with the same 3 viewers each hour (3 unique); file 1
    // with 30 viewers each hour, different ones (60 unique); file 2 with 40 in one hour.
    const h = makeAnalyticsHistory();
    h.user(1, 'Ada');
    for (let fileId = 1; fileId <= 22; fileId++) h.upload(fileId, 1, `file ${fileId}`);
    for (let i = 0; i < 30; i++) { h.viewV2(1, 1, `a:p${i}`, at('2026-11-22', '11')); h.viewV2(1, 1, `a:q${i}`, at('2026-11-22', '12')); }
    for (let i = 0; i < 40; i++) h.viewV2(2, 1, `a:r${i}`, at('2026-11-22', '12'));
    for (let fileId = 3; fileId <= 22; fileId++) {
      for (const hour of ['11', '12']) for (let i = 0; i < 3; i++) h.viewV2(fileId, 1, `a:s${i}`, at('2026-11-22', hour));
    }
    const projectedStore = await projected(h.records);
    const sketchReads: string[] = [];
    const watched: ReadStore = {
      ...projectedStore,
      find: async (collection, filter, options) => {
        if (options?.fields?.includes('viewers')) sketchReads.push(...(filter._id as { in: string[] }).in);
        return projectedStore.find(collection, filter, options);
      },
    };
    const q = makeStatsQueries(watched, { now });
    const top = await q.trending({ hours: 2, limit: 2 });
    assert.deepEqual(top.map((r) => [r.id, r.unique_viewers, r.views]), [['1', 60, 60], ['2', 40, 40]]);
    assert.deepEqual(new Set(sketchReads), new Set(['1:2026-11-22T11', '1:2026-11-22T12']), 'only file 1 (two hours, might rank) is merged');
    const all = await q.trending({ hours: 2, limit: 50 });
    assert.deepEqual(all.slice(0, 3).map((r) => [r.id, r.unique_viewers]), [['1', 60], ['2', 40], ['3', 3]]);
    assert.equal(all.length, 22);
  });
});

describe('stats query API', () => {
  let base = '';
  let stop = async (): Promise<void> => {};
  before(async () => {
    const served = await listen(makeStatsApp(store, makeLogger('test', 'silent'), { publicBaseUrl: BASE, now }), 0, '127.0.0.1');
    base = `http://127.0.0.1:${served.port}`;
    stop = () => closeServer(served.server, 100);
  });
  after(() => stop());

  const get = async (path: string, user = 1): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(`${base}/api/V1/stats/${path}`, { headers: { [IDENTITY_HEADER]: String(user) } });
    return { status: res.status, body: await res.json() as Record<string, unknown> };
  };

  it('answers each endpoint in the spec\'s envelope, with the defaults, ignoring unknown parameters', async () => {
    const daily = await get('api-daily?from=2026-11-21&to=2026-11-22&x=1');
    assert.equal(daily.status, 200);
    assert.deepEqual(daily.body, {
      status: 'success', timezone: 'UTC', from: '2026-11-21', to: '2026-11-22',
      days: [
        { date: '2026-11-21', views: 0, unique_viewers: 0, downloads: 2, unique_downloaders: 1, sales: 0, comments: 0 },
        { date: '2026-11-22', views: 44, unique_viewers: 20, downloads: 0, unique_downloaders: 0, sales: 0, comments: 0 },
      ],
      totals: { views: 44, unique_viewers: 20, downloads: 2, unique_downloaders: 1, sales: 0, comments: 0 },
    });
    const top = await get('api-top?unknown=yes');
    assert.deepEqual(top, { status: 200, body: { status: 'success', results: [
      { id: '13', title: 'thirteen', link: `${BASE}/docs/13`, value: 20 },
      { id: '10', title: 'ten', link: `${BASE}/docs/10`, value: 8 },
      { id: '11', title: 'eleven', link: `${BASE}/docs/11`, value: 1 },
    ] } });
    const trending = await get('api-trending?category_id=4&limit=1', 2);
    assert.deepEqual(trending, { status: 200, body: { status: 'success', results: [
      { id: '10', title: 'ten', link: `${BASE}/docs/10`, category: 'Maths', unique_viewers: 3, views: 3 },
    ] } });
  });

  it('api-daily of one\'s own file; another\'s, unknown or deleted: 404 File not found', async () => {
    const own = await get('api-daily?from=2026-11-20&to=2026-11-20&file_id=10');
    assert.equal(own.status, 200);
    assert.equal((own.body.totals as { views: number }).views, 5);
    for (const id of [12, 99, 14]) assert.deepEqual(await get(`api-daily?from=2026-11-20&to=2026-11-20&file_id=${id}`), { status: 404, body: { status: 'error', message: M.fileNotFound } });
  });

  it('a range of 366 days is answered, every day present; 367 is refused', async () => {
    const year = await get('api-daily?from=2024-01-01&to=2024-12-31');
    assert.equal(year.status, 200);
    const days = year.body.days as { date: string }[];
    assert.equal(days.length, 366);
    assert.deepEqual([days[0]?.date, days[59]?.date, days[365]?.date], ['2024-01-01', '2024-02-29', '2024-12-31']);
    assert.deepEqual(await get('api-daily?from=2024-01-01&to=2025-01-01'), { status: 400, body: { status: 'error', message: M.rangeTooLong } });
  });

  const refused: [string, string][] = [
    ['api-daily?to=2026-11-20', M.invalidFrom],
    ['api-daily?from=&to=2026-11-20', M.invalidFrom],
    ['api-daily?from=2026-02-30&to=2026-03-01', M.invalidFrom],
    ['api-daily?from=2026-1-01&to=2026-03-01', M.invalidFrom],
    ['api-daily?from=2026-11-20&from=2026-11-21&to=2026-11-22', M.invalidFrom],
    ['api-daily?from=2026-11-20', M.invalidTo],
    ['api-daily?from=2026-11-20&to=20261121', M.invalidTo],
    ['api-daily?from=2026-11-21&to=2026-11-20', M.fromAfterTo],
    ['api-daily?from=2000-01-01&to=2026-11-20', M.rangeTooLong],
    ['api-daily?from=2026-11-20&to=2026-11-20&file_id=0', M.invalidFileId],
    ['api-daily?from=2026-11-20&to=2026-11-20&file_id=1.5', M.invalidFileId],
    ['api-daily?from=2026-11-20&to=2026-11-20&file_id=abc', M.invalidFileId],
    ['api-daily?from=2026-11-20&to=2026-11-20&file_id=10&file_id=11', M.invalidFileId],
    ['api-top?metric=clicks', M.invalidMetric],
    ['api-top?metric=VIEWS', M.invalidMetric],
    ['api-top?metric=views&metric=sales', M.invalidMetric],
    ['api-top?days=0', M.invalidDays],
    ['api-top?days=91', M.invalidDays],
    ['api-top?days=-1', M.invalidDays],
    ['api-top?days=7.0', M.invalidDays],
    ['api-top?limit=0', M.invalidLimit],
    ['api-top?limit=51', M.invalidLimit],
    ['api-top?limit=%201', M.invalidLimit],
    ['api-trending?hours=0', M.invalidHours],
    ['api-trending?hours=169', M.invalidHours],
    ['api-trending?hours=1e2', M.invalidHours],
    ['api-trending?category_id=0', M.invalidCategoryId],
    ['api-trending?category_id=x', M.invalidCategoryId],
    ['api-trending?category_id=1&category_id=2', M.invalidCategoryId],
    ['api-trending?limit=100', M.invalidLimit],
  ];
  for (const [path, message] of refused) {
    it(`400 ${message}: ${path}`, async () => {
      assert.deepEqual(await get(path), { status: 400, body: { status: 'error', message } });
    });
  }

  it('the edges of each range are accepted', async () => {
    for (const path of ['api-top?days=1&limit=1', 'api-top?days=90&limit=50&metric=comments', 'api-trending?hours=1&limit=50', 'api-trending?hours=168&limit=1']) {
      assert.equal((await get(path)).status, 200, path);
    }
  });
});
