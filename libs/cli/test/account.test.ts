// `docshare account ...` in-process against a played server: export (its id; --wait until ready;
// --out downloads the ZIP and checks its SHA-256, refusing one that does not match), erase (the
// password from $DOCSHARE_PASSWORD, the saved token removed, a wrong password's exit code), the
// group's help. (End to end against a server: tests/cli/account.test.ts.)
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readConfig, writeConfig } from '../src/config.ts';
import { EXIT } from '../src/exit.ts';
import { jsonResponse, runCli } from './harness.ts';

let home: string;
before(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-account-'));
});
after(async () => {
  await rm(home, { recursive: true, force: true });
});

const env = { DOCSHARE_URL: 'http://api.test', DOCSHARE_TOKEN: 'tok' };
const EXPORT_ID = 'd1e8a3b5-7c2f-4e9a-b6d4-3a5c7e9f1b28';
const ZIP = Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(5_000, 3)]);
const LINK = `http://api.test/api/V1/users/api-export/${EXPORT_ID}/content?user=4&expires=1&signature=ab`;
const ready = (sha256: string) => ({ state: 'ready', download_url: LINK, sha256, bytes: ZIP.byteLength, expires_at: '2025-11-30T14:06:27.000Z' });
const sha = createHash('sha256').update(ZIP).digest('hex');

/** The server: an export started, pending `pending` times, then ready with `sha256`; the ZIP behind its link. */
const exportServer = (pending: number, sha256 = sha) => (url: string, init?: RequestInit): Response => {
  if (url === LINK) return new Response(ZIP, { status: 200, headers: { 'Content-Type': 'application/zip', 'Content-Length': String(ZIP.byteLength) } });
  if (init?.method === 'POST') return jsonResponse(202, { status: 'success', message: 'Export started', export_id: EXPORT_ID });
  if (pending-- > 0) return jsonResponse(200, { status: 'success', export: { state: 'pending' } });
  return jsonResponse(200, { status: 'success', export: ready(sha256) });
};

describe('docshare account', () => {
  it('export: POSTs, prints the export id (-q: only it)', async () => {
    const r = await runCli(['account', 'export', '-q'], { home, env, answer: exportServer(0) });
    assert.equal(r.code, EXIT.ok, r.stderr);
    assert.equal(r.stdout, `${EXPORT_ID}\n`);
    assert.deepEqual(r.calls.map((c) => `${c.init?.method ?? 'GET'} ${c.url}`), ['POST http://api.test/api/V1/users/api-export']);
  });

  it('export --wait: asks until ready, prints the link', async () => {
    const r = await runCli(['account', 'export', '--wait', '--interval-ms', '1', '-q'], { home, env, answer: exportServer(2) });
    assert.equal(r.code, EXIT.ok, r.stderr);
    assert.equal(r.stdout, `${LINK}\n`);
    assert.deepEqual(r.calls.map((c) => c.url).slice(1), Array(3).fill(`http://api.test/api/V1/users/api-export?export_id=${EXPORT_ID}`));
  });

  it('export --out: waits, downloads the ZIP without the token, checks its SHA-256', async () => {
    const r = await runCli(['account', 'export', '--out', 'mine.zip', '--interval-ms', '1'], { home, env, answer: exportServer(1) });
    assert.equal(r.code, EXIT.ok, r.stderr);
    const file = path.join(home, 'mine.zip');
    assert.ok((await readFile(file)).equals(ZIP));
    assert.match(r.stdout, new RegExp(`Saved export ${EXPORT_ID} to .*mine\\.zip \\(${ZIP.byteLength} bytes, sha256 ${sha} checked\\)`));
    const download = r.calls.find((c) => c.url === LINK);
    assert.ok(download);
    assert.equal(new Headers(download.init?.headers).get('x-authorization'), null);
  });

  it('export --out: a ZIP that does not match the recorded SHA-256 fails (exit 5)', async () => {
    const r = await runCli(['account', 'export', '--out', 'bad.zip', '--interval-ms', '1'], { home, env, answer: exportServer(0, 'f'.repeat(64)) });
    assert.equal(r.code, EXIT.server);
    assert.match(r.stderr, /does not match the export/);
  });

  it('export: an unknown export while waiting is not found (exit 4)', async () => {
    const r = await runCli(['account', 'export', '--wait'], {
      home, env,
      answer: (_url, init) => (init?.method === 'POST'
        ? jsonResponse(202, { status: 'success', message: 'Export started', export_id: EXPORT_ID })
        : jsonResponse(404, { status: 'error', message: 'Export not found' })),
    });
    assert.equal(r.code, EXIT.notFound);
    assert.match(r.stderr, /Export not found \(HTTP 404/);
  });

  it('erase: POSTs the password, prints the erasure and its status link, removes the saved token', async () => {
    const erasing = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-erase-'));
    try {
      const cliEnv = { XDG_CONFIG_HOME: path.join(erasing, 'config'), HOME: erasing };
      await writeConfig(cliEnv, { url: 'http://api.test', servers: { 'http://api.test': { token: 'tok', user_id: 4, email: 'a@example.com', saved_at: 't' } } });
      const statusUrl = 'http://api.test/api/V1/users/api-erase/status/9c4d?user=4&expires=1&signature=cd';
      const r = await runCli(['account', 'erase'], {
        home: erasing, env: { DOCSHARE_PASSWORD: 'correct horse battery' },
        answer: () => jsonResponse(202, { status: 'success', message: 'Account erasure started', erasure_id: '9c4d', status_url: statusUrl }),
      });
      assert.equal(r.code, EXIT.ok, r.stderr);
      assert.equal(r.calls[0]?.url, 'http://api.test/api/V1/users/api-erase');
      assert.deepEqual(r.calls[0]?.body, { password: 'correct horse battery' });
      assert.equal(new Headers(r.calls[0]?.init?.headers).get('x-authorization'), 'Bearer tok');
      assert.match(r.stdout, /Account erasure started: erasure 9c4d/);
      assert.ok(r.stdout.includes(statusUrl));
      assert.equal((await readConfig(cliEnv)).servers?.['http://api.test'], undefined, 'the token is gone');
    } finally {
      await rm(erasing, { recursive: true, force: true });
    }
  });

  it('erase: a wrong password is refused (exit 1), nothing forgotten', async () => {
    const r = await runCli(['account', 'erase', '--json'], {
      home, env: { ...env, DOCSHARE_PASSWORD: 'wrong password' },
      answer: () => jsonResponse(403, { status: 'error', message: 'Password is incorrect' }),
    });
    assert.equal(r.code, EXIT.apiError);
    assert.deepEqual(JSON.parse(r.stdout), { status: 'error', message: 'Password is incorrect' });
  });

  it('account alone prints the group\'s help (usage error); --help and help account print it on stdout', async () => {
    const bare = await runCli(['account'], { home, env });
    assert.equal(bare.code, EXIT.usage);
    assert.match(bare.stderr, /Usage: docshare account <subcommand>/);
    for (const argv of [['account', '--help'], ['help', 'account']]) {
      const r = await runCli(argv, { home, env });
      assert.equal(r.code, EXIT.ok);
      assert.match(r.stdout, /export\s+a ZIP of your account/);
      assert.match(r.stdout, /erase\s+erase your account for good/);
    }
    const help = await runCli(['account', 'erase', '--help'], { home, env });
    assert.match(help.stdout, /--password-stdin/);
  });
});
