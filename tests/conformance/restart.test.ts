// A restart (SIGTERM, then SIGKILL) keeps every piece of data (decisions §13: data under DATA_DIR).
// The server runs without JWT_SECRET, so the generated secret must persist under DATA_DIR too.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { api, randomWord, type Api, type RegisteredUser } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { localOnly, startServer, type Server } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

describe('restart keeps data', { skip: localOnly }, () => {
  let server: Server | undefined;
  let c: Api;
  let a: RegisteredUser;
  let b: RegisteredUser;
  const word = randomWord(12);
  const bytes1 = randomBytes(50_000);
  const bytes2 = randomBytes(3_000);
  const ids: Record<string, string> = {};
  let oldUrl = '';
  let snapshot: Record<string, unknown> = {};
  let downloads = 1;

  async function takeSnapshot(): Promise<Record<string, unknown>> {
    const stats = expectSuccess(await c.stats(a.token), 200).data;
    const own = expectSuccess(await c.files(a.token), 200);
    const seen = expectSuccess(await c.files(b.token, `user_id=${a.userId}`), 200);
    const comments = expectSuccess(await c.comments(a.token), 200).data;
    const search = expectSuccess(await c.search(b.token, { search: word }), 200);
    const cats = expectSuccess(await c.categories(b.token), 200).data;
    return { stats, own, seen, comments, search, cats };
  }

  async function checkAfterRestart(): Promise<void> {
    // Tokens issued before the restart still work, stats and lists are unchanged.
    assert.deepEqual(await takeSnapshot(), snapshot);
    // Deleted stays deleted, disabled stays disabled, for sale stays for sale.
    expectError(await c.download(b.token, ids['deleted']), 404, 'File not found');
    assert.equal((await c.view(ids['disabled'] ?? '')).status, 404);
    expectError(await c.download(b.token, ids['forSale']), 403, 'File is either for sale or not enabled');
    // A download_url issued before the restart is still valid until it expires.
    const old = await c.bytes(oldUrl);
    assert.equal(old.status, 200);
    assert.ok(old.bytes.equals(bytes1));
    // The bytes are intact.
    for (const [key, data] of [['f1', bytes1], ['f2', bytes2]] as const) {
      const url = expectSuccess(await c.download(b.token, ids[key]), 200).download_url as string;
      downloads += 1;
      const got = await c.bytes(url);
      assert.equal(got.status, 200);
      assert.ok(got.bytes.equals(data), `bytes of ${key}`);
    }
    // Login still works; new ids do not collide with old ones.
    expectSuccess(await c.login(a.email, a.password), 200);
    const { fileId } = await c.uploadOk(a.token, { title: `After restart ${randomWord(6)}` });
    assert.ok(!Object.values(ids).includes(fileId), 'a new upload gets a new id');
    assert.ok(Number(fileId) > Math.max(...Object.values(ids).map(Number)));
    const cid = expectSuccess(await c.comment(b.token, { file_id: fileId, comment: 'post-restart' }), 201).comment_id as number;
    const oldComments = snapshot['comments'] as Array<{ comment_id: number }>;
    assert.ok(!oldComments.some((x) => x.comment_id === cid), 'a new comment gets a new id');
    ids[`after${Object.keys(ids).length}`] = fileId;
    // Let everything settle, then take the snapshot the next restart must keep.
    await eventually(async () => {
      const s = expectSuccess(await c.stats(a.token), 200).data;
      assert.equal(s.total_downloads, downloads);
      assert.equal(s.total_files, Object.keys(ids).length - 1);
      assert.ok(expectSuccess(await c.comments(a.token), 200).data.some((x: { comment_id: number }) => x.comment_id === cid));
    });
    snapshot = await takeSnapshot();
  }

  before(async () => {
    server = await startServer({ JWT_SECRET: undefined });
    c = api(server);
    a = await c.register();
    b = await c.register();
    ids['f1'] = (await c.uploadOk(a.token, { title: `Kept one ${word}`, new_category_name: `Persisted ${word}` }, bytes1, 'one.bin', 'application/x-one')).fileId;
    ids['f2'] = (await c.uploadOk(a.token, { title: `Kept two ${word}` }, bytes2, 'two.bin', 'application/x-two')).fileId;
    ids['forSale'] = (await c.uploadOk(a.token, { title: `Sold ${word}` })).fileId;
    ids['disabled'] = (await c.uploadOk(a.token, { title: `Disabled ${word}` })).fileId;
    ids['deleted'] = (await c.uploadOk(a.token, { title: `Deleted ${word}` })).fileId;
    expectSuccess(await c.comment(b.token, { file_id: ids['f1'], comment: 'first comment' }), 201);
    expectSuccess(await c.comment(b.token, { file_id: ids['f2'], comment: 'second comment' }), 201);
    oldUrl = expectSuccess(await c.download(b.token, ids['f1']), 200).download_url;
    assert.equal((await c.view(ids['f2'] ?? '')).status, 200);
    expectSuccess(await c.update(a.token, { id: ids['forSale'], for_sale: true, price: 2 }), 200);
    expectSuccess(await c.purchase(b.token, { file_id: ids['forSale'] }), 201);
    expectSuccess(await c.update(a.token, { id: ids['disabled'], enabled: false }), 200);
    expectSuccess(await c.del(a.token, ids['deleted']), 200);
    await eventually(async () => {
      const s = expectSuccess(await c.stats(a.token), 200).data;
      assert.deepEqual(s, { total_comments: 2, total_files: 4, total_views: 1, total_downloads: 1, total_sales: 1 });
      assert.equal(expectSuccess(await c.search(b.token, { search: word }), 200).results.length, 3);
      assert.equal(expectSuccess(await c.comments(a.token), 200).data.length, 2);
    });
    snapshot = await takeSnapshot();
  });

  after(async () => {
    if (server !== undefined) await server.dispose();
  });

  it('after SIGTERM and a restart everything is still there', async () => {
    assert.ok(server);
    await server.stop();
    await server.restart();
    await checkAfterRestart();
  });

  it('after SIGKILL and a restart everything is still there', async () => {
    assert.ok(server);
    await server.kill();
    await server.restart();
    await checkAfterRestart();
  });
});
