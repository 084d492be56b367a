// POST /api/V1/stats/api-stats (spec §4.5, decisions §8).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertInt, assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { eventually } from '../support/wait.ts';

const fx = useServer();

type Stats = { total_comments: number; total_files: number; total_views: number; total_downloads: number; total_sales: number };
const ZERO: Stats = { total_comments: 0, total_files: 0, total_views: 0, total_downloads: 0, total_sales: 0 };

async function stats(token: string): Promise<Stats> {
  return expectSuccess(await fx.c.stats(token), 200).data as Stats;
}

describe('stats', () => {
  it('a new user: 200 with data holding exactly the five integer counters, all 0', async () => {
    const u = await fx.c.register();
    const res = await fx.c.stats(u.token);
    const body = expectSuccess(res, 200);
    assertKeys(body, ['status', 'data'], 'stats body');
    assertKeys(body.data, ['total_comments', 'total_files', 'total_views', 'total_downloads', 'total_sales'], 'stats data');
    for (const [k, v] of Object.entries(body.data)) assertInt(v, k);
    assert.deepEqual(body.data, ZERO);
  });

  it('counts files, views, downloads, sales and comments of the caller\'s files', async () => {
    const { c } = fx;
    const owner = await c.register();
    const fan = await c.register();
    const { fileId: f1 } = await c.uploadOk(owner.token, { title: 'first' });
    await eventually(async () => assert.deepEqual(await stats(owner.token), { ...ZERO, total_files: 1 }));
    const { fileId: f2 } = await c.uploadOk(owner.token, { title: 'second' });
    await eventually(async () => assert.deepEqual(await stats(owner.token), { ...ZERO, total_files: 2 }));

    expectSuccess(await c.download(fan.token, f1), 200);
    await eventually(async () => assert.deepEqual(await stats(owner.token), { ...ZERO, total_files: 2, total_downloads: 1 }));

    assert.equal((await c.view(f1)).status, 200);
    await eventually(async () => assert.deepEqual(await stats(owner.token), { ...ZERO, total_files: 2, total_downloads: 1, total_views: 1 }));
    assert.equal((await c.view(f2)).status, 200);
    await eventually(async () => assert.equal((await stats(owner.token)).total_views, 2));

    expectSuccess(await c.comment(fan.token, { file_id: f2, comment: 'great' }), 201);
    await eventually(async () => assert.equal((await stats(owner.token)).total_comments, 1));

    expectSuccess(await c.update(owner.token, { id: f2, for_sale: true, price: 3 }), 200);
    expectSuccess(await c.purchase(fan.token, { file_id: f2 }), 201);
    await eventually(async () => assert.equal((await stats(owner.token)).total_sales, 1));

    const expected: Stats = { total_comments: 1, total_files: 2, total_views: 2, total_downloads: 1, total_sales: 1 };
    assert.deepEqual(await stats(owner.token), expected);
    // The fan's own stats are untouched by their activity on someone else's files.
    assert.deepEqual(await stats(fan.token), ZERO);

    // Deleting a file lowers total_files only.
    expectSuccess(await c.del(owner.token, f2), 200);
    await eventually(async () => assert.deepEqual(await stats(owner.token), { ...expected, total_files: 1 }));
  });

  it('answers without a body and ignores any body sent', async () => {
    const u = await fx.c.register();
    expectSuccess(await fx.c.json('POST', '/api/V1/stats/api-stats', u.token), 200);
    expectSuccess(await fx.c.json('POST', '/api/V1/stats/api-stats', u.token, { anything: true }), 200);
  });

  it('another method → 405 "Invalid request method"', async () => {
    const u = await fx.c.register();
    expectError(await fx.c.json('GET', '/api/V1/stats/api-stats', u.token), 405, 'Invalid request method');
    expectError(await fx.c.json('PUT', '/api/V1/stats/api-stats', u.token, {}), 405, 'Invalid request method');
  });
});
