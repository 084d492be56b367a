// The world the fuzz runs in: fuzz users with files, comments and signed links (so requests reach
// past authentication and find things), and a sentinel user whose data must come out of the run
// byte for byte as it went in.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Api } from '../../support/client.ts';
import { TEST_JWT_SECRET } from '../../support/jwt.ts';
import { waitFor } from '../../support/wait.ts';
import type { FuzzContext, FuzzUser } from './gen.ts';

export interface Sentinel {
  user: FuzzUser;
  fileIds: number[];
  bytes: Buffer[];
  stats: unknown;
  files: string;
  comments: string;
  webhooks: string;
}

/**
 * Webhooks (issue 23) point at a closed loopback port: the fuzz servers run with
 * WEBHOOK_ALLOW_PRIVATE_NETWORKS and WEBHOOK_ALLOW_HTTP (FUZZ_WEBHOOK_ENV), so registrations pass and
 * deliveries fail without reaching anything.
 */
const WEBHOOKS = '/api/V1/users/api-webhooks';
const CLOSED_URL = 'http://127.0.0.1:9/fuzz';
export const FUZZ_WEBHOOK_ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_ALLOW_HTTP: 'true' } as const;

const registerWebhook = async (c: Api, token: string, events: string[]): Promise<number> => {
  const res = await c.json('POST', WEBHOOKS, token, { url: CLOSED_URL, events });
  ok(res, 'fuzz webhook');
  return Number(res.body.webhook.id);
};

const ok = (res: { status: number; text: string }, what: string): void => {
  assert.ok(res.status >= 200 && res.status < 300, `${what}: HTTP ${res.status} ${res.text.slice(0, 300)}`);
};

/** Fetches a file's bytes through a fresh signed download URL (counts one download). */
const fetchBytes = async (c: Api, token: string, fileId: number): Promise<Buffer> => {
  const res = await c.download(token, fileId);
  ok(res, `download of ${fileId}`);
  const got = await c.bytes(String(res.body.download_url));
  assert.equal(got.status, 200, `signed content of ${fileId}: HTTP ${got.status}`);
  return got.bytes;
};

/** The sentinel's data as the API shows it to its owner. */
const snapshot = async (c: Api, token: string): Promise<{ stats: unknown; files: string; comments: string; webhooks: string }> => {
  const stats = await c.stats(token);
  ok(stats, 'sentinel stats');
  const files = await c.files(token);
  ok(files, 'sentinel files');
  const comments = await c.comments(token);
  ok(comments, 'sentinel comments');
  const webhooks = await c.json('GET', WEBHOOKS, token);
  ok(webhooks, 'sentinel webhooks');
  return { stats: stats.body.data, files: files.text, comments: comments.text, webhooks: webhooks.text };
};

