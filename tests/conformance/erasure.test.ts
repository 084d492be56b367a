// Account erasure by crypto-shredding (issue 24, "Done when"; design §3, §4, §7). A user whose
// name, e-mail, a file's title, description, tags, file name, video URL, a document's content
// (markdown, so it is extracted and searchable) and a comment on another user's file each carry a
// marker of their own is erased; then their tokens and login are refused, the other user's
// statistics do not move, the comment reads `[deleted]`, and no marker is left anywhere the server
// keeps data or logs (tests/support/leaks.ts: DATA_DIR byte for byte; distributed: MongoDB, the
// Kafka topic from the beginning, Elasticsearch, MinIO; the services' logs). A rebuild after the
// erasure gives the same answers (embedded: a restart replays the log; distributed: npm run
// rebuild). A repeated request names the same erasure. Both targets.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { erasureAccepted, erasureDone, erasureStatus, ERASE, type ErasureAccepted } from '../support/account.ts';
import { api, randomWord, type Api, type Json, type RegisteredUser } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { enc } from '../support/fixture.ts';
import { TEST_JWT_SECRET } from '../support/jwt.ts';
import { markerSightings, namespaceOf, type Sighting } from '../support/leaks.ts';
import { localOnly, REPO_ROOT, startServer, TARGET, type Server } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

/** Extraction and projections run after the answers: give them room on a busy machine. */
const SETTLED = { timeoutMs: 60_000, intervalMs: 200 };

/**
 * One marker per personal field, letters only (so each is one word for either search engine and
 * the positive checks below find it), random enough to be found nowhere else.
 */
const markers = {
  name: randomWord(16), email: randomWord(16), title: randomWord(16), description: randomWord(16), tag: randomWord(16),
  fileName: randomWord(16), video: randomWord(16), content: randomWord(16), comment: randomWord(16),
};
const ALL = Object.values(markers);
/**
 * A control: the category the marked file is filed under. A category is shared vocabulary, kept in
 * clear in every event (design §1), so the event log and the Kafka topic hold it before and after
 * the erasure: its sightings prove the scan reads the events' contents, not merely that it ran.
 */
const CONTROL = randomWord(16);
/** Where the events themselves are kept: the embedded log file, or the Kafka topic. */
const EVENTS = TARGET === 'distributed' ? /^kafka / : /(^|\/)events\.log$/;

/** A search's results; none is the API's 404 `No results found`. */
const searchResults = async (c: Api, token: string, term: string): Promise<Json[]> => {
  const res = await c.search(token, { search: term });
  if (res.status === 404) {
    expectError(res, 404, 'No results found');
    return [];
  }
  return expectSuccess(res, 200).results as Json[];
};

const describeSightings = (found: readonly Sighting[]): string =>
  found.map((s) => `${s.where}: ${s.markers.map((m) => Object.entries(markers).find(([, v]) => v === m)?.[0] ?? m).join(', ')}`).join('\n');

