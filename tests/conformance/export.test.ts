// The account export (issue 24, "Done when"; design §3, §6): a user with files (one disabled),
// comments written, a purchase and statistics asks for an export; once ready its ZIP, downloaded
// through the signed link, has the announced sha256 and size, and each JSON file matches what the
// API itself answers that user, field by field (api-files pages, api-purchases, api-stats, the
// comments as their files' owners receive them); the originals have the manifest's sha256 and are
// the uploaded bytes. Nobody else's export is found; a missing id is a 400. Both targets.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { EXPORT, exportReady, requestExport, type ReadyExport } from '../support/account.ts';
import type { Api, Json, RegisteredUser } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { eventually } from '../support/wait.ts';
import { readZip } from '../support/zip.ts';

const SETTLED = { timeoutMs: 60_000, intervalMs: 200 };
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

let me: RegisteredUser;
let other: RegisteredUser;
/** My uploads: file id → the bytes sent. */
const uploaded = new Map<number, Buffer>();
const myComments: number[] = [];
let bought = '';

const fx = useServer({}, async ({ c }) => {
  me = await c.register();
  other = await c.register();
  const files: Array<{ title: string; bytes: Buffer; name: string; type: string }> = [
    { title: 'Export notes', bytes: Buffer.from('# Notes\n\nWhat I wrote down.\n'), name: 'notes.md', type: 'text/markdown' },
    { title: 'Export data', bytes: randomBytes(70_000), name: 'data.bin', type: 'application/octet-stream' },
    { title: 'Export hidden', bytes: Buffer.from('not for everyone'), name: 'hidden.txt', type: 'text/plain' },
    { title: 'Export empty', bytes: Buffer.alloc(0), name: 'empty.txt', type: 'text/plain' },
  ];
  for (const f of files) {
    const { fileId } = await c.uploadOk(me.token, { title: f.title }, f.bytes, f.name, f.type);
    uploaded.set(Number(fileId), f.bytes);
  }
  const ids = [...uploaded.keys()];
  expectSuccess(await c.update(me.token, { id: ids[2], enabled: false }), 200);
  // The other user's files: I comment on one and buy the other.
  const { fileId: theirs } = await c.uploadOk(other.token, { title: 'Their essay' });
  bought = (await c.uploadOk(other.token, { title: 'Their paid essay' })).fileId;
  expectSuccess(await c.update(other.token, { id: bought, for_sale: true, price: 4 }), 200);
  for (const text of ['First remark', 'Second remark']) {
    myComments.push(expectSuccess(await c.comment(me.token, { file_id: theirs, comment: text }), 201).comment_id as number);
  }
  expectSuccess(await c.purchase(me.token, { file_id: bought }), 201);
  // My statistics: a comment, a view and a download on my files.
  expectSuccess(await c.comment(other.token, { file_id: ids[0], comment: 'Nice notes' }), 201);
  await c.view(ids[0] as number);
  expectSuccess(await c.download(other.token, ids[1]), 200);
  await eventually(async () => {
    const data = expectSuccess(await c.stats(me.token), 200).data;
    assert.equal(data.total_files, uploaded.size);
    assert.equal(data.total_comments, 1);
    assert.ok(data.total_views >= 1 && data.total_downloads >= 1, JSON.stringify(data));
  }, SETTLED);
});

/** Every page of a paged list. */
const allPages = async (c: Api, path: string, token: string, key: string): Promise<Json[]> => {
  const all: Json[] = [];
  for (let page = 1; ; page += 1) {
    const body = expectSuccess(await c.json('GET', `${path}${path.includes('?') ? '&' : '?'}page=${page}&per_page=100`, token), 200);
    all.push(...(body[key] as Json[]));
    if ((body[key] as Json[]).length < 100) return all;
  }
};

/** A list file of the export: the array itself, or the one array an object around it holds. */
const listOf = (value: Json, what: string): Json[] => {
  if (Array.isArray(value)) return value;
  const arrays = Object.values(value as object).filter(Array.isArray);
  assert.equal(arrays.length, 1, `${what} is a list: ${JSON.stringify(value).slice(0, 300)}`);
  return arrays[0] as Json[];
};

