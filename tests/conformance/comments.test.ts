// POST /api/V1/docs/api-comment and POST /api/V1/users/api-comments (spec §4.7, decisions §10).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RegisteredUser } from '../support/client.ts';
import { assertDate, assertInt, assertKeys, expectError, expectSuccess, utcDate } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { eventually } from '../support/wait.ts';

let owner: RegisteredUser;
let fan: RegisteredUser;
const fx = useServer({}, async () => {
  owner = await fx.c.register();
  fan = await fx.c.register();
});

type Comment = { comment_id: number; submission_date: string; title: string; comment: string; link: string };

async function received(token: string): Promise<Comment[]> {
  return expectSuccess(await fx.c.comments(token), 200).data as Comment[];
}

describe('post a comment', () => {
  it('201 "Comment posted successfully" with an integer comment_id', async () => {
    const { fileId } = await fx.c.uploadOk(owner.token);
    const res = await fx.c.comment(fan.token, { file_id: fileId, comment: 'Very useful, thanks!' });
    const body = expectSuccess(res, 201);
    assertKeys(body, ['status', 'message', 'comment_id'], 'comment body');
    assert.equal(body.message, 'Comment posted successfully');
    assertInt(body.comment_id, 'comment_id');
  });

  it('accepts file_id as a number', async () => {
    const { fileId } = await fx.c.uploadOk(owner.token);
    expectSuccess(await fx.c.comment(fan.token, { file_id: Number(fileId), comment: 'numeric id' }), 201);
  });

  it('accepts 5000 characters; over 5000 → 400 "Comment is too long"', async () => {
    const { fileId } = await fx.c.uploadOk(owner.token);
    expectSuccess(await fx.c.comment(fan.token, { file_id: fileId, comment: 'c'.repeat(5000) }), 201);
    expectError(await fx.c.comment(fan.token, { file_id: fileId, comment: 'c'.repeat(5001) }), 400, 'Comment is too long');
  });

  it('a missing, blank or non-string comment → 400 "Comment is required"', async () => {
    const { fileId } = await fx.c.uploadOk(owner.token);
    for (const body of [{ file_id: fileId }, { file_id: fileId, comment: '' }, { file_id: fileId, comment: '  \n ' }, { file_id: fileId, comment: 7 }]) {
      expectError(await fx.c.comment(fan.token, body), 400, 'Comment is required');
    }
  });

  it('a missing file_id → 400 "File ID is required" (checked before the comment)', async () => {
    expectError(await fx.c.comment(fan.token, { comment: 'hello' }), 400, 'File ID is required');
    expectError(await fx.c.comment(fan.token, { file_id: '', comment: 'hello' }), 400, 'File ID is required');
    expectError(await fx.c.comment(fan.token, {}), 400, 'File ID is required');
  });

  it('an unknown, malformed, deleted or (for others) disabled file → 404 "File not found"', async () => {
    const { c } = fx;
    for (const id of ['99999999', 'abc', '0']) expectError(await c.comment(fan.token, { file_id: id, comment: 'x' }), 404, 'File not found');
    const { fileId: deleted } = await c.uploadOk(owner.token);
    expectSuccess(await c.del(owner.token, deleted), 200);
    await eventually(async () => expectError(await c.comment(fan.token, { file_id: deleted, comment: 'x' }), 404, 'File not found'));
    const { fileId: disabled } = await c.uploadOk(owner.token);
    expectSuccess(await c.update(owner.token, { id: disabled, enabled: false }), 200);
    await eventually(async () => expectError(await c.comment(fan.token, { file_id: disabled, comment: 'x' }), 404, 'File not found'));
  });

  it('malformed JSON → 400 "Malformed JSON"; another method → 405', async () => {
    expectError(await fx.c.json('POST', '/api/V1/docs/api-comment', fan.token, undefined, { raw: '{"file_id"', headers: { 'Content-Type': 'application/json' } }), 400, 'Malformed JSON');
    expectError(await fx.c.json('GET', '/api/V1/docs/api-comment', fan.token), 405, 'Invalid request method');
  });
});

