// DELETE /api/V1/docs/api-delete (spec §4.3, decisions §6).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { randomWord, type RegisteredUser } from '../support/client.ts';
import { assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { storedBytesContaining } from '../support/datadir.ts';
import { useServer } from '../support/fixture.ts';
import { localOnly } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

let owner: RegisteredUser;
let other: RegisteredUser;
const fx = useServer({}, async () => {
  owner = await fx.c.register();
  other = await fx.c.register();
});

describe('delete', () => {
  it('deletes: 200 "File deleted successfully", and the file leaves downloads, search, lists, stats, view page and comments', async () => {
    const { c } = fx;
    const u = await c.register();
    const word = randomWord(12);
    const { fileId } = await c.uploadOk(u.token, { title: `Doomed ${word}` }, randomBytes(64));
    const { fileId: keptId } = await c.uploadOk(u.token, { title: `Kept ${word}` });
    expectSuccess(await c.comment(other.token, { file_id: fileId, comment: 'on the doomed file' }), 201);
    expectSuccess(await c.comment(other.token, { file_id: keptId, comment: 'on the kept file' }), 201);
    const url = expectSuccess(await c.download(other.token, fileId), 200).download_url as string;
    await eventually(async () => {
      const s = expectSuccess(await c.search(u.token, { search: word }), 200);
      assert.equal(s.results.length, 2);
      const st = expectSuccess(await c.stats(u.token), 200).data;
      assert.deepEqual(st, { total_comments: 2, total_files: 2, total_views: 0, total_downloads: 1, total_sales: 0 });
      assert.equal(expectSuccess(await c.comments(u.token), 200).data.length, 2);
    });

    const res = await c.del(u.token, fileId);
    const body = expectSuccess(res, 200);
    assertKeys(body, ['status', 'message'], 'delete body');
    assert.equal(body.message, 'File deleted successfully');

    await eventually(async () => {
      expectError(await c.download(u.token, fileId), 404, 'File not found');
      expectError(await c.download(other.token, fileId), 404, 'File not found');
      const s = expectSuccess(await c.search(u.token, { search: word }), 200);
      assert.deepEqual(s.results.map((r: { id: string }) => r.id), [keptId]);
      const mine = expectSuccess(await c.files(u.token), 200).files.map((f: { file_id: number }) => f.file_id);
      assert.deepEqual(mine, [Number(keptId)]);
      const theirs = expectSuccess(await c.files(other.token, `user_id=${u.userId}`), 200).files.map((f: { file_id: number }) => f.file_id);
      assert.deepEqual(theirs, [Number(keptId)]);
      // total_files drops; the activity counters keep what happened.
      const st = expectSuccess(await c.stats(u.token), 200).data;
      assert.deepEqual(st, { total_comments: 2, total_files: 1, total_views: 0, total_downloads: 1, total_sales: 0 });
      // Comments on the deleted file leave the owner's list.
      const cs = expectSuccess(await c.comments(u.token), 200).data as Array<{ comment: string; link: string }>;
      assert.deepEqual(cs.map((x) => x.comment), ['on the kept file']);
      assert.equal((await c.view(fileId)).status, 404);
      expectError(await c.raw('GET', url), 404, 'File not found');
    });
    expectError(await c.comment(other.token, { file_id: fileId, comment: 'too late' }), 404, 'File not found');
    expectError(await c.purchase(other.token, { file_id: fileId }), 404, 'File not found');
    expectError(await c.update(u.token, { id: fileId, title: 'resurrect' }), 404, 'File not found');
  });

  it('removes the bytes from blob storage (DATA_DIR, or the MinIO bucket in distributed mode)', { skip: localOnly }, async () => {
    const { c, server } = fx;
    const data = randomBytes(40_000);
    const { fileId } = await c.uploadOk(owner.token, {}, data, 'secret.bin', 'application/octet-stream');
    const before = await storedBytesContaining(server, data);
    assert.ok(before.length >= 1, 'the uploaded bytes are in blob storage');
    expectSuccess(await c.del(owner.token, fileId), 200);
    await eventually(async () => assert.deepEqual(await storedBytesContaining(server, data), [], 'no blob may still hold the bytes'));
  });

  it('deleting again → 404 "File not found"', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    expectSuccess(await c.del(owner.token, fileId), 200);
    await eventually(async () => expectError(await c.del(owner.token, fileId), 404, 'File not found'));
  });

  it('accepts the id as a JSON number as well', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    expectSuccess(await c.del(owner.token, Number(fileId)), 200);
    await eventually(async () => expectError(await c.download(owner.token, fileId), 404, 'File not found'));
  });

  it('someone else\'s file → 403 "You do not own this file", and the file stays', async () => {
    const { c } = fx;
    const { fileId } = await c.uploadOk(owner.token);
    expectError(await c.del(other.token, fileId), 403, 'You do not own this file');
    expectSuccess(await c.download(other.token, fileId), 200);
    const list = expectSuccess(await c.files(owner.token), 200).files.map((f: { file_id: number }) => f.file_id);
    assert.ok(list.includes(Number(fileId)));
  });

  it('a missing or blank id → 400 "File ID is required"', async () => {
    const { c } = fx;
    expectError(await c.json('DELETE', '/api/V1/docs/api-delete', owner.token, {}), 400, 'File ID is required');
    expectError(await c.del(owner.token, ''), 400, 'File ID is required');
    expectError(await c.del(owner.token, '   '), 400, 'File ID is required');
    expectError(await c.del(owner.token, null), 400, 'File ID is required');
    expectError(await c.del(owner.token, { nested: 1 }), 400, 'File ID is required');
    // No body at all.
    expectError(await c.json('DELETE', '/api/V1/docs/api-delete', owner.token), 400, 'File ID is required');
  });

  it('an unknown or malformed id → 404 "File not found"', async () => {
    const { c } = fx;
    for (const id of ['99999999', 'abc', '0', '-3', '2.5', 99999999]) {
      expectError(await c.del(owner.token, id), 404, 'File not found');
    }
  });

  it('malformed JSON → 400 "Malformed JSON"', async () => {
    const res = await fx.c.json('DELETE', '/api/V1/docs/api-delete', owner.token, undefined, { raw: '{"id": ', headers: { 'Content-Type': 'application/json' } });
    expectError(res, 400, 'Malformed JSON');
  });

  it('another method → 405 "Invalid request method"', async () => {
    const { c } = fx;
    for (const method of ['GET', 'POST', 'PUT']) {
      expectError(await c.json(method, '/api/V1/docs/api-delete', owner.token, method === 'GET' ? undefined : { id: '1' }), 405, 'Invalid request method');
    }
  });
});
