// The typed SDK (@docshare/client, libs/client) end to end against the server: what a client
// developer does with it, from register to a resumed download, and a retried upload done once.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createClient, DocshareApiError, type DocshareClient, type FetchLike, type Progress, type ResponseInfo } from '@docshare/client';
import { randomWord } from '../support/client.ts';
import { useServer } from '../support/fixture.ts';
import { eventually } from '../support/wait.ts';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('SDK (@docshare/client)', () => {
  const fx = useServer();
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'docshare-sdk-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A registered client; `fetch` wraps the real one when given. */
  const newUser = async (opts: { fetch?: FetchLike; onResponse?: (i: ResponseInfo) => void } = {}): Promise<DocshareClient> => {
    const client = createClient({ baseUrl: fx.server.baseUrl, retryBaseDelayMs: 10, ...opts });
    const res = await client.register({ name: 'SDK user', email: `${randomWord(12)}@example.com`, password: 'correct horse battery' });
    assert.equal(res.status, 'success');
    assert.equal(client.token, res.token);
    return client;
  };

  it('register, upload from a path with progress, search finds it, download resumes a partial file', async () => {
    const ranges: (string | null)[] = [];
    const recording: FetchLike = async (input, init) => {
      if (String(input).includes('/content')) ranges.push(new Headers(init?.headers).get('range'));
      return await fetch(input, init);
    };
    const client = await newUser({ fetch: recording });
    const word = randomWord(12);
    const bytes = randomBytes(1_500_000);
    const file = path.join(dir, 'sdk-upload.bin');
    await writeFile(file, bytes);

    const progress: Progress[] = [];
    const up = await client.upload(
      { file, title: `SDK ${word} document`, description: 'Sent by the typed client', tags: ['sdk', 'test'], cc_license: 'cc by', new_category_name: 'SDK tests' },
      { onProgress: (p) => progress.push(p) },
    );
    assert.equal(up.message, 'File uploaded successfully');
    assert.match(up.file_id, /^\d+$/);
    assert.equal(up.category_name, 'SDK tests');
    assert.ok(progress.length >= 2, 'progress is reported');
    assert.deepEqual(progress.at(-1), { loaded: bytes.length, total: bytes.length });
    for (let i = 1; i < progress.length; i += 1) assert.ok((progress[i]?.loaded ?? 0) >= (progress[i - 1]?.loaded ?? 0), 'progress only grows');

    const found = await eventually(async () => {
      const page = await client.search(word);
      assert.deepEqual(page.results.map((r) => r.id), [up.file_id]);
      return page;
    });
    assert.equal(found.results[0]?.title, `SDK ${word} document`);
    assert.equal(found.results[0]?.tag, 'sdk,test');

    const to = path.join(dir, 'copy.bin');
    const first = await client.download(up.file_id, { to });
    assert.equal(first.fileName, 'sdk-upload.bin');
    assert.equal(first.status, 200);
    assert.equal(sha(await readFile(to)), sha(bytes));

    // A download cut short leaves <file>.part: the next one asks only for the rest.
    await rm(to);
    await writeFile(`${to}.part`, bytes.subarray(0, 600_000));
    const dlProgress: Progress[] = [];
    const resumed = await client.download(up.file_id, { to, onProgress: (p) => dlProgress.push(p) });
    assert.equal(resumed.status, 206);
    assert.equal(resumed.resumedFrom, 600_000);
    assert.equal(resumed.bytes, bytes.length);
    assert.deepEqual(ranges, [null, 'bytes=600000-']);
    assert.equal(dlProgress[0]?.loaded, 600_000);
    assert.deepEqual(dlProgress.at(-1), { loaded: bytes.length, total: bytes.length });
    assert.equal(sha(await readFile(to)), sha(bytes), 'the resumed file has the uploaded bytes');
    await assert.rejects(stat(`${to}.part`), { code: 'ENOENT' });

    // Into a directory: the server's file name.
    const inDir = await client.download(up.file_id, { to: dir, resume: false });
    assert.equal(inDir.path, path.join(dir, 'sdk-upload.bin'));

    await eventually(async () => {
      const stats = await client.stats();
      assert.equal(stats.data.total_files, 1);
      assert.equal(stats.data.total_downloads, 3);
    });
  });

  it('a retried upload whose first answer was lost is done once (same Idempotency-Key, replayed answer)', async () => {
    const keys: (string | null)[] = [];
    let lostAnswer: { file_id?: string } | undefined;
    const responses: ResponseInfo[] = [];
    // The first upload reaches the server and is done, but its answer never reaches the client.
    const losing: FetchLike = async (input, init) => {
      const isUpload = String(input).endsWith('/api/V1/docs/api-upload');
      if (isUpload) keys.push(new Headers(init?.headers).get('idempotency-key'));
      const res = await fetch(input, init);
      if (isUpload && keys.length === 1) {
        lostAnswer = await res.json() as { file_id?: string };
        throw new TypeError('fetch failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) });
      }
      return res;
    };
    const client = await newUser({ fetch: losing, onResponse: (i) => responses.push(i) });
    const up = await client.upload({ file: randomBytes(50_000), fileName: 'once.bin', title: 'Once', description: 'd', tags: 'x', cc_license: 'CC0', new_category_name: 'SDK tests' });

    assert.equal(keys.length, 2, 'the upload was sent twice');
    assert.match(keys[0] ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(keys[1], keys[0], 'with the same Idempotency-Key');
    assert.equal(up.file_id, lostAnswer?.file_id, 'the retry got the first answer');
    const replay = responses.find((r) => r.url.endsWith('/api-upload'));
    assert.equal(replay?.headers.get('idempotent-replayed'), 'true');
    const files = await client.files();
    assert.equal(files.total, 1, 'one file');
    assert.equal(String(files.files[0]?.file_id), up.file_id);
  });

  it('comments, updates, sales, categories, file lists and delete through typed methods', async () => {
    const owner = await newUser();
    const buyer = await newUser();
    const word = randomWord(12);
    const up = await owner.upload({ file: Buffer.from(`text ${word}`), fileName: 'notes.txt', title: `Notes ${word}`, description: 'd', tags: 'notes', cc_license: 'CC BY-SA', new_category_name: 'SDK tests' });

    const posted = await buyer.comment(up.file_id, 'Useful, thanks');
    assert.equal(posted.message, 'Comment posted successfully');
    await eventually(async () => {
      const received = await owner.comments();
      assert.deepEqual(received.data.map((c) => [c.comment_id, c.comment]), [[posted.comment_id, 'Useful, thanks']]);
    });

    assert.equal((await owner.update(up.file_id, { title: `Renamed ${word}`, for_sale: true, price: 3 })).message, 'File updated successfully');
    const sale = await buyer.purchase(up.file_id);
    assert.ok(Number.isInteger(sale.sale_id));
    const refused = await buyer.authorizeDownload(up.file_id).catch((e: unknown) => e);
    assert.ok(refused instanceof DocshareApiError);
    assert.equal(refused.message, 'File is either for sale or not enabled');

    const categories = await owner.categories();
    assert.ok(categories.data.some((c) => c.name === 'SDK tests'));
    const mine = await eventually(async () => {
      const list = await owner.files();
      assert.equal(list.files[0]?.title, `Renamed ${word}`);
      return list;
    });
    const theirs = await buyer.files({ user_id: mine.user.id });
    assert.equal(theirs.user.id, mine.user.id);

    assert.equal((await owner.deleteFile(up.file_id)).message, 'File deleted successfully');
    await eventually(async () => assert.deepEqual((await owner.search(word)).results, [], 'no match is an empty page'));
    const gone = await owner.deleteFile(up.file_id).catch((e: unknown) => e);
    assert.ok(gone instanceof DocshareApiError);
    assert.equal(gone.status, 404);
    assert.equal(gone.message, 'File not found');
    assert.match(gone.requestId ?? '', /\S/);
  });

  it('statistics over time through typed methods: dailyStats, topFiles, trending', async () => {
    const owner = await newUser();
    const reader = await newUser();
    const word = randomWord(12);
    const up = await owner.upload({ file: Buffer.from(`text ${word}`), fileName: 'daily.txt', title: `Daily ${word}`, description: 'd', tags: 'daily', cc_license: 'CC BY', new_category_name: 'SDK daily' });
    // Two downloads by one reader and a view of the page by another client: one unique downloader, one viewer.
    await reader.authorizeDownload(up.file_id);
    await reader.authorizeDownload(up.file_id);
    assert.equal((await fetch(`${fx.server.baseUrl}/docs/${up.file_id}`, { headers: { 'User-Agent': `sdk-test-${word}` } })).status, 200);
    // The days around the client's today (the server's may have turned already).
    const day = (offset: number): string => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const today = day(0);
    const daily = await eventually(async () => {
      const answer = await owner.dailyStats({ from: day(-1), to: day(1), fileId: up.file_id });
      assert.deepEqual([answer.totals.views, answer.totals.unique_viewers, answer.totals.downloads], [1, 1, 2]);
      return answer;
    });
    assert.equal(daily.timezone, 'UTC');
    assert.deepEqual(daily.days.map((d) => d.date), [day(-1), today, day(1)]);
    assert.ok(daily.totals.unique_downloaders >= 1 && daily.totals.unique_downloaders <= 2, 'one reader (two if the day turned between the downloads)');
    const top = await owner.topFiles({ metric: 'downloads', days: 2 });
    assert.deepEqual(top.results.map((r) => [r.id, r.value]), [[String(up.file_id), 2]]);
    const trending = await reader.trending({ hours: 2, limit: 50 });
    assert.ok(trending.results.some((r) => r.id === String(up.file_id) && r.title === `Daily ${word}` && r.category === 'SDK daily'));
    const refused = await owner.dailyStats({ from: today, to: '2020-01-01' }).catch((e: unknown) => e);
    assert.ok(refused instanceof DocshareApiError);
    assert.equal(refused.status, 400);
    assert.equal(refused.message, 'from must not be after to');
  });

  it('searchAll walks every page through next_cursor', async () => {
    const client = await newUser();
    const word = randomWord(12);
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      ids.push((await client.upload({ file: Buffer.from(`n${i}`), fileName: `p${i}.txt`, title: `${word} part ${i}`, description: 'd', tags: 't', cc_license: 'CC BY', new_category_name: 'SDK tests' })).file_id);
    }
    const page = await eventually(async () => {
      const first = await client.search(word, { per_page: 2, facets: true });
      assert.equal(first.total, 5);
      return first;
    });
    assert.equal(page.results.length, 2);
    assert.equal(typeof page.next_cursor, 'string');
    assert.equal(page.facets?.category[0]?.name, 'SDK tests');
    const seen: string[] = [];
    for await (const r of client.searchAll(word, { per_page: 2 })) seen.push(r.id);
    assert.deepEqual([...seen].sort(), [...ids].sort());
  });

  it('a bad token is a DocshareApiError 401 "Invalid JWT token", not retried', async () => {
    let calls = 0;
    const client = createClient({ baseUrl: fx.server.baseUrl, token: 'not.a.jwt', fetch: async (i, init) => { calls += 1; return await fetch(i, init); } });
    const error = await client.stats().catch((e: unknown) => e);
    assert.ok(error instanceof DocshareApiError);
    assert.equal(error.status, 401);
    assert.equal(error.message, 'Invalid JWT token');
    assert.equal(calls, 1);
  });
});
