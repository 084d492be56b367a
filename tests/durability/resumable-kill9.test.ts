// Resumable uploads under SIGKILL (issue 22): the server is killed while parts are on the wire and
// again while a completion runs, restarted on the same DATA_DIR each time. What must hold:
// - a part answered 200 is still received after the restart (its bytes and ETag), whatever was in
//   flight beside it (a part cut by the kill is simply missing, to be sent again);
// - the session's quota hold survives (a second session that would not fit beside it is refused);
// - a completion cut by the kill either recorded the file or did not: completing again answers
//   one file, whose bytes are the uploaded ones, and the quota counts it once.
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { api, type Api, type Json, type RegisteredUser } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { localOnly, startServer, type Server } from '../support/server.ts';
import { createBody, MiB, partOf, putPart, sha256, uploads, type PartUrl, type Received } from '../support/resumable.ts';
import { eventually } from '../support/wait.ts';

const PART = 5 * MiB;
const SIZE = 2 * PART + 1_234;
const QUOTA = 3 * PART;

describe('SIGKILL during a resumable upload loses no acknowledged part and records the file once', { skip: localOnly }, () => {
  let server: Server;
  let c: Api;
  let user: RegisteredUser;
  const data = randomBytes(SIZE);

  before(async () => {
    server = await startServer({
      UPLOAD_PART_BYTES: String(PART), STORAGE_QUOTA_BYTES: String(QUOTA), MAX_UPLOAD_BYTES: String(MiB), UPLOAD_PART_BYTES_PER_SECOND: '0',
    });
    c = api(server);
    user = await c.register();
  });
  after(async () => server?.dispose());

  const stateOf = async (id: string): Promise<Json> => expectSuccess(await uploads(c).get(user.token, id), 200).upload;
  const sendOk = async (url: string, n: number): Promise<string> => {
    const { res, etag } = await putPart(url, partOf(data, PART, n));
    expectSuccess(res, 200);
    assert.ok(etag, 'a part answer carries its ETag');
    return etag;
  };

  it('parts acknowledged before the kill are received after it; the hold survives; the upload completes', async () => {
    const created = expectSuccess(await uploads(c).create(user.token, createBody(SIZE)), 201);
    const urls = created.parts as PartUrl[];
    const first = await sendOk(urls[0]!.url, 1);
    // Parts 2 and 3 on the wire while the server dies at a random moment.
    const inFlight = [2, 3].map((n) => putPart(urls[n - 1]!.url, partOf(data, PART, n)).then((r) => (r.res.status === 200 ? n : null), () => null));
    await sleep(randomInt(0, 40));
    await server.kill();
    const acked = (await Promise.all(inFlight)).filter((n): n is number => n !== null);
    await server.restart();

    const after1 = await stateOf(created.upload_id);
    assert.equal(after1.state, 'pending');
    const received = new Map((after1.received as Received[]).map((r) => [r.part_number, r]));
    assert.equal(received.get(1)?.etag, first, 'the part acknowledged before the kill is there, same ETag');
    for (const n of acked) assert.ok(received.has(n), `part ${n} was acknowledged, so it is received`);
    // The session still holds its size: a second one of a whole part does not fit beside it.
    expectError(await uploads(c).create(user.token, createBody(PART)), 413, 'Storage quota exceeded');

    for (const { part_number: n, url } of after1.parts as PartUrl[]) await sendOk(url, n);
    const done = expectSuccess(await uploads(c).complete(user.token, created.upload_id), 201);
    const link = expectSuccess(await c.download(user.token, String(done.file_id)), 200);
    const res = await fetch(String(link.download_url));
    assert.equal(sha256(Buffer.from(await res.arrayBuffer())), sha256(data));
  });

  it('a completion cut by the kill completes once when called again', async () => {
    // The room left beside the first file is PART - 1,234 bytes: this one fits in it, one part.
    const size = PART - 5_000;
    const own = data.subarray(0, size);
    const created = expectSuccess(await uploads(c).create(user.token, createBody(size, { title: 'cut completion' })), 201);
    const urls = created.parts as PartUrl[];
    for (const [i, { url }] of urls.entries()) expectSuccess((await putPart(url, partOf(own, PART, i + 1))).res, 200);
    const completing = uploads(c).complete(user.token, created.upload_id).then((r) => r.status, () => 0);
    await sleep(randomInt(0, 20));
    await server.kill();
    await completing;
    await server.restart();

    const first = expectSuccess(await uploads(c).complete(user.token, created.upload_id), 201);
    const again = expectSuccess(await uploads(c).complete(user.token, created.upload_id), 201);
    assert.equal(again.file_id, first.file_id);
    assert.equal((await stateOf(created.upload_id)).state, 'completed');
    await eventually(async () => {
      const titles = (expectSuccess(await c.files(user.token), 200).files as Array<{ title: string }>).map((f) => f.title);
      assert.equal(titles.filter((t) => t === 'cut completion').length, 1, 'one file for the session');
    });
    const link = expectSuccess(await c.download(user.token, String(first.file_id)), 200);
    assert.equal(sha256(Buffer.from(await (await fetch(String(link.download_url))).arrayBuffer())), sha256(own));
    // Both files counted once: the quota's room left is exactly QUOTA - SIZE - size.
    const left = QUOTA - SIZE - size;
    expectError(await uploads(c).create(user.token, createBody(left + 1)), 413, 'Storage quota exceeded');
    expectSuccess(await uploads(c).create(user.token, createBody(left)), 201);
  });
});
