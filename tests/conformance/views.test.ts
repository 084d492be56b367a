// A hot file does not serialise the service (issue 21): views and downloads are recorded outside
// the file's stream, so many at once on one file all answer (never 503 "Too many concurrent
// changes"), each counts once, and the file's own commands go on meanwhile.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { daily, dayOf, inParallel, LOAD_CONCURRENCY, range, serverNow, viewAs, type Viewer } from '../support/analytics.ts';
import type { RegisteredUser } from '../support/client.ts';
import { expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { TARGET } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

const SETTLE = { timeoutMs: TARGET === 'distributed' ? 90_000 : 30_000, intervalMs: 100 };
const HOT_VIEWS = 1_200;

const readers: RegisteredUser[] = [];
const fx = useServer({}, async ({ c }) => {
  await inParallel(range(8), 8, async () => { readers.push(await c.register()); });
});

const reader = (i: number): RegisteredUser => readers[i % readers.length] as RegisteredUser;

async function stats(token: string): Promise<{ total_views: number; total_downloads: number; total_comments: number }> {
  return expectSuccess(await fx.c.stats(token), 200).data;
}

/** Today's views of `fileId`, or of all the owner's files, summed over the days the test ran on. */
async function dailyViews(token: string, from: string, fileId?: string): Promise<number> {
  const to = dayOf(await serverNow(fx.c));
  return expectSuccess(await daily(fx.c, token, { from, to, file_id: fileId }), 200).totals.views;
}

describe('one hot file', () => {
  it(`${HOT_VIEWS} concurrent views of one file (signed-in and anonymous) all answer 200, and each counts once`, async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId } = await c.uploadOk(owner.token, { title: 'hot' });
    const from = dayOf(await serverNow(c));
    const statuses = new Map<number, number>();
    await inParallel(range(HOT_VIEWS), LOAD_CONCURRENCY * 2, async (i) => {
      const who: Viewer = i % 2 === 0 ? { token: reader(i).token } : { userAgent: `hot-agent-${i % 40}` };
      const res = await viewAs(c, fileId, who);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    });
    assert.deepEqual([...statuses], [[200, HOT_VIEWS]], 'every view answered 200 (no 503, no conflict)');
    await eventually(async () => assert.equal((await stats(owner.token)).total_views, HOT_VIEWS), SETTLE);
    assert.equal(await dailyViews(owner.token, from, fileId), HOT_VIEWS);
  });

  it('concurrent downloads of one file all answer 200 and each counts once', async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId } = await c.uploadOk(owner.token);
    const statuses = new Map<number, number>();
    await inParallel(range(400), LOAD_CONCURRENCY * 2, async (i) => {
      const res = await c.download(reader(i).token, fileId);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    });
    assert.deepEqual([...statuses], [[200, 400]], 'every download answered 200');
    await eventually(async () => assert.equal((await stats(owner.token)).total_downloads, 400), SETTLE);
  });

  it('the file\'s own commands go on under its view load: updates and comments answer, views keep answering', async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId } = await c.uploadOk(owner.token, { title: 'busy 0' });
    const from = dayOf(await serverNow(c));
    let loading = true;
    let answered = 0;
    const failures: string[] = [];
    const load = inParallel(range(LOAD_CONCURRENCY), LOAD_CONCURRENCY, async (k) => {
      while (loading) {
        const res = await viewAs(c, fileId, { userAgent: `busy-agent-${k}` });
        if (res.status === 200) answered += 1;
        else failures.push(`${res.status} ${res.text.slice(0, 200)}`);
      }
    });
    try {
      for (let n = 1; n <= 10; n += 1) {
        expectSuccess(await c.update(owner.token, { id: fileId, title: `busy ${n}` }), 200);
        expectSuccess(await c.comment(reader(n).token, { file_id: fileId, comment: `under load ${n}` }), 201);
      }
    } finally {
      loading = false;
      await load;
    }
    assert.deepEqual(failures, [], 'no view failed');
    assert.ok(answered > 0, 'the views ran alongside');
    let pageViews = 0;
    await eventually(async () => {
      const page = await viewAs(c, fileId);
      assert.equal(page.status, 200);
      pageViews += 1;
      assert.ok(page.text.includes('busy 10'), 'the page shows the last title');
    }, SETTLE);
    await eventually(async () => {
      const s = await stats(owner.token);
      assert.equal(s.total_views, answered + pageViews);
      assert.equal(s.total_comments, 10);
    }, SETTLE);
    assert.equal(await dailyViews(owner.token, from), answered + pageViews);
  });

  it('views racing a disable: every 200 counts, no 404 does', async () => {
    const { c } = fx;
    const owner = await c.register();
    const { fileId } = await c.uploadOk(owner.token);
    let ok = 0;
    let gone = 0;
    const others: string[] = [];
    let disabled = false;
    const load = inParallel(range(LOAD_CONCURRENCY), LOAD_CONCURRENCY, async (k) => {
      // Each client goes on until it has seen the file disabled (404), so views straddle the update
      // (a bounded while after the disable: a file that never goes is a failure below, not a hang).
      for (let afterDisable = 0; afterDisable < 2_000 && others.length === 0;) {
        const res = await viewAs(c, fileId, k % 2 === 0 ? { token: reader(k).token } : { userAgent: `race-agent-${k}` });
        if (res.status === 200) ok += 1;
        else if (res.status === 404) gone += 1;
        else others.push(`${res.status} ${res.text.slice(0, 200)}`);
        if (disabled && res.status === 404) return;
        if (disabled) afterDisable += 1;
      }
    });
    await eventually(() => ok >= 200, SETTLE);
    expectSuccess(await c.update(owner.token, { id: fileId, enabled: false }), 200);
    disabled = true;
    await load;
    assert.deepEqual(others, [], 'views answer 200 or 404 only');
    assert.ok(gone >= LOAD_CONCURRENCY, 'every client saw the file gone');
    // A view after the disable is answered 404 and counts nothing; the ones before all count.
    await eventually(async () => assert.equal((await stats(owner.token)).total_views, ok), SETTLE);
    assert.equal((await viewAs(c, fileId)).status, 404);
    assert.equal((await stats(owner.token)).total_views, ok);
  });
});