describe('comments received', () => {
  it('a new user: 200 with an empty data array', async () => {
    const u = await fx.c.register();
    const body = expectSuccess(await fx.c.comments(u.token), 200);
    assertKeys(body, ['status', 'data', 'total', 'page', 'per_page'], 'comments body');
    assert.deepEqual(body.data, []);
    assert.deepEqual([body.total, body.page, body.per_page], [0, 1, 100]);
  });

  it('a posted comment appears in the owner\'s list with the file title and a link to its page; total_comments +1', async () => {
    const { c, server } = fx;
    const u = await c.register();
    const { fileId } = await c.uploadOk(u.token, { title: 'Commentable <b>doc</b>' });
    const day0 = utcDate();
    const posted = expectSuccess(await c.comment(fan.token, { file_id: fileId, comment: '  Great <i>work</i> & "thanks"  ' }), 201);
    const list = await eventually(async () => {
      const l = await received(u.token);
      assert.equal(l.length, 1);
      return l;
    });
    const day1 = utcDate();
    const item = list[0] as Comment;
    assertKeys(item, ['comment_id', 'submission_date', 'title', 'comment', 'link'], 'comment item');
    assertInt(item.comment_id, 'comment_id');
    assert.equal(item.comment_id, posted.comment_id);
    assertDate(item.submission_date, 'submission_date');
    assert.ok(item.submission_date === day0 || item.submission_date === day1, `submission_date ${item.submission_date} must be today (UTC)`);
    assert.equal(item.title, 'Commentable <b>doc</b>');
    assert.equal(item.comment, 'Great <i>work</i> & "thanks"', 'stored trimmed and returned verbatim');
    assert.equal(item.link, `${server.baseUrl}/docs/${fileId}`);
    await eventually(async () => assert.equal(expectSuccess(await c.stats(u.token), 200).data.total_comments, 1));
    // The commenter receives nothing.
    const fanList = await received(fan.token);
    assert.ok(!fanList.some((x) => x.comment_id === posted.comment_id));
  });

  it('lists comments across the caller\'s files, newest first, and only those', async () => {
    const { c } = fx;
    const u = await c.register();
    const v = await c.register();
    const { fileId: f1 } = await c.uploadOk(u.token, { title: 'one' });
    const { fileId: f2 } = await c.uploadOk(u.token, { title: 'two' });
    const { fileId: g1 } = await c.uploadOk(v.token, { title: 'elsewhere' });
    const ids: number[] = [];
    ids.push(expectSuccess(await c.comment(fan.token, { file_id: f1, comment: 'c1' }), 201).comment_id);
    ids.push(expectSuccess(await c.comment(v.token, { file_id: f2, comment: 'c2' }), 201).comment_id);
    ids.push(expectSuccess(await c.comment(u.token, { file_id: f1, comment: 'c3' }), 201).comment_id);
    expectSuccess(await c.comment(u.token, { file_id: g1, comment: 'not for u' }), 201);
    await eventually(async () => {
      const l = await received(u.token);
      assert.deepEqual(l.map((x) => x.comment_id), [...ids].reverse());
      assert.deepEqual(l.map((x) => [x.title, x.comment]), [['one', 'c3'], ['two', 'c2'], ['one', 'c1']]);
      assert.equal(expectSuccess(await c.stats(u.token), 200).data.total_comments, 3);
    });
    await eventually(async () => assert.deepEqual((await received(v.token)).map((x) => x.comment), ['not for u']));
  });

  it('pages with page / per_page from the query string or a JSON body; total counts comments on live files only', async () => {
    const { c } = fx;
    const u = await c.register();
    const { fileId: kept } = await c.uploadOk(u.token, { title: 'kept' });
    const { fileId: gone } = await c.uploadOk(u.token, { title: 'gone' });
    const ids: number[] = [];
    for (let i = 1; i <= 5; i += 1) ids.push(expectSuccess(await c.comment(fan.token, { file_id: kept, comment: `c${i}` }), 201).comment_id);
    for (let i = 1; i <= 3; i += 1) expectSuccess(await c.comment(fan.token, { file_id: gone, comment: `x${i}` }), 201);
    expectSuccess(await c.del(u.token, gone), 200);
    const newest = [...ids].reverse();
    await eventually(async () => {
      const whole = expectSuccess(await c.comments(u.token), 200);
      assert.deepEqual(whole.data.map((x: Comment) => x.comment_id), newest, 'by default a short list comes whole');
      assert.deepEqual([whole.total, whole.page, whole.per_page], [5, 1, 100]);
    });
    const path = '/api/V1/users/api-comments';
    const second = expectSuccess(await c.json('POST', `${path}?page=2&per_page=2`, u.token), 200);
    assert.deepEqual(second.data.map((x: Comment) => x.comment_id), newest.slice(2, 4));
    assert.deepEqual([second.total, second.page, second.per_page], [5, 2, 2]);
    const third = expectSuccess(await c.json('POST', path, u.token, { page: 3, per_page: '2' }), 200);
    assert.deepEqual(third.data.map((x: Comment) => x.comment_id), newest.slice(4));
    assert.deepEqual([third.total, third.page, third.per_page], [5, 3, 2]);
    // A JSON body's value wins over the query string's.
    const bodyWins = expectSuccess(await c.json('POST', `${path}?per_page=1`, u.token, { per_page: 4 }), 200);
    assert.equal(bodyWins.data.length, 4);
    const past = expectSuccess(await c.json('POST', `${path}?page=9`, u.token), 200);
    assert.deepEqual([past.data, past.total], [[], 5]);
  });

  it('an invalid page or per_page → 400 "Invalid page" / "Invalid per_page"', async () => {
    const path = '/api/V1/users/api-comments';
    for (const q of ['page=0', 'page=-1', 'page=abc', 'page=1.5']) {
      expectError(await fx.c.json('POST', `${path}?${q}`, owner.token), 400, 'Invalid page');
    }
    for (const q of ['per_page=0', 'per_page=101', 'per_page=x']) {
      expectError(await fx.c.json('POST', `${path}?${q}`, owner.token), 400, 'Invalid per_page');
    }
    expectError(await fx.c.json('POST', path, owner.token, { page: 'first' }), 400, 'Invalid page');
    expectError(await fx.c.json('POST', path, owner.token, { per_page: 500 }), 400, 'Invalid per_page');
  });

  it('another method → 405 "Invalid request method"', async () => {
    expectError(await fx.c.json('GET', '/api/V1/users/api-comments', fan.token), 405, 'Invalid request method');
  });
});
