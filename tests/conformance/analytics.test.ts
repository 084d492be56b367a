// Creator analytics (issue 21): GET /api/V1/stats/api-daily, api-top and api-trending, and the
// views and downloads they count (docs/api-decisions.md: views and viewers; analytics).
// Days are UTC days of the server's clock. Unique counts are exact below 1,024 distinct viewers of
// a file (or owner) per day, so every unique count here is asserted exactly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { M } from '@docshare/contracts';
import {
  addDays, DAY_COUNTERS, daily, dayOf, inParallel, LOAD_CONCURRENCY, range, serverNow, top, trending, viewAs, ZERO_COUNTS,
  type Counts, type Viewer,
} from '../support/analytics.ts';
import type { Json, RegisteredUser, Res } from '../support/client.ts';
import { assertDate, assertIdString, assertInt, assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { TARGET } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

const VIEWERS = 100;
const viewers: RegisteredUser[] = [];
const fx = useServer({}, async ({ c }) => {
  await inParallel(range(VIEWERS), 16, async () => { viewers.push(await c.register()); });
});
/** Projections catch up in milliseconds; a load of a thousand views on the distributed target takes longer. */
const SETTLE = { timeoutMs: TARGET === 'distributed' ? 90_000 : 30_000, intervalMs: 100 };

const viewer = (i: number): RegisteredUser => viewers[i] as RegisteredUser;

/** Views of `fileId`, all answered 200 (a view that is not is a failure of the test, not a count). */
async function viewMany(fileId: string, who: readonly Viewer[]): Promise<void> {
  await inParallel(who, LOAD_CONCURRENCY, async (v) => {
    const res = await viewAs(fx.c, fileId, v);
    assert.equal(res.status, 200, `view of ${fileId}: ${res.status} ${res.text.slice(0, 200)}`);
  });
}

async function downloadMany(fileId: string, tokens: readonly string[]): Promise<void> {
  await inParallel(tokens, LOAD_CONCURRENCY, async (token) => { expectSuccess(await fx.c.download(token, fileId), 200); });
}

/** `times` copies of `item`. */
const times = <T>(item: T, n: number): T[] => Array.from({ length: n }, () => item);

/** Runs `act` and gives the server's UTC days it started and ended on (the same day, unless it spanned midnight). */
async function during(act: () => Promise<void>): Promise<{ from: string; to: string }> {
  const from = dayOf(await serverNow(fx.c));
  await act();
  return { from, to: dayOf(await serverNow(fx.c)) };
}

/** api-daily answered 200 in its envelope, every field checked for shape; the body. */
function dailyBody(res: Res, from: string, to: string): Json {
  const body = expectSuccess(res, 200);
  assertKeys(body, ['status', 'timezone', 'from', 'to', 'days', 'totals'], 'api-daily body');
  assert.equal(body.timezone, 'UTC');
  assert.equal(body.from, from);
  assert.equal(body.to, to);
  assert.ok(Array.isArray(body.days), 'days is a list');
  for (const day of body.days as Json[]) {
    assertKeys(day, ['date', ...DAY_COUNTERS], 'a day');
    assertDate(day.date, 'date');
    for (const k of DAY_COUNTERS) assertInt(day[k], `${day.date}.${k}`);
  }
  assertKeys(body.totals, [...DAY_COUNTERS], 'totals');
  for (const k of DAY_COUNTERS) assertInt(body.totals[k], `totals.${k}`);
  return body;
}

/**
 * The counts over the days of `span` (one day, unless the test ran over midnight, UTC) equal
 * `expected`: exactly when it was one day; across two days views and the like add up exactly,
 * and a viewer on both days is a unique viewer of each (anonymous keys rotate daily).
 */
async function expectCounts(token: string, span: { from: string; to: string }, fileId: string | undefined, expected: Partial<Counts>): Promise<void> {
  const want: Counts = { ...ZERO_COUNTS, ...expected };
  await eventually(async () => {
    const body = dailyBody(await daily(fx.c, token, { from: span.from, to: span.to, file_id: fileId }), span.from, span.to);
    if (span.from === span.to) {
      assert.deepEqual({ ...body.days[0] }, { date: span.from, ...want });
      assert.deepEqual({ ...body.totals }, want);
      return;
    }
    for (const k of ['views', 'downloads', 'sales', 'comments'] as const) assert.equal(body.totals[k], want[k], `totals.${k} over ${span.from}..${span.to}`);
    for (const k of ['unique_viewers', 'unique_downloaders'] as const) {
      assert.ok(body.totals[k] >= want[k] && body.totals[k] <= 2 * want[k], `totals.${k} ${body.totals[k]} over two days, ${want[k]} on one`);
    }
  }, SETTLE);
}

async function totalViews(token: string): Promise<number> {
  return expectSuccess(await fx.c.stats(token), 200).data.total_views;
}

describe('api-daily: views and viewers', () => {
  it('1,000 views of one file by 100 signed-in users: that day views 1000 and unique_viewers 100; api-stats total_views +1000', async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId } = await c.uploadOk(owner.token, { title: 'Viral notes' });
    assert.equal(await totalViews(owner.token), 0);
    const who = range(1000).map((i) => ({ token: viewer(i % VIEWERS).token }));
    const span = await during(() => viewMany(fileId, who));
    await expectCounts(owner.token, span, fileId, { views: 1000, unique_viewers: 100 });
    // The owner's whole account: the same (this is their one file), and the lifetime counter agrees.
    await expectCounts(owner.token, span, undefined, { views: 1000, unique_viewers: 100 });
    await eventually(async () => assert.equal(await totalViews(owner.token), 1000), SETTLE);
    // Settled means settled: a second look finds the same numbers (nothing counted late or twice).
    await expectCounts(owner.token, span, fileId, { views: 1000, unique_viewers: 100 });
    assert.equal(await totalViews(owner.token), 1000);
  });

  it('the owner\'s own views count as views, never as a unique viewer', async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId } = await c.uploadOk(owner.token);
    const span = await during(() => viewMany(fileId, [...times({ token: owner.token }, 3), ...times({ token: viewer(0).token }, 2)]));
    await expectCounts(owner.token, span, fileId, { views: 5, unique_viewers: 1 });
    await eventually(async () => assert.equal(await totalViews(owner.token), 5), SETTLE);
  });

  it('anonymous visitors: two User-Agents are two unique viewers, one User-Agent twice is one', async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId: two } = await c.uploadOk(owner.token, { title: 'two agents' });
    const { fileId: one } = await c.uploadOk(owner.token, { title: 'one agent' });
    const firefox = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
    const chrome = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
    const span = await during(async () => {
      await viewMany(two, [{ userAgent: firefox }, { userAgent: chrome }]);
      await viewMany(one, [{ userAgent: firefox }, { userAgent: firefox }]);
    });
    await expectCounts(owner.token, span, two, { views: 2, unique_viewers: 2 });
    await expectCounts(owner.token, span, one, { views: 2, unique_viewers: 1 });
    // The owner's day: the same visitor on two of their files is one unique viewer of theirs.
    await expectCounts(owner.token, span, undefined, { views: 4, unique_viewers: 2 });
  });

  it('a signed-in viewer and an anonymous one are two viewers; a signed-in viewer is one whatever their User-Agent', async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId } = await c.uploadOk(owner.token);
    const span = await during(() => viewMany(fileId, [
      { token: viewer(1).token, userAgent: 'agent-one' }, { token: viewer(1).token, userAgent: 'agent-two' }, { userAgent: 'agent-one' },
    ]));
    await expectCounts(owner.token, span, fileId, { views: 3, unique_viewers: 2 });
  });

  it('downloads and unique downloaders (the owner\'s count as downloads only), sales and comments', async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId: free } = await c.uploadOk(owner.token, { title: 'free' });
    const { fileId: priced } = await c.uploadOk(owner.token, { title: 'priced' });
    const span = await during(async () => {
      await downloadMany(free, [...times(viewer(0).token, 3), viewer(1).token, ...times(owner.token, 2)]);
      expectSuccess(await c.comment(viewer(2).token, { file_id: free, comment: 'useful' }), 201);
      expectSuccess(await c.comment(viewer(3).token, { file_id: free, comment: 'thanks' }), 201);
      expectSuccess(await c.update(owner.token, { id: priced, for_sale: true, price: 4 }), 200);
      expectSuccess(await c.purchase(viewer(4).token, { file_id: priced }), 201);
      expectSuccess(await c.purchase(viewer(5).token, { file_id: priced }), 201);
      // A repeat purchase is the earlier sale, not a second one.
      expectSuccess(await c.purchase(viewer(4).token, { file_id: priced }), 200);
    });
    await expectCounts(owner.token, span, free, { downloads: 6, unique_downloaders: 2, comments: 2 });
    await expectCounts(owner.token, span, priced, { sales: 2 });
    await expectCounts(owner.token, span, undefined, { downloads: 6, unique_downloaders: 2, comments: 2, sales: 2 });
    await eventually(async () => {
      const stats = expectSuccess(await c.stats(owner.token), 200).data;
      assert.equal(stats.total_downloads, 6);
      assert.equal(stats.total_sales, 2);
      assert.equal(stats.total_comments, 2);
    }, SETTLE);
  });

  it('file_id: the caller\'s own file only; another user\'s, an unknown or a deleted file → 404 File not found', async () => {
    const { c } = fx;
    const owner = await c.register();
    const other = await c.register();
    const { fileId: a } = await c.uploadOk(owner.token, { title: 'a' });
    const { fileId: b } = await c.uploadOk(owner.token, { title: 'b' });
    const { fileId: theirs } = await c.uploadOk(other.token, { title: 'theirs' });
    const span = await during(async () => {
      await viewMany(a, times({ token: viewer(6).token }, 2));
      await viewMany(b, [{ token: viewer(7).token }]);
      await viewMany(theirs, [{ token: viewer(8).token }]);
    });
    await expectCounts(owner.token, span, a, { views: 2, unique_viewers: 1 });
    await expectCounts(owner.token, span, b, { views: 1, unique_viewers: 1 });
    await expectCounts(owner.token, span, undefined, { views: 3, unique_viewers: 2 });
    const today = span.to;
    expectError(await daily(c, owner.token, { from: today, to: today, file_id: theirs }), 404, M.fileNotFound);
    expectError(await daily(c, owner.token, { from: today, to: today, file_id: '999999999' }), 404, M.fileNotFound);
    expectSuccess(await c.del(owner.token, b), 200);
    await eventually(async () => expectError(await daily(c, owner.token, { from: today, to: today, file_id: b }), 404, M.fileNotFound), SETTLE);
    // Its views happened: the owner's days keep counting them (statistics are activity counters).
    await expectCounts(owner.token, span, undefined, { views: 3, unique_viewers: 2 });
  });

  it('every day of the range is present, ascending, zeros included; totals are the days\' sums', async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId } = await c.uploadOk(owner.token);
    await viewMany(fileId, [{ token: viewer(9).token }, { token: viewer(10).token }]);
    const today = dayOf(await serverNow(c));
    const from = addDays(today, -9);
    const to = addDays(today, 3);
    await eventually(async () => {
      const body = dailyBody(await daily(c, owner.token, { from, to }), from, to);
      assert.deepEqual(body.days.map((d: Json) => d.date), range(13).map((i) => addDays(from, i)));
      const viewed = body.days.filter((d: Json) => d.views > 0);
      // Today, or yesterday and today when the test ran over midnight.
      assert.ok(viewed.every((d: Json) => d.date === today || d.date === addDays(today, -1)), JSON.stringify(viewed));
      for (const k of DAY_COUNTERS) assert.equal(body.totals[k], body.days.reduce((sum: number, d: Json) => sum + d[k], 0), `totals.${k}`);
      assert.equal(body.totals.views, 2);
      for (const d of body.days as Json[]) {
        if (d.date > today) assert.deepEqual({ ...d }, { date: d.date, ...ZERO_COUNTS }, 'a day to come has nothing');
      }
    }, SETTLE);
    // A user with no files at all: every day, all zeros.
    const nobody = await c.register();
    const body = dailyBody(await daily(c, nobody.token, { from: today, to: addDays(today, 1) }), today, addDays(today, 1));
    assert.deepEqual(body.days, [{ date: today, ...ZERO_COUNTS }, { date: addDays(today, 1), ...ZERO_COUNTS }]);
    assert.deepEqual(body.totals, ZERO_COUNTS);
  });

  it('at most 366 days: 366 answer (a leap year whole), 367 → 400', async () => {
    const { c } = fx;
    const u = viewer(11);
    const today = dayOf(await serverNow(c));
    const from = addDays(today, -365);
    const body = dailyBody(await daily(c, u.token, { from, to: today }), from, today);
    assert.equal(body.days.length, 366);
    assert.equal(body.days[0].date, from);
    assert.equal(body.days[365].date, today);
    const leap = dailyBody(await daily(c, u.token, { from: '2024-01-01', to: '2024-12-31' }), '2024-01-01', '2024-12-31');
    assert.equal(leap.days.length, 366);
    assert.ok(leap.days.some((d: Json) => d.date === '2024-02-29'));
    expectError(await daily(c, u.token, { from: addDays(today, -366), to: today }), 400, M.rangeTooLong);
    expectError(await daily(c, u.token, { from: '2023-12-31', to: '2024-12-31' }), 400, M.rangeTooLong);
    // One day is a range too.
    assert.equal(dailyBody(await daily(c, u.token, { from: today, to: today }), today, today).days.length, 1);
  });

  it('bad parameters: 400 with the message that names the parameter, in the envelope', async () => {
    const { c } = fx;
    const u = viewer(12);
    const ok = { from: '2025-03-01', to: '2025-03-07' };
    const cases: Array<[Record<string, string | string[] | undefined>, string]> = [
      [{ ...ok, from: undefined }, M.invalidFrom],
      [{ ...ok, from: '' }, M.invalidFrom],
      [{ ...ok, from: '2025-02-30' }, M.invalidFrom],
      [{ ...ok, from: '2025-13-01' }, M.invalidFrom],
      [{ ...ok, from: '2025-3-01' }, M.invalidFrom],
      [{ ...ok, from: '20250301' }, M.invalidFrom],
      [{ ...ok, from: '2025-03-01T00:00:00Z' }, M.invalidFrom],
      [{ ...ok, from: ['2025-03-01', '2025-03-02'] }, M.invalidFrom],
      [{ ...ok, to: undefined }, M.invalidTo],
      [{ ...ok, to: 'today' }, M.invalidTo],
      [{ ...ok, to: '2023-02-29' }, M.invalidTo],
      [{ ...ok, to: ['2025-03-07', '2025-03-08'] }, M.invalidTo],
      [{ from: '2025-03-08', to: '2025-03-07' }, M.fromAfterTo],
      [{ ...ok, file_id: '0' }, M.invalidFileId],
      [{ ...ok, file_id: '-3' }, M.invalidFileId],
      [{ ...ok, file_id: 'abc' }, M.invalidFileId],
      [{ ...ok, file_id: '1.5' }, M.invalidFileId],
      [{ ...ok, file_id: ['1', '2'] }, M.invalidFileId],
    ];
    for (const [query, message] of cases) expectError(await daily(c, u.token, query), 400, message);
    // Unknown parameters are ignored.
    dailyBody(await daily(c, u.token, { ...ok, page: '2', timezone: 'Europe/Paris' }), ok.from, ok.to);
  });

  it('all three need a valid token', async () => {
    const { c } = fx;
    for (const ask of [
      (token?: string) => daily(c, token, { from: '2025-03-01', to: '2025-03-01' }),
      (token?: string) => top(c, token),
      (token?: string) => trending(c, token),
    ]) {
      expectError(await ask(), 401, M.missingToken);
      expectError(await ask('not.a.token'), 401, M.invalidToken);
    }
  });
});

