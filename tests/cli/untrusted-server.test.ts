// The `docshare` bin as a process against a hostile HTTP server (issue 17, findings 4 and 9): a
// 400 MB answer fails with the documented error after reading at most the bound, the process's
// peak memory staying far from the 1.78 GB it reached; a never-ending next_cursor stops; what the
// server sends shows on a terminal as escapes.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT } from '../support/server.ts';

const BIN = path.join(REPO_ROOT, 'libs', 'cli', 'bin', 'docshare.js');
const MiB = 1024 * 1024;
/** The SDK's bound on an answer (libs/client/src/request.ts, docs/client.md). */
const BOUND = 64 * MiB;
/** Reports the process's peak resident memory (KiB) on stderr as it exits. */
const PEAK_RSS = 'data:text/javascript,process.on("exit",()=>process.stderr.write(`peak-rss-kib ${process.resourceUsage().maxRSS}\\n`))';

interface Run { code: number; stdout: string; stderr: string; peakRssMiB: number }

describe('docshare against a server it must not trust', () => {
  let server: http.Server;
  let url = '';
  let tmp = '';
  let handler: (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void = () => {};
  /** Bytes the server handed to each answer's socket. */
  const written: number[] = [];

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-hostile-'));
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => { body += c.toString(); });
      req.on('end', () => handler(req, body, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(tmp, { recursive: true, force: true });
  });

  const docshare = (args: string[]): Promise<Run> => new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: tmp, XDG_CONFIG_HOME: path.join(tmp, 'config'), DOCSHARE_URL: url, DOCSHARE_TOKEN: 'token' };
    delete env['NODE_TEST_CONTEXT'];
    delete env['NODE_OPTIONS'];
    // NODE_OPTIONS carried npm's --conditions=@docshare/source (.npmrc): the sources, not a build in dist/.
    const child = execFile(process.execPath, ['--conditions=@docshare/source', '--import', PEAK_RSS, BIN, ...args], { env, maxBuffer: 64 * MiB }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      const peak = Number(/peak-rss-kib (\d+)/.exec(stderr)?.[1] ?? NaN);
      resolve({ code, stdout, stderr: stderr.replace(/peak-rss-kib \d+\n/, ''), peakRssMiB: peak / 1024 });
    });
    child.stdin?.end();
  });

  it('a 400 MB answer: exit 5 with "larger than 64 MiB", at most the bound read, peak memory far below the answer', async () => {
    written.length = 0;
    handler = (_req, _body, res) => {
      const i = written.push(0) - 1;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const chunk = Buffer.alloc(MiB, 0x61);
      const pump = (): void => {
        while (!res.destroyed && (written[i] ?? 0) < 400 * MiB) {
          written[i] = (written[i] ?? 0) + chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end();
      };
      pump();
    };
    const r = await docshare(['stats', '--retries', '0']);
    assert.equal(r.code, 5, r.stderr);
    assert.equal(r.stderr, "docshare: the server's answer is larger than 64 MiB: refused\n");
    assert.equal(written.length, 1);
    // What the client read, plus what the sockets' buffers held when it cut the connection.
    assert.ok((written[0] ?? 0) < BOUND + 32 * MiB, `the server wrote ${(written[0] ?? 0) / MiB} MiB`);
    // Reading the answer whole took 1.78 GB; bounded, the process stays within a few times the bound.
    assert.ok(r.peakRssMiB < 400, `peak RSS ${r.peakRssMiB.toFixed(0)} MiB`);
    console.log(`# 400 MB answer: server wrote ${((written[0] ?? 0) / MiB).toFixed(0)} MiB, CLI peak RSS ${r.peakRssMiB.toFixed(0)} MiB`);
  });

  it('a next_cursor that never ends: search --all stops at --max-pages with exit 8', async () => {
    let n = 0;
    handler = (_req, _body, res) => {
      n += 1;
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({
        status: 'success', results: [{ id: String(n), title: 't', link: `${url}/docs/${n}`, description: '', category: 'c', tag: '', snippet: '' }],
        total: 1e9, page: n, per_page: 1, next_cursor: `cursor-${n}`,
      }));
    };
    const r = await docshare(['search', 'anything', '--all', '--max-pages', '20', '-q']);
    assert.equal(r.code, 8, r.stderr);
    assert.equal(n, 20);
    assert.equal(r.stdout.trim().split('\n').length, 20);
    assert.match(r.stderr, /stopped after 20 pages/);
  });

  it('comments with terminal escapes show as text', async () => {
    const evil = 'hi\u001b]0;owned\u0007\u001b[2J\u001b]52;c;cm0gLXJm\u0007\u009b1m\u202eexe.txt';
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({
        status: 'success', data: [{ comment_id: 1, submission_date: '2026-01-01', title: evil, comment: evil, link: `${url}/docs/1` }], total: 1, page: 1, per_page: 100,
      }));
    };
    const r = await docshare(['comments']);
    assert.equal(r.code, 0, r.stderr);
    // eslint-disable-next-line no-control-regex -- what must not reach the terminal
    assert.doesNotMatch(r.stdout, /[\u001b\u0007\u009b\u202e]/);
    assert.match(r.stdout, /hi\\x1b\]0;owned\\x07\\x1b\[2J\\x1b\]52;c;cm0gLXJm\\x07\\x9b1m\\u202eexe\.txt/);
  });
});
