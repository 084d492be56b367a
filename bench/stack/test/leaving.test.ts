/**
 * bench/stack/leaving.ts against a fake docshare that answers issue 24's routes as the design
 * says (§3): the export and the erasure are pending for a few polls, then ready / done; links
 * carry another origin than the one the bench reaches.
 *   npm exec -- node --test --test-reporter=spec bench/stack/test/leaving.test.ts
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { Api } from '../api.ts';
import { leaving, leavingLines, onBase, until } from '../leaving.ts';

const ZIP = Buffer.from('PK fake zip bytes');

interface Fake { server: Server; base: string; seen: string[]; erasePolls: number; exportPolls: number; statsChange: boolean; erased: boolean }

const startFake = async (): Promise<Fake> => {
  const fake: Fake = { server: createServer(), base: '', seen: [], erasePolls: 0, exportPolls: 0, statsChange: false, erased: false };
  let ids = 0;
  const send = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const url = new URL(req.url!, 'http://x');
    fake.seen.push(`${req.method} ${url.pathname}`);
    const token = req.headers['x-authorization'];
    const route = `${req.method} ${url.pathname}`;
    if (route === 'POST /api/V1/users/api-register') {
      const { name } = JSON.parse(body) as { name: string };
      return send(res, 200, { status: 'success', user_id: String(++ids), token: name === 'Leaving User' ? 'leaver' : 'neighbour' });
    }
    if (route === 'POST /api/V1/docs/api-upload') return send(res, 200, { status: 'success', file_id: String(++ids) });
    if (route === 'POST /api/V1/docs/api-comment') return send(res, 200, { status: 'success' });
    if (route === 'POST /api/V1/stats/api-stats') {
      if (fake.erased && token === 'Bearer leaver') return send(res, 401, { status: 'error', message: 'Invalid JWT token' });
      return send(res, 200, { status: 'success', data: { total_comments: fake.erased && fake.statsChange ? 1 : 5 } });
    }
    if (route === 'POST /api/V1/users/api-export') return send(res, 202, { status: 'success', message: 'Export started', export_id: 'e-1' });
    if (route === 'GET /api/V1/users/api-export') {
      assert.equal(url.searchParams.get('export_id'), 'e-1');
      fake.exportPolls += 1;
      if (fake.exportPolls < 3) return send(res, 200, { status: 'success', export: { state: 'pending' } });
      return send(res, 200, {
        status: 'success',
        export: {
          state: 'ready', download_url: 'https://docs.example.com/api/V1/users/api-export/e-1/content?user=1&expires=9&signature=s',
          sha256: createHash('sha256').update(ZIP).digest('hex'), bytes: ZIP.length, expires_at: 'later',
        },
      });
    }
    if (route === 'GET /api/V1/users/api-export/e-1/content') {
      assert.equal(url.searchParams.get('signature'), 's');
      return void res.writeHead(200, { 'content-type': 'application/zip' }).end(ZIP);
    }
    if (route === 'POST /api/V1/users/api-erase') {
      assert.deepEqual(JSON.parse(body), { password: 'bench-password' });
      fake.erased = true;
      return send(res, 202, { status: 'success', message: 'Account erasure started', erasure_id: 'x-1', status_url: 'https://docs.example.com/api/V1/users/api-erase/status/x-1?user=1&expires=9&signature=t' });
    }
    if (route === 'GET /api/V1/users/api-erase/status/x-1') {
      assert.equal(token, undefined, 'the status link needs no token');
      fake.erasePolls += 1;
      const done = fake.erasePolls >= 4;
      return send(res, 200, { status: 'success', erasure_id: 'x-1', state: done ? 'done' : 'pending', files_deleted: done ? 3 : 0, comments_redacted: done ? 2 : 0 });
    }
    send(res, 404, { status: 'error', message: 'Not found' });
  };
  fake.server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString()));
  });
  await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
  fake.base = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
  return fake;
};

let fake: Fake;
before(async () => { fake = await startFake(); });
after(() => new Promise<void>((resolve) => fake.server.close(() => resolve())));

test('a link the API answered is asked of the base the bench reaches, path and query kept', () => {
  assert.equal(onBase('http://127.0.0.1:9', 'https://docs.example.com/a/b?x=1&y=2'), 'http://127.0.0.1:9/a/b?x=1&y=2');
  assert.equal(onBase('http://127.0.0.1:9', '/a?x=1'), 'http://127.0.0.1:9/a?x=1');
});

test('until answers the first value, and names what was not reached in time', async () => {
  let calls = 0;
  assert.equal(await until('three', 5000, async () => (++calls >= 3 ? 'yes' : undefined)), 'yes');
  assert.equal(calls, 3);
  await assert.rejects(until('never', 50, async () => undefined), /never: not reached within 50 ms/);
  await assert.rejects(until('broken', 5000, async () => { throw new Error('boom'); }), /boom/);
});

test('export then erasure: waits through pending, checks the ZIP, reads the counts and the neighbour', async () => {
  fake.statsChange = false;
  const options = { files: 3, comments: 4, clients: 2, timeoutMs: 10_000, tag: 't1' };
  const result = await leaving(new Api(fake.base), options);
  assert.ok(fake.exportPolls >= 3 && fake.erasePolls >= 4, 'polled until ready and done');
  assert.equal(fake.seen.filter((s) => s === 'POST /api/V1/docs/api-upload').length, 3 + 20);
  assert.equal(fake.seen.filter((s) => s === 'POST /api/V1/docs/api-comment').length, 4);
  assert.deepEqual(result.export.sha256Matches, true);
  assert.equal(result.export.bytes, ZIP.length);
  assert.deepEqual({ ...result.erasure, doneMs: 0 }, { doneMs: 0, filesDeleted: 3, commentsRedacted: 2, neighbourStatsUnchanged: true, tokenRefused: true });
  assert.ok(result.export.readyMs >= 0 && result.erasure.doneMs >= 0);
  const lines = leavingLines(options, result).join('\n');
  assert.match(lines, /files_deleted 3, comments_redacted 2/);
  assert.match(lines, /sha256 matches/);
});

test('a neighbour whose statistics moved is reported', async () => {
  fake.erasePolls = 0;
  fake.exportPolls = 0;
  fake.statsChange = true;
  fake.erased = false;
  const result = await leaving(new Api(fake.base), { files: 1, comments: 0, clients: 1, timeoutMs: 10_000, tag: 't2' });
  assert.equal(result.erasure.neighbourStatsUnchanged, false);
  assert.match(leavingLines({ files: 1, comments: 0, clients: 1, timeoutMs: 1, tag: '' }, result).join('\n'), /neighbour's api-stats CHANGED/);
});