describe('api-top', () => {
  interface Row { id: string; title: string; value: number }
  /** The caller's files ranked: value > 0 only, value descending, then id ascending (as numbers). */
  const ranked = (rows: readonly Row[]): Row[] => rows.filter((r) => r.value > 0)
    .sort((x, y) => y.value - x.value || Number(x.id) - Number(y.id));

  function topBody(res: Res): Row[] {
    const body = expectSuccess(res, 200);
    assertKeys(body, ['status', 'results'], 'api-top body');
    assert.ok(Array.isArray(body.results));
    return (body.results as Json[]).map((r) => {
      assertKeys(r, ['id', 'title', 'link', 'value'], 'a top result');
      assertIdString(r.id, 'id');
      assertInt(r.value, 'value');
      assert.equal(r.link, `${fx.server.baseUrl}/docs/${r.id}`, 'link is the file\'s page');
      return { id: r.id, title: r.title, value: r.value };
    });
  }

  it('ranks the caller\'s files by each metric; files with nothing and deleted files are left out; defaults metric=views days=7 limit=10', async () => {
    const { c } = fx;
    const owner = await c.register();
    const files: Record<'a' | 'b' | 'c' | 'gone' | 'idle', string> = { a: '', b: '', c: '', gone: '', idle: '' };
    for (const name of Object.keys(files) as Array<keyof typeof files>) files[name] = (await c.uploadOk(owner.token, { title: `top ${name}` })).fileId;
    // a: 6 views by one viewer, 1 download. b: 3 views by 3 viewers, 1 comment, 1 sale.
    // c: 2 views (the owner's and one other), 3 downloads, 2 comments. gone: 10 views, then deleted.
    await viewMany(files.a, times({ token: viewer(20).token }, 6));
    await viewMany(files.b, [20, 21, 22].map((i) => ({ token: viewer(i).token })));
    await viewMany(files.c, [{ token: owner.token }, { token: viewer(23).token }]);
    await viewMany(files.gone, range(10).map((i) => ({ token: viewer(30 + i).token })));
    await downloadMany(files.a, [viewer(24).token]);
    await downloadMany(files.c, [20, 21, 22].map((i) => viewer(i).token));
    expectSuccess(await c.comment(viewer(25).token, { file_id: files.b, comment: 'b1' }), 201);
    expectSuccess(await c.comment(viewer(25).token, { file_id: files.c, comment: 'c1' }), 201);
    expectSuccess(await c.comment(viewer(26).token, { file_id: files.c, comment: 'c2' }), 201);
    expectSuccess(await c.update(owner.token, { id: files.b, for_sale: true, price: 2 }), 200);
    expectSuccess(await c.purchase(viewer(27).token, { file_id: files.b }), 201);
    expectSuccess(await c.del(owner.token, files.gone), 200);

    const row = (name: 'a' | 'b' | 'c', value: number): Row => ({ id: files[name], title: `top ${name}`, value });
    const expected: Record<string, Row[]> = {
      views: ranked([row('a', 6), row('b', 3), row('c', 2)]),
      unique_viewers: ranked([row('a', 1), row('b', 3), row('c', 1)]),
      downloads: ranked([row('a', 1), row('b', 0), row('c', 3)]),
      sales: ranked([row('a', 0), row('b', 1), row('c', 0)]),
      comments: ranked([row('a', 0), row('b', 1), row('c', 2)]),
    };
    assert.deepEqual(expected.views?.map((r) => r.title), ['top a', 'top b', 'top c'], 'the case is what it means to be');
    for (const [metric, rows] of Object.entries(expected)) {
      await eventually(async () => assert.deepEqual(topBody(await top(c, owner.token, { metric, days: 1 })), rows, metric), SETTLE);
      assert.deepEqual(topBody(await top(c, owner.token, { metric, days: 90, limit: 50 })), rows, `${metric} over 90 days`);
    }
    assert.deepEqual(topBody(await top(c, owner.token)), expected.views, 'defaults');
    assert.deepEqual(topBody(await top(c, owner.token, { metric: 'downloads', limit: 1 })), expected.downloads?.slice(0, 1), 'limit');
    // Another user's top holds their own files only (a viewer here owns none).
    assert.deepEqual(topBody(await top(c, viewer(20).token, { metric: 'views' })), []);
  });

  it('bad parameters: 400 with the message that names the parameter; unknown ones are ignored', async () => {
    const { c } = fx;
    const u = viewer(12);
    const cases: Array<[Record<string, string | string[]>, string]> = [
      [{ metric: 'clicks' }, M.invalidMetric],
      [{ metric: ['views', 'views'] }, M.invalidMetric],
      [{ days: '0' }, M.invalidDays],
      [{ days: '91' }, M.invalidDays],
      [{ days: 'week' }, M.invalidDays],
      [{ days: '1.5' }, M.invalidDays],
      [{ days: ['1', '2'] }, M.invalidDays],
      [{ limit: '0' }, M.invalidLimit],
      [{ limit: '51' }, M.invalidLimit],
      [{ limit: 'ten' }, M.invalidLimit],
      [{ limit: '-1' }, M.invalidLimit],
    ];
    for (const [query, message] of cases) expectError(await top(c, u.token, query), 400, message);
    for (const metric of ['views', 'unique_viewers', 'downloads', 'sales', 'comments']) {
      topBody(await top(c, u.token, { metric, days: 90, limit: 50 }));
      topBody(await top(c, u.token, { metric, days: 1, limit: 1 }));
    }
    topBody(await top(c, u.token, { page: 3, sort: 'asc' }));
  });
});

