// GET /api/V1/users/api-files (spec §4.6, decisions §9, docs/api-decisions.md paging/visibility).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertDate, assertInt, assertKeys, expectError, expectSuccess, utcDate } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { eventually } from '../support/wait.ts';

const fx = useServer();

type Item = { file_id: number; upload_date: string; title: string; description: string; file_url: string };

async function listIds(token: string, query = ''): Promise<number[]> {
  return (expectSuccess(await fx.c.files(token, query), 200).files as Item[]).map((f) => f.file_id);
}

describe('files of a user', () => {
  it('without user_id lists the caller: user {id, name} and items with exactly file_id, upload_date, title, description, file_url', async () => {
    const { c, server } = fx;
    const u = await c.register({ name: 'Grace Hopper' });
    const day0 = utcDate();
    const { fileId } = await c.uploadOk(u.token, { title: 'Compilers', description: 'On compilers' });
    const body = await eventually(async () => {
      const b = expectSuccess(await c.files(u.token), 200);
      assert.equal(b.files.length, 1);
      return b;
    });
    const day1 = utcDate();
    assertKeys(body, ['status', 'user', 'files', 'total', 'page', 'per_page'], 'file list body');
    assertKeys(body.user, ['id', 'name'], 'user');
    assertInt(body.user.id, 'user.id');
    assert.equal(body.user.id, u.userId);
    assert.equal(body.user.name, 'Grace Hopper');
    assert.equal(body.total, 1);
    assert.equal(body.page, 1);
    assert.equal(body.per_page, 20);
    const item = body.files[0] as Item;
    assertKeys(item, ['file_id', 'upload_date', 'title', 'description', 'file_url'], 'file list item');
    assertInt(item.file_id, 'file_id');
    assert.equal(item.file_id, Number(fileId));
    assertDate(item.upload_date, 'upload_date');
    assert.ok(item.upload_date === day0 || item.upload_date === day1, `upload_date ${item.upload_date} must be today in UTC`);
    assert.equal(item.title, 'Compilers');
    assert.equal(item.description, 'On compilers');
    assert.equal(item.file_url, `${server.baseUrl}/docs/${fileId}`);
  });

  it('an empty user_id counts as absent: the caller is listed', async () => {
    const u = await fx.c.register();
    assert.equal(expectSuccess(await fx.c.files(u.token, 'user_id='), 200).user.id, u.userId);
  });

  it('with user_id lists that user, as user_id number in the query', async () => {
    const { c } = fx;
    const a = await c.register({ name: 'Alan Turing' });
    const b = await c.register();
    const { fileId } = await c.uploadOk(a.token);
    await eventually(async () => {
      const body = expectSuccess(await c.files(b.token, `user_id=${a.userId}`), 200);
      assert.deepEqual(body.user, { id: a.userId, name: 'Alan Turing' });
      assert.deepEqual(body.files.map((f: Item) => f.file_id), [Number(fileId)]);
    });
  });

  it('a user with no files: success with an empty list', async () => {
    const { c } = fx;
    const a = await c.register();
    const b = await c.register();
    // Another user sees a's registration once it is projected (no consistency token carries it to b).
    const body = await eventually(async () => expectSuccess(await c.files(b.token, `user_id=${a.userId}`), 200));
    assert.deepEqual(body.files, []);
    assert.equal(body.total, 0);
  });

  it('lists newest first', async () => {
    const { c } = fx;
    const u = await c.register();
    const ids: number[] = [];
    for (let i = 0; i < 4; i += 1) ids.push(Number((await c.uploadOk(u.token, { title: `n${i}` })).fileId));
    await eventually(async () => assert.deepEqual(await listIds(u.token), [...ids].reverse()));
  });

  it('other users see only enabled files; the owner sees all', async () => {
    const { c } = fx;
    const owner = await c.register();
    const viewer = await c.register();
    const { fileId: shown } = await c.uploadOk(owner.token, { title: 'shown' });
    const { fileId: hidden } = await c.uploadOk(owner.token, { title: 'hidden' });
    const { fileId: selling } = await c.uploadOk(owner.token, { title: 'selling' });
    expectSuccess(await c.update(owner.token, { id: hidden, enabled: false }), 200);
    expectSuccess(await c.update(owner.token, { id: selling, for_sale: true, price: 1 }), 200);
    await eventually(async () => {
      assert.deepEqual(await listIds(viewer.token, `user_id=${owner.userId}`), [Number(selling), Number(shown)]);
      const other = expectSuccess(await c.files(viewer.token, `user_id=${owner.userId}`), 200);
      assert.equal(other.total, 2);
      assert.deepEqual(await listIds(owner.token), [Number(selling), Number(hidden), Number(shown)]);
      assert.deepEqual(await listIds(owner.token, `user_id=${owner.userId}`), [Number(selling), Number(hidden), Number(shown)]);
    });
  });

  it('deleted files are not listed', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId: a } = await c.uploadOk(u.token);
    const { fileId: b } = await c.uploadOk(u.token);
    expectSuccess(await c.del(u.token, a), 200);
    await eventually(async () => assert.deepEqual(await listIds(u.token), [Number(b)]));
  });

  it('shows updated titles and descriptions', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token, { title: 'before', description: 'before d' });
    expectSuccess(await c.update(u.token, { id: fileId, title: 'after', description: 'after d' }), 200);
    await eventually(async () => {
      const f = expectSuccess(await c.files(u.token), 200).files[0] as Item;
      assert.equal(f.title, 'after');
      assert.equal(f.description, 'after d');
    });
  });

  it('an unknown or non-integer user_id → 404 "User not found"', async () => {
    const { c } = fx;
    const u = await c.register();
    for (const id of ['99999999', 'abc', '1.5', '-1', '0', '1e2']) {
      expectError(await c.files(u.token, `user_id=${id}`), 404, 'User not found');
    }
  });

  it('pages with page and per_page', async () => {
    const { c } = fx;
    const u = await c.register();
    const ids: number[] = [];
    for (let i = 0; i < 5; i += 1) ids.push(Number((await c.uploadOk(u.token, { title: `p${i}` })).fileId));
    const newest = [...ids].reverse();
    await eventually(async () => assert.equal((await listIds(u.token)).length, 5));
    const got: number[] = [];
    for (const [page, count] of [[1, 2], [2, 2], [3, 1]] as const) {
      const body = expectSuccess(await c.files(u.token, `page=${page}&per_page=2`), 200);
      assert.equal(body.total, 5);
      assert.equal(body.page, page);
      assert.equal(body.per_page, 2);
      assert.equal(body.files.length, count);
      got.push(...body.files.map((f: Item) => f.file_id));
    }
    assert.deepEqual(got, newest);
    const past = expectSuccess(await c.files(u.token, 'page=9&per_page=2'), 200);
    assert.deepEqual(past.files, []);
    assert.equal(past.total, 5);
    assert.equal(expectSuccess(await c.files(u.token, 'per_page=100'), 200).per_page, 100);
  });

  it('an invalid page → 400 "Invalid page"; an invalid per_page → 400 "Invalid per_page"', async () => {
    const { c } = fx;
    const u = await c.register();
    for (const p of ['0', '-1', 'abc', '1.5']) expectError(await c.files(u.token, `page=${p}`), 400, 'Invalid page');
    for (const p of ['0', '101', 'x', '2.5']) expectError(await c.files(u.token, `per_page=${p}`), 400, 'Invalid per_page');
  });

  it('another method → 405 "Invalid request method"', async () => {
    const u = await fx.c.register();
    expectError(await fx.c.json('POST', '/api/V1/users/api-files', u.token, {}), 405, 'Invalid request method');
    expectError(await fx.c.json('DELETE', '/api/V1/users/api-files', u.token), 405, 'Invalid request method');
  });
});
