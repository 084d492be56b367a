// The SDK against a scripted HTTP server: retries and Idempotency-Key, errors, the streamed
// multipart body, downloads that resume. (End to end against the real server: tests/conformance/sdk.test.ts.)
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import busboy from 'busboy';
import {
  createClient, DocshareApiError, DocshareNetworkError, parseContentRange, parseRetryAfter, request, ResponseTooLargeError, safeFileName,
  SearchWalkError, type Progress, type RetryInfo,
} from '../src/index.ts';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

type Handler = (req: Seen, res: http.ServerResponse, socket: Socket) => void;

/** A server whose answers the test scripts, one handler per request in turn (the last one repeats). */
async function scripted(): Promise<{ url: string; seen: Seen[]; script(...handlers: Handler[]): void; close(): Promise<void> }> {
  let handlers: Handler[] = [];
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      seen.push(s);
      const h = handlers.length > 1 ? handlers.shift() : handlers[0];
      h?.(s, res, req.socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    script: (...h) => {
      handlers = h;
      seen.length = 0;
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Handler => (_req, res) => {
  res.writeHead(status, { 'Content-Type': 'application/json', 'X-Request-Id': `rid-${status}`, ...headers });
  res.end(JSON.stringify(body));
};
const drop: Handler = (_req, _res, socket) => socket.destroy();

describe('@docshare/client', () => {
  let srv: Awaited<ReturnType<typeof scripted>>;
  let dir: string;
  before(async () => {
    srv = await scripted();
    dir = await mkdtemp(path.join(os.tmpdir(), 'docshare-client-'));
  });
  after(async () => {
    await srv.close();
    await rm(dir, { recursive: true, force: true });
  });

  const client = (more: Partial<Parameters<typeof createClient>[0]> = {}) =>
    createClient({ baseUrl: `${srv.url}/`, token: 'tok', retryBaseDelayMs: 1, ...more });

  it('sends the token, JSON and a User-Agent; resolves with the JSON answer', async () => {
    srv.script(json(200, { status: 'success', data: { total_files: 1 } }));
    const body = await client().stats();
    assert.deepEqual(body, { status: 'success', data: { total_files: 1 } });
    const [req] = srv.seen;
    assert.equal(req?.method, 'POST');
    assert.equal(req?.url, '/api/V1/stats/api-stats');
    assert.equal(req?.headers['x-authorization'], 'Bearer tok');
    assert.match(String(req?.headers['user-agent']), /^docshare-client\//);
    assert.equal(req?.headers['idempotency-key'], undefined, 'reads carry no Idempotency-Key');
  });

  it('statistics over time: GETs with their query (snake_case, nothing sent for what is not given), the token, no body', async () => {
    const daily = {
      status: 'success', timezone: 'UTC', from: '2025-11-22', to: '2025-11-22',
      days: [{ date: '2025-11-22', views: 3, unique_viewers: 2, downloads: 1, unique_downloaders: 1, sales: 0, comments: 0 }],
      totals: { views: 3, unique_viewers: 2, downloads: 1, unique_downloaders: 1, sales: 0, comments: 0 },
    };
    srv.script(json(200, daily));
    const c = client();
    assert.deepEqual(await c.dailyStats({ from: '2025-11-22', to: '2025-11-22', fileId: 12 }), daily);
    await c.dailyStats({ from: '2025-11-01', to: '2025-11-30' });
    srv.script(json(200, { status: 'success', results: [{ id: '4', title: 'A', link: 'http://x/docs/4', value: 9 }] }));
    assert.equal((await c.topFiles({ metric: 'unique_viewers', days: 30, limit: 5 })).results[0]?.value, 9);
    await c.topFiles();
    srv.script(json(200, { status: 'success', results: [] }));
    assert.deepEqual((await c.trending({ hours: 6, categoryId: '3', limit: 20 })).results, []);
    await c.trending();
    const urls = srv.seen.map((s) => s.url);
    assert.deepEqual(urls, ['/api/V1/stats/api-trending?hours=6&category_id=3&limit=20', '/api/V1/stats/api-trending']);
    for (const req of srv.seen) {
      assert.equal(req.method, 'GET');
      assert.equal(req.headers['x-authorization'], 'Bearer tok');
      assert.equal(req.body.length, 0);
    }
  });

  it('statistics over time: the paths and queries of daily and top', async () => {
    srv.script(json(200, { status: 'success', results: [] }));
    const c = client();
    await c.dailyStats({ from: '2025-11-22', to: '2025-11-23', fileId: 12 });
    await c.dailyStats({ from: '2025-11-01', to: '2025-11-30' });
    await c.topFiles({ metric: 'unique_viewers', days: 30, limit: 5 });
    await c.topFiles();
    assert.deepEqual(srv.seen.map((s) => s.url), [
      '/api/V1/stats/api-daily?from=2025-11-22&to=2025-11-23&file_id=12',
      '/api/V1/stats/api-daily?from=2025-11-01&to=2025-11-30',
      '/api/V1/stats/api-top?metric=unique_viewers&days=30&limit=5',
      '/api/V1/stats/api-top',
    ]);
  });

  it('throws DocshareApiError with status, message, requestId and retryAfter; a 4xx is not retried', async () => {
    srv.script(json(404, { status: 'error', message: 'File not found' }));
    const error = await client().deleteFile(7).catch((e: unknown) => e);
    assert.ok(error instanceof DocshareApiError);
    assert.equal(error.status, 404);
    assert.equal(error.message, 'File not found');
    assert.equal(error.requestId, 'rid-404');
    assert.equal(error.retryAfter, undefined);
    assert.equal(srv.seen.length, 1);
    assert.deepEqual(JSON.parse(srv.seen[0]?.body.toString() ?? ''), { id: '7' });
  });

  it('retries a write after 503 and a dropped connection with the same Idempotency-Key', async () => {
    const retries: RetryInfo[] = [];
    srv.script(json(503, { status: 'error', message: 'Service unavailable, try again later' }, { 'Retry-After': '0' }), drop,
      json(201, { status: 'success', message: 'Comment posted successfully', comment_id: 3 }));
    const body = await client({ onRetry: (i) => retries.push(i) }).comment('5', 'hello');
    assert.equal(body.comment_id, 3);
    assert.equal(srv.seen.length, 3);
    const keys = srv.seen.map((s) => s.headers['idempotency-key']);
    assert.match(String(keys[0]), /^[0-9a-f-]{36}$/);
    assert.ok(keys.every((k) => k === keys[0]), `one key for every attempt: ${keys.join(', ')}`);
    assert.equal(retries.length, 2);
    assert.match(retries[0]?.reason ?? '', /503/);
  });

  it('two calls get two keys; a key given by the caller is used', async () => {
    srv.script(json(200, { status: 'success', message: 'File deleted successfully' }));
    const c = client();
    await c.deleteFile(1);
    await c.deleteFile(1);
    await c.deleteFile(1, { idempotencyKey: 'my-key-1' });
    const keys = srv.seen.map((s) => s.headers['idempotency-key']);
    assert.notEqual(keys[0], keys[1]);
    assert.equal(keys[2], 'my-key-1');
  });

  it('honours Retry-After on 429, and gives up when it is longer than maxRetryDelayMs', async () => {
    srv.script(json(429, { status: 'error', message: 'Rate limit exceeded. Please try again later.' }, { 'Retry-After': '0' }),
      json(200, { status: 'success', data: [] , total: 0, page: 1, per_page: 100 }));
    await client().comments();
    assert.equal(srv.seen.length, 2);

    srv.script(json(429, { status: 'error', message: 'Rate limit exceeded. Please try again later.' }, { 'Retry-After': '120' }));
    const error = await client({ maxRetryDelayMs: 1000 }).comments().catch((e: unknown) => e);
    assert.ok(error instanceof DocshareApiError);
    assert.equal(error.status, 429);
    assert.equal(error.retryAfter, 120);
    assert.equal(srv.seen.length, 1);
  });

  it('retries a 409 "still in progress" of its own key, not another 409', async () => {
    srv.script(json(409, { status: 'error', message: 'A request with this Idempotency-Key is still in progress' }),
      json(201, { status: 'success', message: 'User registered successfully', user_id: 4, token: 'new' }));
    const c = client({ token: undefined });
    const body = await c.register({ name: 'A', email: 'a@example.com', password: 'long enough' });
    assert.equal(body.user_id, 4);
    assert.equal(c.token, 'new', 'register keeps the token');
    assert.equal(srv.seen.length, 2);

    srv.script(json(409, { status: 'error', message: 'Email already registered' }));
    await assert.rejects(c.register({ name: 'A', email: 'a@example.com', password: 'long enough' }), { status: 409, message: 'Email already registered' });
    assert.equal(srv.seen.length, 1);
  });

  it('a server that cannot be reached is a DocshareNetworkError after the retries', async () => {
    const retries: RetryInfo[] = [];
    // A port nothing listens on: one that was just free.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const c = createClient({ baseUrl: `http://127.0.0.1:${port}`, retries: 2, retryBaseDelayMs: 1, onRetry: (i) => retries.push(i) });
    const error = await c.stats().catch((e: unknown) => e);
    assert.ok(error instanceof DocshareNetworkError, String(error));
    assert.match(error.message, new RegExp(`cannot reach http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
    assert.equal(retries.length, 2);
  });

  it('search: a "No results found" 404 is an empty page; searchAll follows next_cursor', async () => {
    srv.script(json(404, { status: 'error', message: 'No results found' }));
    assert.deepEqual(await client().search('nothing', { per_page: 5 }), { status: 'success', results: [], total: 0, page: 1, per_page: 5 });

    const hit = (id: string) => ({ id, title: id, link: 'l', description: 'd', category: 'c', tag: 't', snippet: 's' });
    srv.script(
      json(200, { status: 'success', results: [hit('1'), hit('2')], total: 3, page: 1, per_page: 2, next_cursor: 'c1' }),
      json(200, { status: 'success', results: [hit('3')], total: 3, page: 2, per_page: 2 }),
    );
    const ids = [];
    for await (const r of client().searchAll('x', { per_page: 2, filters: { tags: ['a'] } })) ids.push(r.id);
    assert.deepEqual(ids, ['1', '2', '3']);
    assert.deepEqual(JSON.parse(srv.seen[1]?.body.toString() ?? ''), { search: 'x', per_page: 2, filters: { tags: ['a'] }, cursor: 'c1' });
  });

  it('upload streams a multipart body with its exact Content-Length and reports progress', async () => {
    const data = randomBytes(700_000);
    const file = path.join(dir, 'report "final".pdf');
    await writeFile(file, data);
    srv.script(json(201, { status: 'success', message: 'File uploaded successfully', file_id: '9', category_id: '2', category_name: 'Docs' }));
    const progress: Progress[] = [];
    const body = await client().upload(
      { file, title: 'T', description: 'D\nline', tags: ['a', 'b'], cc_license: 'CC BY', new_category_name: 'Docs' },
      { onProgress: (p) => progress.push(p) },
    );
    assert.equal(body.file_id, '9');
    const [req] = srv.seen;
    assert.equal(Number(req?.headers['content-length']), req?.body.length, 'Content-Length is the body\'s length');
    assert.match(String(req?.headers['idempotency-key']), /^[0-9a-f-]{36}$/);
    const fields: Record<string, string> = {};
    let got: { name: string; type: string; bytes: Buffer } | undefined;
    await new Promise<void>((resolve, reject) => {
      const bb = busboy({ headers: req?.headers });
      bb.on('field', (name, value) => { fields[name] = value; });
      bb.on('file', (_name, stream, info) => {
        const parts: Buffer[] = [];
        stream.on('data', (c: Buffer) => parts.push(c));
        stream.on('end', () => { got = { name: info.filename ?? '', type: info.mimeType, bytes: Buffer.concat(parts) }; });
      });
      bb.on('close', resolve);
      bb.on('error', reject);
      bb.end(req?.body);
    });
    assert.deepEqual(fields, { title: 'T', description: 'D\r\nline', tags: 'a,b', cc_license: 'CC BY', new_category_name: 'Docs' });
    assert.equal(got?.type, 'application/pdf');
    assert.ok(got?.bytes.equals(data), 'the file part holds the bytes');
    assert.equal(progress[0]?.loaded, 0);
    assert.deepEqual(progress.at(-1), { loaded: data.length, total: data.length });
    for (let i = 1; i < progress.length; i += 1) assert.ok((progress[i]?.loaded ?? 0) >= (progress[i - 1]?.loaded ?? 0));
  });

  it('an upload from a stream goes chunked and is not retried (it cannot be read twice)', async () => {
    srv.script(json(503, { status: 'error', message: 'Service unavailable, try again later' }, { 'Retry-After': '0' }));
    const stream = Readable.from([Buffer.from('abc'), Buffer.from('def')]);
    await assert.rejects(client().upload({ file: stream, fileName: 's.txt', title: 'T', description: 'D', tags: 'a', cc_license: 'CC BY', category_id: '1' }), { status: 503 });
    assert.equal(srv.seen.length, 1);
    assert.equal(srv.seen[0]?.headers['content-length'], undefined);
    assert.equal(srv.seen[0]?.headers['transfer-encoding'], 'chunked');
  });

  describe('download', () => {
    const content = randomBytes(300_000);
    const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
    /** The authorisation, then the bytes with Range support (unless `ignoreRange`). */
    const serve = (ignoreRange = false): Handler[] => {
      const bytes: Handler = (req, res) => {
        const m = /^bytes=(\d+)-$/.exec(String(req.headers['range'] ?? ''));
        if (m && !ignoreRange) {
          const start = Number(m[1]);
          if (start >= content.length) {
            res.writeHead(416, { 'Content-Range': `bytes */${content.length}`, 'Content-Type': 'application/json' });
            return void res.end('{"status":"error","message":"Range not satisfiable"}');
          }
          res.writeHead(206, { 'Content-Range': `bytes ${start}-${content.length - 1}/${content.length}`, 'Content-Length': String(content.length - start) });
          return void res.end(content.subarray(start));
        }
        res.writeHead(200, { 'Content-Length': String(content.length), 'Content-Type': 'application/octet-stream' });
        res.end(content);
      };
      const authorize = json(200, { status: 'success', message: 'File ready for download', original_file_name: '../../etc/Quarterly.bin', download_url: `${srv.url}/files/1/content?expires=1&signature=ab` });
      return [authorize, bytes];
    };

    it('saves under the safe original name in a directory, with progress up to the size', async () => {
      srv.script(...serve());
      const progress: Progress[] = [];
      const res = await client().download(1, { to: dir, onProgress: (p) => progress.push(p) });
      assert.equal(res.path, path.join(dir, 'Quarterly.bin'));
      assert.equal(res.fileName, '../../etc/Quarterly.bin');
      assert.equal(res.status, 200);
      assert.equal(sha(await readFile(res.path)), sha(content));
      assert.deepEqual(progress.at(-1), { loaded: content.length, total: content.length });
      assert.equal(srv.seen[1]?.headers['x-authorization'], undefined, 'the signed URL is fetched without the token');
    });

    it('resumes a .part with a Range request', async () => {
      const to = path.join(dir, 'resumed.bin');
      await writeFile(`${to}.part`, content.subarray(0, 123_456));
      srv.script(...serve());
      const res = await client().download(1, { to });
      assert.equal(srv.seen[1]?.headers['range'], 'bytes=123456-');
      assert.equal(res.status, 206);
      assert.equal(res.resumedFrom, 123_456);
      assert.equal(sha(await readFile(to)), sha(content));
      await assert.rejects(stat(`${to}.part`), { code: 'ENOENT' });
    });

    it('starts again when the server ignores the Range; a whole .part (416) is only renamed', async () => {
      const to = path.join(dir, 'again.bin');
      await writeFile(`${to}.part`, content.subarray(0, 1000));
      srv.script(...serve(true));
      const res = await client().download(1, { to });
      assert.equal(res.status, 200);
      assert.equal(res.resumedFrom, 0);
      assert.equal(sha(await readFile(to)), sha(content));

      const whole = path.join(dir, 'whole.bin');
      await writeFile(`${whole}.part`, content);
      srv.script(...serve());
      const again = await client().download(1, { to: whole });
      assert.equal(again.status, 416);
      assert.equal(sha(await readFile(whole)), sha(content));
    });

    it('overwrite: false refuses an existing file before fetching bytes', async () => {
      const to = path.join(dir, 'exists.bin');
      await writeFile(to, 'mine');
      srv.script(...serve());
      await assert.rejects(client().download(1, { to, overwrite: false }), { code: 'EEXIST' });
      assert.equal(srv.seen.length, 1, 'only the authorisation');
      assert.equal(await readFile(to, 'utf8'), 'mine');
    });
  });

  it('request() never throws on a status and parses JSON when there is some', async () => {
    srv.script((_req, res) => {
      res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end('oops');
    });
    const res = await request({ baseUrl: srv.url, method: 'GET', path: '/x', headers: { 'X-A': '1' } });
    assert.equal(res.status, 500);
    assert.equal(res.text, 'oops');
    assert.equal(res.body, undefined);
    assert.equal(srv.seen[0]?.headers['x-a'], '1');
    assert.equal(srv.seen[0]?.headers['x-authorization'], undefined);
  });

  it('helpers: Retry-After, Content-Range, safe file names', () => {
    assert.equal(parseRetryAfter('5'), 5);
    assert.equal(parseRetryAfter(new Date(Date.now() + 10_000).toUTCString()) !== undefined, true);
    assert.equal(parseRetryAfter(null), undefined);
    assert.deepEqual(parseContentRange('bytes 10-19/100'), { start: 10, end: 19, total: 100 });
    assert.deepEqual(parseContentRange('bytes */100'), { start: undefined, end: undefined, total: 100 });
    assert.equal(safeFileName('..\\..\\win.ini', 'f'), 'win.ini');
    assert.equal(safeFileName('.bashrc', 'f'), 'bashrc');
    assert.equal(safeFileName('../', 'fallback'), 'fallback');
    assert.equal(safeFileName('a\u0000b\nc.txt', 'f'), 'abc.txt');
    // C1 controls and bidi overrides, isolates and embeddings: "invoice\u202Efdp.exe" shows as "invoiceexe.pdf".
    assert.equal(safeFileName('invoice\u202efdp.exe', 'f'), 'invoicefdp.exe');
    assert.equal(safeFileName('\u009b2Ja\u2066b\u2069\u202a.txt', 'f'), '2Jab.txt');
  });

  it('searchAll ends a walk the server would never end: a cursor sent twice, or past maxPages', async () => {
    const hit = (id: string) => ({ id, title: id, link: 'l', description: 'd', category: 'c', tag: 't', snippet: 's' });
    const page = (id: string, cursor: string) => json(200, { status: 'success', results: [hit(id)], total: 9, page: 1, per_page: 1, next_cursor: cursor });
    srv.script(page('1', 'a'), page('2', 'b'), page('3', 'a'));
    const ids: string[] = [];
    await assert.rejects(async () => { for await (const r of client().searchAll('x')) ids.push(r.id); }, SearchWalkError);
    assert.deepEqual(ids, ['1', '2', '3']);

    let n = 0;
    srv.script((_req, res) => { n += 1; json(200, { status: 'success', results: [hit(String(n))], total: 9, page: n, per_page: 1, next_cursor: `c${n}` })(_req, res, res.socket!); });
    ids.length = 0;
    await assert.rejects(async () => { for await (const r of client().searchAll('x', { maxPages: 5 })) ids.push(r.id); }, /more than 5 pages/);
    assert.deepEqual(ids, ['1', '2', '3', '4', '5']);
    assert.equal(srv.seen.length, 5);
  });

  it('an answer over the size bound is not asked for again', async () => {
    srv.script((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': String(2 * 1024 ** 3) });
      res.end();
    });
    const retried: RetryInfo[] = [];
    await assert.rejects(client({ retries: 3, onRetry: (info) => retried.push(info) }).stats(), ResponseTooLargeError);
    assert.deepEqual(retried, []);
    assert.equal(srv.seen.length, 1);
  });
});
