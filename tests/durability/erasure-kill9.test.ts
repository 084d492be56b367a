// Erasure under SIGKILL (issue 24, "Done when"; design §4: every step idempotent, the batch
// acknowledged only once all are done). A user with 50 files is erased; while the erasure is still
// pending docs-command is killed with SIGKILL (embedded: the whole `npm start` process, then
// restarted on the same DATA_DIR; distributed: docs-command's own process, from
// DATA_DIR/run/docs-command.pid, which its supervisor restarts). The erasure must still end in
// `done` with all 50 files deleted, the bytes gone, the account refused, and nobody else's file touched.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { erasureDone, erasureStatus, requestErasure } from '../support/account.ts';
import { api, type Api, type RegisteredUser } from '../support/client.ts';
import { storedBytesContaining } from '../support/datadir.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { TEST_JWT_SECRET } from '../support/jwt.ts';
import { alive, localOnly, startServer, TARGET, type Server } from '../support/server.ts';
import { waitFor } from '../support/wait.ts';

const FILES = 50;
/** Uploads sent at once while setting up (well under HTTP_MAX_UPLOADS_PER_USER, 8 by default). */
const AT_ONCE = 4;

describe('SIGKILL of docs-command during an erasure: after the restart it still ends in done', { skip: localOnly }, () => {
  let server: Server | undefined;
  let c: Api;
  let leaving: RegisteredUser;
  let staying: RegisteredUser;
  /** The content of each of the leaving user's files (each unique, so its blob can be found). */
  const contents: Buffer[] = [];
  let stayingFile = '';
  const stayingBytes = Buffer.from(`a file that stays ${randomBytes(16).toString('hex')}`);

  before(async () => {
    server = await startServer({ JWT_SECRET: TEST_JWT_SECRET });
    c = api(server);
    leaving = await c.register();
    staying = await c.register();
    stayingFile = (await c.uploadOk(staying.token, { title: 'Stays' }, stayingBytes, 'stays.txt', 'text/plain')).fileId;
    for (let i = 0; i < FILES; i += AT_ONCE) {
      await Promise.all(Array.from({ length: Math.min(AT_ONCE, FILES - i) }, async (_, k) => {
        const bytes = Buffer.from(`erasure kill9 file ${i + k} ${randomBytes(16).toString('hex')}`);
        contents.push(bytes);
        await c.uploadOk(leaving.token, { title: `Leaving ${i + k}` }, bytes, `f${i + k}.txt`, 'text/plain');
      }));
    }
    expectSuccess(await c.comment(leaving.token, { file_id: stayingFile, comment: 'a comment of the leaving user' }), 201);
    await waitFor(async () => {
      assert.equal(expectSuccess(await c.files(leaving.token, 'per_page=100'), 200).files.length, FILES);
      return true;
    }, { timeoutMs: 60_000, intervalMs: 200 });
  });

  after(async () => {
    if (server !== undefined) await server.dispose();
  });

  /** docs-command's current pid (distributed), from the pid file its supervisor rewrites on every start. */
  const commandPid = async (): Promise<number> => {
    assert.ok(server);
    const text = await readFile(path.join(server.dataDir, 'run', 'docs-command.pid'), 'utf8');
    const pid = Number(text.trim());
    assert.ok(Number.isInteger(pid) && pid > 0, `pid file: ${JSON.stringify(text)}`);
    return pid;
  };

  it(`erase, SIGKILL while pending, restart: done with files_deleted = ${FILES}`, { timeout: 10 * 60_000 }, async (t) => {
    assert.ok(server);
    const accepted = await requestErasure(c, leaving);
    const pid = TARGET === 'distributed' ? await commandPid() : 0;
    // The kill falls amid the deletions: as soon as the public list shows one of the files gone
    // (the process manager deletes them a few at a time, then waits out the key caches, so it is
    // still pending then; the status read right before the kill says so).
    const listedAtKill = await waitFor(async () => {
      const total = expectSuccess(await c.files(staying.token, `user_id=${leaving.userId}`), 200).total as number;
      return total < FILES ? total : false;
    }, { timeoutMs: 120_000, intervalMs: 10 });
    assert.equal((await erasureStatus(c, accepted)).state, 'pending', 'the erasure was still pending at the kill');
    t.diagnostic(`killed with ${listedAtKill} of ${FILES} files still listed`);
    if (TARGET === 'embedded') {
      await server.kill();
      // How far it got: the blobs of the leaving user still on disk at the kill.
      const left = (await Promise.all(contents.map((bytes) => storedBytesContaining(server as Server, bytes)))).filter((hits) => hits.length > 0).length;
      t.diagnostic(`killed with ${left} of ${FILES} files' bytes still stored`);
      await server.restart();
    } else {
      process.kill(pid, 'SIGKILL');
      await waitFor(async () => {
        const now = await commandPid();
        assert.ok(now !== pid && alive(now), 'docs-command has not been restarted yet');
        return true;
      }, { timeoutMs: 120_000, intervalMs: 200 });
    }
    const done = await erasureDone(c, accepted);
    assert.equal(done.files_deleted, FILES);
    assert.equal(done.comments_redacted, 1);
    // The account stays refused after the restart; its files are gone.
    expectError(await c.files(leaving.token), 401, 'Invalid JWT token');
    expectError(await c.login(leaving.email, leaving.password), 401, 'Invalid email or password');
    const seen = await c.files(staying.token, `user_id=${leaving.userId}`);
    if (seen.status === 200) assert.deepEqual(seen.body.files, []);
    else expectError(seen, 404, 'User not found');
    // Nobody else's file is touched; the leaving user's comment on it reads [deleted].
    expectSuccess(await c.download(staying.token, stayingFile), 200);
    assert.equal((await storedBytesContaining(server, stayingBytes)).length > 0, true, 'the staying user\'s bytes are still stored');
    const received = expectSuccess(await c.comments(staying.token), 200).data as Array<{ comment: string }>;
    assert.deepEqual(received.map((x) => x.comment), ['[deleted]']);
    // Asked again after the restart: the same erasure, done, the same counts.
    assert.deepEqual(await erasureStatus(c, accepted), done);
    // Done means the bytes are gone, also those of a deletion the kill cut short (its event
    // recorded, its blob not yet removed): not left to the blob sweeper's hour of grace.
    const stored = [];
    for (const bytes of contents) stored.push(...await storedBytesContaining(server, bytes));
    assert.deepEqual(stored, [], `${stored.length} of the erased user's ${FILES} files still stored once the erasure is done`);
  });
});