describe('api-trending', () => {
  interface Trend { id: string; title: string; category: string; unique_viewers: number; views: number }

  function trendingBody(res: Res): Trend[] {
    const body = expectSuccess(res, 200);
    assertKeys(body, ['status', 'results'], 'api-trending body');
    assert.ok(Array.isArray(body.results));
    return (body.results as Json[]).map((r) => {
      assertKeys(r, ['id', 'title', 'link', 'category', 'unique_viewers', 'views'], 'a trending result');
      assertIdString(r.id, 'id');
      assertInt(r.unique_viewers, 'unique_viewers');
      assertInt(r.views, 'views');
      assert.equal(r.link, `${fx.server.baseUrl}/docs/${r.id}`, 'link is the file\'s page');
      return { id: r.id, title: r.title, category: r.category, unique_viewers: r.unique_viewers, views: r.views };
    });
  }

  it('ranks by unique viewers, then views: 500 views by one viewer rank below one view by each of 50; any user\'s files; category_id filters; disabled and deleted files never appear', async () => {
    const { c } = fx;
    const alice = await c.register();
    const bob = await c.register();
    const category = `Trending ${Date.now()} ${Math.random().toString(36).slice(2, 8)}`;
    const first = await c.uploadOk(alice.token, { title: 'one viewer, 500 views', new_category_name: category });
    const categoryId = String(first.res.body.category_id);
    const inCategory = { category_id: categoryId, new_category_name: undefined };
    const hammered = first.fileId;
    const { fileId: popular } = await c.uploadOk(bob.token, { title: 'fifty viewers', ...inCategory });
    const { fileId: tieMore } = await c.uploadOk(alice.token, { title: 'two viewers, three views', ...inCategory });
    const { fileId: tieLess } = await c.uploadOk(bob.token, { title: 'two viewers, two views', ...inCategory });
    const { fileId: disabled } = await c.uploadOk(alice.token, { title: 'disabled', ...inCategory });
    const { fileId: deleted } = await c.uploadOk(bob.token, { title: 'deleted', ...inCategory });
    const { fileId: elsewhere } = await c.uploadOk(alice.token, { title: 'another category', new_category_name: `${category} (other)` });

    await viewMany(hammered, times({ token: viewer(40).token }, 500));
    await viewMany(popular, range(50).map((i) => ({ token: viewer(41 + i).token })));
    await viewMany(tieMore, [{ token: viewer(40).token }, { token: viewer(40).token }, { userAgent: 'tie-agent' }]);
    await viewMany(tieLess, [{ token: viewer(41).token }, { userAgent: 'tie-agent' }]);
    // Many viewers each, which would put them first: neither may ever show.
    await viewMany(disabled, range(60).map((i) => ({ userAgent: `disabled-agent-${i}` })));
    await viewMany(deleted, range(60).map((i) => ({ userAgent: `deleted-agent-${i}` })));
    await viewMany(elsewhere, range(55).map((i) => ({ userAgent: `elsewhere-agent-${i}` })));
    expectSuccess(await c.update(alice.token, { id: disabled, enabled: false }), 200);
    expectSuccess(await c.del(bob.token, deleted), 200);

    const expected: Trend[] = [
      { id: popular, title: 'fifty viewers', category, unique_viewers: 50, views: 50 },
      { id: tieMore, title: 'two viewers, three views', category, unique_viewers: 2, views: 3 },
      { id: tieLess, title: 'two viewers, two views', category, unique_viewers: 2, views: 2 },
      { id: hammered, title: 'one viewer, 500 views', category, unique_viewers: 1, views: 500 },
    ];
    const asker = viewer(99).token;
    await eventually(async () => assert.deepEqual(trendingBody(await trending(c, asker, { category_id: categoryId, hours: 2 })), expected), SETTLE);
    assert.deepEqual(trendingBody(await trending(c, asker, { category_id: categoryId })), expected, 'default hours (24)');
    assert.deepEqual(trendingBody(await trending(c, asker, { category_id: categoryId, hours: 168, limit: 2 })), expected.slice(0, 2), 'limit');

    // Without the filter: every user's files, the other category's among them; never the disabled or deleted ones.
    const all = trendingBody(await trending(c, asker, { hours: 2, limit: 50 }));
    const ids = all.map((r) => r.id);
    assert.ok(ids.includes(elsewhere) && ids.includes(popular), `both categories: ${JSON.stringify(all.slice(0, 10))}`);
    assert.ok(!ids.includes(disabled), 'a disabled file never trends');
    assert.ok(!ids.includes(deleted), 'a deleted file never trends');
    assert.ok(ids.indexOf(popular) < ids.indexOf(hammered), 'fifty viewers before one');
    for (let i = 1; i < all.length; i += 1) {
      const [x, y] = [all[i - 1] as Trend, all[i] as Trend];
      assert.ok(x.unique_viewers > y.unique_viewers || (x.unique_viewers === y.unique_viewers && (x.views > y.views || (x.views === y.views && Number(x.id) < Number(y.id)))),
        `ranked: ${JSON.stringify(x)} before ${JSON.stringify(y)}`);
    }
    assert.deepEqual(all.find((r) => r.id === elsewhere), { id: elsewhere, title: 'another category', category: `${category} (other)`, unique_viewers: 55, views: 55 });

    // Enabled again, the disabled file trends with the views it had.
    expectSuccess(await c.update(alice.token, { id: disabled, enabled: true }), 200);
    await eventually(async () => assert.deepEqual(trendingBody(await trending(c, asker, { category_id: categoryId, hours: 2, limit: 1 })),
      [{ id: disabled, title: 'disabled', category, unique_viewers: 60, views: 60 }]), SETTLE);
  });

  it('a category with nothing viewed trends nothing', async () => {
    const { c } = fx;
    const owner = await c.register();
    const up = await c.uploadOk(owner.token, { new_category_name: `Quiet ${Date.now()} ${Math.random().toString(36).slice(2, 8)}` });
    assert.deepEqual(trendingBody(await trending(c, owner.token, { category_id: String(up.res.body.category_id) })), []);
  });

  it('bad parameters: 400 with the message that names the parameter; unknown ones are ignored', async () => {
    const { c } = fx;
    const u = viewer(12);
    const cases: Array<[Record<string, string | string[]>, string]> = [
      [{ hours: '0' }, M.invalidHours],
      [{ hours: '169' }, M.invalidHours],
      [{ hours: 'day' }, M.invalidHours],
      [{ hours: '2.5' }, M.invalidHours],
      [{ hours: ['1', '2'] }, M.invalidHours],
      [{ category_id: '0' }, M.invalidCategoryId],
      [{ category_id: 'books' }, M.invalidCategoryId],
      [{ category_id: '-2' }, M.invalidCategoryId],
      [{ category_id: ['1', '2'] }, M.invalidCategoryId],
      [{ limit: '0' }, M.invalidLimit],
      [{ limit: '51' }, M.invalidLimit],
      [{ limit: 'x' }, M.invalidLimit],
    ];
    for (const [query, message] of cases) expectError(await trending(c, u.token, query), 400, message);
    trendingBody(await trending(c, u.token, { hours: 1, limit: 1 }));
    trendingBody(await trending(c, u.token, { hours: 168, limit: 50 }));
    trendingBody(await trending(c, u.token, { category_id: '999999999' }));
    trendingBody(await trending(c, u.token, { sort: 'views' }));
  });
});