export async function makeWorld(c: Api, maxUploadBytes: number): Promise<{ ctx: Omit<FuzzContext, 'host' | 'port'>; sentinel: Sentinel }> {
  const users: FuzzUser[] = [];
  const fileIds: number[] = [];
  const categoryIds = new Set<number>();
  const signedPaths: string[] = [];
  for (let i = 0; i < 3; i++) {
    const u = await c.register();
    users.push({ userId: u.userId, token: u.token, email: u.email, password: u.password });
    for (let j = 0; j < 2; j++) {
      const { fileId, res } = await c.uploadOk(u.token, { title: `fuzz document ${i}.${j}`, tags: 'fuzz,alpha', new_category_name: `Fuzz ${i}` }, randomBytes(100 + j * 900));
      fileIds.push(Number(fileId));
      categoryIds.add(Number(res.body.category_id));
      const d = await c.download(u.token, fileId);
      ok(d, 'fuzz download');
      const url = new URL(String(d.body.download_url));
      signedPaths.push(`${url.pathname}${url.search}`);
    }
  }
  const [u0, u1] = users;
  assert.ok(u0 !== undefined && u1 !== undefined);
  ok(await c.comment(u1.token, { file_id: fileIds[0], comment: 'a fuzz comment' }), 'fuzz comment');
  ok(await c.update(u0.token, { id: fileIds[1], for_sale: true, price: 3 }), 'fuzz for sale');
  ok(await c.update(u1.token, { id: fileIds[3], enabled: false }), 'fuzz disable');

  // Resumable upload sessions (issue 22), pending: one of a single 100-byte part, one of two parts
  // (the default part size, then 1,000 bytes), so part PUTs and completions find something.
  const uploadIds: string[] = [];
  const partPaths: string[] = [];
  for (const [u, size] of [[u0, 100], [u1, 8 * 1024 * 1024 + 1000]] as const) {
    const res = await c.json('POST', '/api/V1/docs/api-uploads', u.token, {
      file_name: 'fuzz.bin', size, content_type: 'application/octet-stream', title: 'fuzz resumable', description: 'd', tags: 'fuzz', cc_license: 'CC BY', new_category_name: 'Fuzz 0',
    });
    ok(res, 'fuzz resumable upload');
    uploadIds.push(String(res.body.upload_id));
    for (const p of res.body.parts as Array<{ url: string }>) {
      const url = new URL(p.url);
      partPaths.push(`${url.pathname}${url.search}`);
    }
  }

  const webhooks = [
    { id: await registerWebhook(c, u0.token, ['file.uploaded', 'comment.received']), token: u0.token },
    { id: await registerWebhook(c, u1.token, ['file.updated']), token: u1.token },
  ];

  // The sentinel: two files (text and binary), comments received, a download counted; then both
  // files disabled, so that no other user can lawfully change its numbers (no views, downloads,
  // comments or purchases of a disabled file), while the fuzz still aims at its ids.
  const s = await c.register();
  const sentinelUser: FuzzUser = { userId: s.userId, token: s.token, email: s.email, password: s.password };
  const contents = [Buffer.from(`sentinel text ${randomBytes(8).toString('hex')}\n`), randomBytes(Math.min(3000, maxUploadBytes))];
  const sentinelIds: number[] = [];
  for (const [i, bytes] of contents.entries()) {
    const { fileId, res } = await c.uploadOk(s.token, { title: `sentinel ${i}`, tags: 'sentinel', new_category_name: 'Sentinel' }, bytes, `sentinel-${i}.bin`, 'application/octet-stream');
    sentinelIds.push(Number(fileId));
    categoryIds.add(Number(res.body.category_id));
  }
  ok(await c.comment(u0.token, { file_id: sentinelIds[0], comment: 'comment on the sentinel' }), 'sentinel comment');
  const bytes: Buffer[] = [];
  for (const [i, id] of sentinelIds.entries()) {
    const got = await fetchBytes(c, s.token, id);
    assert.deepEqual(got, contents[i], 'sentinel bytes as uploaded');
    bytes.push(got);
  }
  for (const id of sentinelIds) ok(await c.update(s.token, { id, enabled: false }), 'sentinel disable');
  // A webhook of the sentinel's: its view is part of what must not change.
  const sentinelWebhookIds = [await registerWebhook(c, s.token, ['comment.received'])];
  const snap = await snapshot(c, s.token);
  return {
    ctx: {
      users, fileIds, categoryIds: [...categoryIds], signedPaths, uploadIds, partPaths, webhooks, sentinelWebhookIds,
      sentinelUserId: s.userId, sentinelFileIds: sentinelIds, sentinelEmail: s.email,
      jwtSecret: TEST_JWT_SECRET, maxUploadBytes,
    },
    sentinel: { user: sentinelUser, fileIds: sentinelIds, bytes, ...snap },
  };
}

/** The sentinel's statistics, file list, comments and bytes are what they were before the run. */
export async function checkSentinel(c: Api, sentinel: Sentinel, settleMs = 15_000): Promise<void> {
  const token = sentinel.user.token;
  // Reads may lag writes in distributed mode; give them a moment to settle before judging.
  await waitFor(async () => {
    const now = await snapshot(c, token);
    assert.deepEqual(now.stats, sentinel.stats, 'the sentinel\'s statistics changed during the fuzz');
    assert.equal(now.files, sentinel.files, 'the sentinel\'s file list changed during the fuzz');
    assert.equal(now.comments, sentinel.comments, 'the sentinel\'s comments changed during the fuzz');
    assert.equal(now.webhooks, sentinel.webhooks, 'the sentinel\'s webhooks changed during the fuzz');
    return true;
  }, { timeoutMs: settleMs, intervalMs: 500 });
  for (const [i, id] of sentinel.fileIds.entries()) {
    ok(await c.update(token, { id, enabled: true }), 'sentinel enable');
    const got = await fetchBytes(c, token, id);
    ok(await c.update(token, { id, enabled: false }), 'sentinel disable again');
    assert.ok(got.equals(sentinel.bytes[i] ?? Buffer.alloc(0)), `the bytes of sentinel file ${id} changed during the fuzz`);
  }
  // The check itself counted downloads: the next check compares against the state after it.
  Object.assign(sentinel, await snapshot(c, token));
}