/** `npm run rebuild -- all` against the instance's databases (distributed), as infra/test/rebuild.int.test.ts runs it. */
const rebuildAll = (server: Server): Promise<{ code: number; output: string }> => new Promise((resolve) => {
  const ns = namespaceOf(server);
  const kek = path.join(server.dataDir, 'secrets', 'data-kek');
  const child = spawn(process.execPath, ['infra/rebuild.ts', 'all'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env, DATA_DIR: server.dataDir,
      MONGO_COMMAND_DB: `docshare_${ns}`, MONGO_READ_DB: `docshare_${ns}_read`, ELASTICSEARCH_ALIAS: `docshare-files-${ns}`,
      // The rebuild opens the sealed events with the instance's KEK (wherever the instance keeps it).
      ...(process.env['DATA_KEK'] === undefined && process.env['DATA_KEK_FILE'] === undefined && existsSync(kek) ? { DATA_KEK_FILE: kek } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.once('exit', (code) => resolve({ code: code ?? 1, output }));
});

describe('account erasure leaves no trace of the person and changes nobody else\'s numbers', { skip: localOnly }, () => {
  let server: Server | undefined;
  let c: Api;
  /** The person who leaves. */
  let a: RegisteredUser;
  /** Another user, whose files A commented on, downloaded and bought. */
  let b: RegisteredUser;
  /** A third user, whose comment on B's file must stay as it is. */
  let third: RegisteredUser;
  const aFiles: string[] = [];
  let bFree = '';
  let bSold = '';
  let markedCommentId = 0;
  let plainCommentId = 0;
  let thirdCommentId = 0;
  let bStats: Json;
  let accepted: ErasureAccepted;
  let answersAfter: Json;

  const srv = (): Server => {
    assert.ok(server, 'server not started');
    return server;
  };

  before(async () => {
    server = await startServer({ JWT_SECRET: TEST_JWT_SECRET });
    c = api(server);
    a = await c.register({ name: `Erin ${markers.name}`, email: `${markers.email}@example.com` });
    b = await c.register();
    third = await c.register();
    // A's files: the marked document (extracted), a plain one, and a disabled one.
    const marked = await c.uploadOk(a.token, {
      title: `Field notes ${markers.title}`, description: `What we saw ${markers.description}`, tags: `notes,${markers.tag}`,
      video: `https://video.example.com/watch/${markers.video}`, new_category_name: `Category ${CONTROL}`,
    }, enc(`# Field notes\n\nThe ${markers.content} measurements stood out as the most promising result.\n`), `${markers.fileName}.md`, 'text/markdown');
    aFiles.push(marked.fileId);
    aFiles.push((await c.uploadOk(a.token, { title: 'Plain notes' })).fileId);
    const hidden = (await c.uploadOk(a.token, { title: 'Hidden notes' })).fileId;
    expectSuccess(await c.update(a.token, { id: hidden, enabled: false }), 200);
    aFiles.push(hidden);
    // B's files: one free (A comments, views and downloads it), one for sale (A buys it).
    bFree = (await c.uploadOk(b.token, { title: 'Shared reading list' })).fileId;
    bSold = (await c.uploadOk(b.token, { title: 'Paid report' })).fileId;
    expectSuccess(await c.update(b.token, { id: bSold, for_sale: true, price: 2 }), 200);
    markedCommentId = expectSuccess(await c.comment(a.token, { file_id: bFree, comment: `Thanks, ${markers.comment} indeed` }), 201).comment_id as number;
    plainCommentId = expectSuccess(await c.comment(a.token, { file_id: bFree, comment: 'A second, plain comment' }), 201).comment_id as number;
    thirdCommentId = expectSuccess(await c.comment(third.token, { file_id: bFree, comment: 'A comment that stays' }), 201).comment_id as number;
    await c.view(bFree);
    expectSuccess(await c.download(a.token, bFree), 200);
    expectSuccess(await c.purchase(a.token, { file_id: bSold }), 201);
    // B's statistics once everything above is counted (each figure final once reached).
    bStats = await eventually(async () => {
      const data = expectSuccess(await c.stats(b.token), 200).data;
      assert.equal(data.total_files, 2);
      assert.equal(data.total_comments, 3);
      assert.equal(data.total_sales, 1);
      assert.ok(data.total_views >= 1 && data.total_downloads >= 1, JSON.stringify(data));
      return data;
    }, SETTLED);
  });

  after(async () => {
    if (server !== undefined) await server.dispose();
  });

  /** What B and the public see of all this; equal before and after a rebuild. */
  const answers = async (): Promise<Json> => {
    const searches: Record<string, unknown> = {};
    for (const [field, marker] of Object.entries(markers)) searches[field] = await searchResults(c, b.token, marker);
    const aSeen = await c.files(b.token, `user_id=${a.userId}`);
    const aToken = await c.files(a.token);
    const login = await c.login(a.email, a.password);
    const received = expectSuccess(await c.comments(b.token), 200).data as Array<{ comment_id: number }>;
    return {
      bStats: expectSuccess(await c.stats(b.token), 200).data,
      bFiles: expectSuccess(await c.files(b.token), 200).files,
      received: [...received].sort((x, y) => x.comment_id - y.comment_id),
      aSeenByB: { status: aSeen.status, body: aSeen.body },
      aToken: { status: aToken.status, body: aToken.body },
      login: { status: login.status, body: login.body },
      searches,
      erasure: await erasureStatus(c, accepted),
    };
  };

  it('before: the markers are there to be found (search, lists, the stored bytes)', async () => {
    await eventually(async () => {
      for (const field of ['title', 'description', 'tag', 'content'] as const) {
        const results = await searchResults(c, b.token, markers[field]);
        assert.ok(results.some((r) => String(r.id) === aFiles[0]), `B's search for the ${field} marker finds A's file`);
      }
    }, SETTLED);
    assert.match(expectSuccess(await c.files(b.token, `user_id=${a.userId}`), 200).user.name, new RegExp(markers.name));
    const received = expectSuccess(await c.comments(b.token), 200).data as Array<{ comment_id: number; comment: string }>;
    assert.match(received.find((x) => x.comment_id === markedCommentId)?.comment ?? '', new RegExp(markers.comment));
    // The search below is able to see: the document's bytes hold the content marker.
    const found = await markerSightings(srv(), [...ALL, CONTROL]);
    assert.ok(found.some((s) => s.markers.includes(markers.content)), `the content marker is stored somewhere before the erasure:\n${describeSightings(found)}`);
    assert.ok(found.some((s) => EVENTS.test(s.where) && s.markers.includes(CONTROL)), `the category (in clear) is seen in the events:\n${describeSightings(found)}`);
    if (TARGET === 'distributed') {
      for (const place of ['mongo ', 'elasticsearch ']) {
        assert.ok(found.some((s) => s.where.startsWith(place) && s.markers.includes(markers.title)), `the title marker is in ${place.trim()} before the erasure:\n${describeSightings(found)}`);
      }
    }
  });

  it('the erasure request: 400 without a password, 403 with a wrong one (the account keeps working)', async () => {
    expectError(await c.json('POST', ERASE, a.token, {}), 400, 'Password is required');
    expectError(await c.json('POST', ERASE, a.token, { password: 7 }), 400, 'Password is required');
    expectError(await c.json('POST', ERASE, a.token, { password: `${a.password}x` }), 403, 'Password is incorrect');
    expectError(await c.json('POST', ERASE, undefined, { password: a.password }), 401, 'Missing JWT token');
    expectSuccess(await c.files(a.token), 200);
  });

  it('202 with an erasure_id and a status link; requests made at once name the same erasure; the account stops working at once', async (t) => {
    // Sent together: each passes the token check before the first answer revokes it, so each
    // reaches the erasure, which must be one. One that comes after the revocation is a 401.
    const sent = await Promise.all([0, 1, 2].map(() => c.json('POST', ERASE, a.token, { password: a.password })));
    const acceptedOnes = sent.filter((r) => r.status === 202);
    assert.ok(acceptedOnes.length >= 1, `one request accepted: ${sent.map((r) => `${r.status} ${r.text}`).join(' | ')}`);
    for (const r of sent.filter((x) => x.status !== 202)) expectError(r, 401, 'Invalid JWT token');
    accepted = erasureAccepted(acceptedOnes[0]!);
    for (const r of acceptedOnes) assert.equal(r.body.erasure_id, accepted.erasure_id, 'the same erasure_id for every accepted request');
    t.diagnostic(`${acceptedOnes.length} of ${sent.length} requests sent at once were accepted`);
    assert.ok(!('x-docshare-erased-user' in Object.fromEntries(acceptedOnes[0]!.headers)), 'the internal header does not leave the gateway');
    // At once, whatever the erasure's progress: the tokens and the login are refused.
    expectError(await c.files(a.token), 401, 'Invalid JWT token');
    expectError(await c.stats(a.token), 401, 'Invalid JWT token');
    expectError(await c.json('POST', ERASE, a.token, { password: a.password }), 401, 'Invalid JWT token');
    expectError(await c.login(a.email, a.password), 401, 'Invalid email or password');
    // The status link needs no token; a tampered one is refused.
    await erasureStatus(c, accepted);
    const tampered = new URL(accepted.status_url, c.baseUrl);
    tampered.searchParams.set('signature', `${tampered.searchParams.get('signature') ?? ''}x`);
    expectError(await c.raw('GET', tampered.toString()), 403, 'Invalid or expired erasure status link');
  });

  it('done: every file of theirs deleted (disabled ones too), both comments redacted', async () => {
    const done = await erasureDone(c, accepted);
    assert.equal(done.files_deleted, aFiles.length);
    assert.equal(done.comments_redacted, 2);
  });

  it('after: B\'s statistics are unchanged; A\'s comments read [deleted], the third user\'s stays; A has no files', async () => {
    assert.deepEqual(expectSuccess(await c.stats(b.token), 200).data, bStats);
    const received = expectSuccess(await c.comments(b.token), 200).data as Array<{ comment_id: number; comment: string; title: string }>;
    const byId = new Map(received.map((x) => [x.comment_id, x]));
    assert.equal(byId.get(markedCommentId)?.comment, '[deleted]');
    assert.equal(byId.get(plainCommentId)?.comment, '[deleted]');
    assert.equal(byId.get(thirdCommentId)?.comment, 'A comment that stays');
    assert.equal(byId.get(markedCommentId)?.title, 'Shared reading list', 'the title of B\'s file is B\'s, not erased');
    const aSeen = await c.files(b.token, `user_id=${a.userId}`);
    if (aSeen.status === 200) {
      assert.deepEqual(aSeen.body.files, [], 'no file of A is listed');
      assert.equal(aSeen.body.user.name, '[deleted]');
    } else {
      expectError(aSeen, 404, 'User not found');
    }
    for (const id of aFiles) expectError(await c.download(b.token, id), 404, 'File not found');
    for (const marker of ALL) assert.deepEqual(await searchResults(c, b.token, marker), [], `search for ${marker}`);
    answersAfter = await answers();
  });

  it('no marker anywhere: the stored data (every file, database, topic, index, bucket) and the logs', async (t) => {
    const all = await markerSightings(srv(), [...ALL, CONTROL]);
    assert.ok(all.some((s) => EVENTS.test(s.where) && s.markers.includes(CONTROL)), 'the scan still sees the events (the category in clear)');
    const found = all.flatMap((s) => (s.markers.some((m) => m !== CONTROL) ? [{ ...s, markers: s.markers.filter((m) => m !== CONTROL) }] : []));
    t.diagnostic(`logs searched: ${srv().output().length} characters of output (the last 256 KiB are kept)`);
    assert.deepEqual(found, [], `markers left after the erasure:\n${describeSightings(found)}`);
  });

  it('a rebuild after the erasure gives the same answers, and brings no marker back', async () => {
    if (TARGET === 'distributed') {
      const result = await rebuildAll(srv());
      assert.equal(result.code, 0, result.output);
    } else {
      // The embedded server replays its event log into fresh read models at every start.
      await srv().restart();
    }
    await eventually(async () => assert.deepEqual(await answers(), answersAfter), SETTLED);
    const found = await markerSightings(srv(), ALL);
    assert.deepEqual(found, [], `markers back after the rebuild:\n${describeSightings(found)}`);
  });
});