/** Each field the API answers equals the export's (the export may say more); `skip` names fields whose value is made per answer. */
const sameFields = (exported: Json, answered: Json, what: string, skip: readonly string[] = []): void => {
  assert.ok(exported !== undefined, `${what} is in the export`);
  for (const [key, value] of Object.entries(answered as object)) {
    if (skip.includes(key)) {
      assert.ok(key in exported, `${what}: the export has ${key}`);
      continue;
    }
    assert.deepEqual(exported[key], value, `${what}: ${key}`);
  }
};

const idOf = (item: Json): number => Number(item.file_id ?? item.id);

describe('the account export', () => {
  let exportId = '';
  let ready: ReadyExport;
  let zip: Buffer;
  let entries: Map<string, Buffer>;
  const json = (name: string): Json => {
    const bytes = entries.get(name);
    assert.ok(bytes !== undefined, `the export has ${name}: ${[...entries.keys()].join(', ')}`);
    return JSON.parse(bytes.toString('utf8'));
  };

  it('202 "Export started" with an export_id; the status is pending, then ready with a link, sha256, size and expiry', async () => {
    exportId = await requestExport(fx.c, me);
    ready = await exportReady(fx.c, me, exportId);
    assert.match(ready.sha256, /^[0-9a-f]{64}$/);
    assert.ok(Number.isInteger(ready.bytes) && ready.bytes > 0, `bytes: ${ready.bytes}`);
    const expires = Date.parse(ready.expires_at);
    assert.ok(Number.isFinite(expires) && expires > Date.now() + 6 * 24 * 3600_000, `kept 7 days: ${ready.expires_at}`);
  });

  it('the link (no token) streams the ZIP: its sha256 and size are the announced ones', async () => {
    const res = await fx.c.bytes(new URL(ready.download_url, fx.c.baseUrl).toString());
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/zip\b/);
    assert.match(res.headers.get('content-disposition') ?? '', new RegExp(`^attachment;.*docshare-export-${exportId}\\.zip`));
    assert.equal(res.bytes.length, ready.bytes);
    assert.equal(sha256(res.bytes), ready.sha256);
    zip = res.bytes;
    entries = new Map(readZip(zip).map((e) => [e.name, e.bytes]));
    for (const name of ['account.json', 'files.json', 'comments_written.json', 'purchases.json', 'stats.json', 'manifest.json']) {
      assert.ok(entries.has(name), `${name} in ${[...entries.keys()].join(', ')}`);
    }
    const names = [...entries.keys()];
    assert.equal(names[names.length - 1], 'manifest.json', 'the manifest comes last');
  });

  it('a tampered link is refused: 403 "Invalid or expired export link"', async () => {
    const url = new URL(ready.download_url, fx.c.baseUrl);
    url.searchParams.set('signature', `${url.searchParams.get('signature') ?? ''}x`);
    expectError(await fx.c.raw('GET', url.toString()), 403, 'Invalid or expired export link');
    const other = new URL(ready.download_url, fx.c.baseUrl);
    other.searchParams.set('user', String(me.userId + 1));
    expectError(await fx.c.raw('GET', other.toString()), 403, 'Invalid or expired export link');
  });

  it('account.json is who I am: id, name and e-mail as the API knows them', async () => {
    const account = json('account.json');
    const listed = expectSuccess(await fx.c.files(me.token, `user_id=${me.userId}`), 200).user;
    assert.equal(Number(account.user_id ?? account.id), listed.id);
    assert.equal(account.name, listed.name);
    assert.equal(account.email, me.email);
    assert.ok(!JSON.stringify(account).includes(me.password), 'no password in the export');
  });

  it('files.json is my file list (every page, the disabled file too), field by field', async () => {
    const listed = await allPages(fx.c, `/api/V1/users/api-files?user_id=${me.userId}`, me.token, 'files');
    assert.deepEqual(listed.map(idOf).sort((x, y) => x - y), [...uploaded.keys()].sort((x, y) => x - y), 'the API lists all my files');
    const exported = listOf(json('files.json'), 'files.json');
    assert.deepEqual(exported.map(idOf).sort((x, y) => x - y), [...uploaded.keys()].sort((x, y) => x - y), 'the export holds all my files');
    const byId = new Map(exported.map((f) => [idOf(f), f]));
    for (const f of listed) sameFields(byId.get(idOf(f)), f, `file ${idOf(f)}`);
  });

  it('comments_written.json is my comments as their files\' owner receives them, field by field', async () => {
    const exported = listOf(json('comments_written.json'), 'comments_written.json');
    assert.deepEqual(exported.map((x) => Number(x.comment_id)).sort((x, y) => x - y), [...myComments].sort((x, y) => x - y));
    const received = expectSuccess(await fx.c.comments(other.token), 200).data as Json[];
    const byId = new Map(exported.map((x) => [Number(x.comment_id), x]));
    for (const id of myComments) sameFields(byId.get(id), received.find((x) => x.comment_id === id), `comment ${id}`);
  });

  it('purchases.json is my purchase list, field by field (download links are signed per answer)', async () => {
    const listed = await allPages(fx.c, '/api/V1/users/api-purchases', me.token, 'data');
    assert.deepEqual(listed.map(idOf), [Number(bought)]);
    const exported = listOf(json('purchases.json'), 'purchases.json');
    assert.deepEqual(exported.map(idOf), listed.map(idOf));
    for (const p of listed) sameFields(exported.find((x) => idOf(x) === idOf(p)), p, `purchase of ${idOf(p)}`, ['download_url']);
  });

  it('stats.json is my statistics as api-stats answers them', async () => {
    const stats = json('stats.json');
    const answered = expectSuccess(await fx.c.stats(me.token), 200).data;
    sameFields(stats.data ?? stats, answered, 'stats.json');
  });

  it('originals/: every file of mine, the bytes uploaded, with the manifest\'s sha256 and size', async () => {
    const manifest = json('manifest.json');
    assert.ok(typeof manifest.exported_at === 'string' && Number.isFinite(Date.parse(manifest.exported_at)), `exported_at: ${manifest.exported_at}`);
    const originals = manifest.originals as Array<{ path: string; file_id: number; sha256: string; bytes: number }>;
    assert.deepEqual(originals.map((o) => Number(o.file_id)).sort((x, y) => x - y), [...uploaded.keys()].sort((x, y) => x - y));
    for (const o of originals) {
      assert.match(o.path, /^originals\/[^/]+$/, `path ${o.path}`);
      const bytes = entries.get(o.path);
      assert.ok(bytes !== undefined, `${o.path} is in the ZIP`);
      assert.equal(sha256(bytes), o.sha256, `${o.path}: sha256`);
      assert.equal(bytes.length, o.bytes, `${o.path}: bytes`);
      assert.ok(bytes.equals(uploaded.get(Number(o.file_id)) as Buffer), `${o.path}: the uploaded bytes`);
    }
    const inZip = [...entries.keys()].filter((n) => n.startsWith('originals/')).sort();
    assert.deepEqual(inZip, originals.map((o) => o.path).sort(), 'no original beyond the manifest\'s');
  });

  it('another user\'s export is not found; an unknown one neither; a missing export_id is a 400', async () => {
    expectError(await fx.c.json('GET', `${EXPORT}?export_id=${exportId}`, other.token), 404, 'Export not found');
    expectError(await fx.c.json('GET', `${EXPORT}?export_id=00000000-0000-4000-8000-000000000000`, me.token), 404, 'Export not found');
    expectError(await fx.c.json('GET', EXPORT, me.token), 400, 'export_id is required');
    expectError(await fx.c.json('GET', `${EXPORT}?export_id=`, me.token), 400, 'export_id is required');
    expectError(await fx.c.json('GET', `${EXPORT}?export_id=${exportId}`), 401, 'Missing JWT token');
    expectError(await fx.c.json('POST', EXPORT), 401, 'Missing JWT token');
  });

  it('another user\'s own export holds none of my files', async () => {
    const theirId = await requestExport(fx.c, other);
    const theirs = await exportReady(fx.c, other, theirId);
    const res = await fx.c.bytes(new URL(theirs.download_url, fx.c.baseUrl).toString());
    assert.equal(res.status, 200);
    const theirEntries = readZip(res.bytes);
    const files = listOf(JSON.parse(theirEntries.find((e) => e.name === 'files.json')?.bytes.toString('utf8') ?? '[]'), 'files.json');
    assert.equal(files.length, 2);
    for (const f of files) assert.ok(!uploaded.has(idOf(f)), `file ${idOf(f)} is mine`);
    for (const bytes of uploaded.values()) {
      if (bytes.length > 32) assert.ok(!theirEntries.some((e) => e.bytes.indexOf(bytes) !== -1), 'my bytes are not in their export');
    }
  });
});
