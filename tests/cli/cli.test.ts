// The `docshare` command end to end: the npm bin (libs/cli/bin/docshare.js) run as a process
// against a started server, with its own config directory; progress bars under a pseudo-terminal
// (util-linux `script`).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { randomWord } from '../support/client.ts';
import { useServer } from '../support/fixture.ts';
import { viewAs } from '../support/analytics.ts';
import { eventually } from '../support/wait.ts';
import { freePort } from '../support/server.ts';
import { CLI_BIN as BIN, cliOk, cliSandbox, type CliSandbox } from '../support/cli.ts';
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('docshare CLI', () => {
  const fx = useServer();
  let tmp: string;
  let work: string;
  let env: NodeJS.ProcessEnv;
  const email = `${randomWord(12)}@example.com`;
  const password = 'correct horse battery';
  const word = randomWord(12);
  const content = randomBytes(3 * 1024 * 1024 + 17);
  let fileId = '';

  let sandbox: CliSandbox;
  before(async () => {
    sandbox = await cliSandbox('docshare-cli-e2e-', fx.server.baseUrl, { 'report.bin': content });
    ({ home: tmp, work, env } = sandbox);
  });
  after(() => sandbox.remove());

  /** Runs docshare with `args` (no terminal: pipes); `more` is merged over the environment. */
  const docshare = (args: string[], more: NodeJS.ProcessEnv = {}, input?: string): Promise<Run> => sandbox.run(args, more, input);
  const ok = cliOk;

  /** Runs docshare under a pseudo-terminal (script(1)); resolves with everything the terminal showed. */
  const inTerminal = (args: string[]): Promise<Run> => new Promise((resolve, reject) => {
    const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, BIN, ...args].map(quote).join(' ');
    const child = spawn('script', ['-qefc', command, '/dev/null'], { cwd: work, env: { ...env, TERM: 'xterm', COLUMNS: '120' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: out, stderr: err }));
  });

  const uploadArgs = (file: string, title: string): string[] =>
    ['upload', file, '--title', title, '--description', 'Uploaded by the CLI test', '--tags', 'cli,test', '--license', 'CC BY', '--new-category', 'CLI tests'];

  it('prints help for the CLI and for each command', async () => {
    const all = ok(await docshare(['--help']), '--help');
    for (const c of ['register', 'login', 'logout', 'upload', 'download', 'search', 'files', 'stats', 'top', 'trending', 'comments', 'comment', 'update', 'delete']) {
      assert.match(all.stdout, new RegExp(`^  ${c} `, 'm'), c);
    }
    assert.match(all.stdout, /Exit codes:/);
    const upload = ok(await docshare(['upload', '--help']), 'upload --help');
    assert.match(upload.stdout, /^Usage: docshare upload <file>/);
    assert.match(upload.stdout, /--new-category <name>/);
  });

  it('commands that need a token exit 3 before logging in', async () => {
    const r = await docshare(['stats']);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /Not logged in/);
  });

  it('register saves the token (0600 file in a 0700 directory) and never prints it', async () => {
    const r = ok(await docshare(['register', '--name', 'Cli User', '--email', email], { DOCSHARE_PASSWORD: password }), 'register');
    assert.match(r.stdout, /User registered successfully: user \d+/);
    const file = path.join(tmp, 'config', 'docshare', 'config.json');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await stat(path.dirname(file))).mode & 0o777, 0o700);
    const config = JSON.parse(await readFile(file, 'utf8'));
    const token = config.servers[fx.server.baseUrl].token as string;
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.ok(!r.stdout.includes(token) && !r.stderr.includes(token), 'the token is not printed');
    const again = await docshare(['register', '--name', 'Cli User', '--email', email], { DOCSHARE_PASSWORD: password });
    assert.equal(again.code, 1, 'an email already registered is an API error');
    assert.match(again.stderr, /Email already registered \(HTTP 409/);
  });

  it('login reads the password from stdin; a wrong password exits 3', async () => {
    const r = ok(await docshare(['login', '--email', email, '--password-stdin', '--json'], {}, `${password}\n`), 'login');
    const body = JSON.parse(r.stdout);
    assert.equal(body.status, 'success');
    assert.equal(body.token, undefined, '--json leaves the token out');
    const who = ok(await docshare(['whoami']), 'whoami');
    assert.match(who.stdout, new RegExp(`user ${body.user_id} \\(${email}\\)`));
    const wrong = await docshare(['login', '--email', email], { DOCSHARE_PASSWORD: 'not the password' });
    assert.equal(wrong.code, 3);
    assert.match(wrong.stderr, /Invalid email or password/);
  });

  it('upload without a terminal: the server\'s answer and no progress bar; --json parses', async () => {
    const r = ok(await docshare(uploadArgs('report.bin', `Quarterly ${word} report`)), 'upload');
    assert.match(r.stdout, /^File uploaded successfully: file (\d+) in category \d+ \(CLI tests\)\n$/);
    assert.equal(r.stderr, '', 'nothing on stderr: no bar without a terminal');
    fileId = /file (\d+)/.exec(r.stdout)?.[1] ?? '';
    const j = ok(await docshare([...uploadArgs('report.bin', `Second ${word}`), '--json']), 'upload --json');
    const body = JSON.parse(j.stdout);
    assert.equal(body.status, 'success');
    assert.equal(body.category_name, 'CLI tests');
    const q = ok(await docshare([...uploadArgs('report.bin', `Third ${word}`), '-q']), 'upload -q');
    assert.match(q.stdout, /^\d+\n$/);
    const missing = await docshare(uploadArgs('no-such-file.bin', 'x'));
    assert.equal(missing.code, 7, 'a local file that cannot be read');
    const invalid = await docshare(['upload', 'report.bin', '--title', 't', '--description', 'd', '--tags', 't', '--license', 'CC WHAT', '--new-category', 'c']);
    assert.equal(invalid.code, 1);
    assert.match(invalid.stderr, /Invalid license \(HTTP 400/);
  });

  it('search, files, stats', async () => {
    // Reads see the writes at once (consistency tokens); retried anyway, as the conformance tests do.
    const s = await eventually(async () => {
      const r = ok(await docshare(['search', 'quartrly', word]), 'search');
      assert.match(r.stdout, new RegExp(`^${fileId}\\tQuarterly ${word} report  \\[CLI tests\\]  http`, 'm'));
      return r;
    });
    assert.match(s.stderr, /of 3 matches/);
    const j = JSON.parse(ok(await docshare(['search', word, '--json', '--per-page', '2']), 'search --json').stdout);
    assert.equal(j.total, 3);
    assert.equal(j.results.length, 2);
    const all = ok(await docshare(['search', word, '--all', '-q', '--per-page', '1']), 'search --all');
    assert.equal(all.stdout.trim().split('\n').length, 3);
    const none = ok(await docshare(['search', randomWord(14)]), 'search without a match');
    assert.equal(none.stdout, '');
    assert.match(none.stderr, /No results found/);

    await eventually(async () => {
      const files = JSON.parse(ok(await docshare(['files', '--json']), 'files').stdout);
      assert.equal(files.total, 3);
      assert.ok(files.files.some((f: { file_id: number }) => String(f.file_id) === fileId));
      const stats = JSON.parse(ok(await docshare(['stats', '--json']), 'stats').stdout);
      assert.equal(stats.data.total_files, 3);
    });
    assert.match(ok(await docshare(['stats']), 'stats').stdout, /^files 3$/m);
  });

  it('stats --daily, top, trending: three anonymous viewers of a file', async () => {
    for (const agent of ['cli-a', 'cli-b', 'cli-c']) assert.equal((await viewAs(fx.c, fileId, { userAgent: `${agent}-${word}` })).status, 200);
    // The stats projector counts the views shortly after they are answered.
    await eventually(async () => {
      const daily = JSON.parse(ok(await docshare(['stats', '--daily', '--json']), 'stats --daily --json').stdout);
      assert.equal(daily.days.length, 30, 'the last 30 UTC days by default');
      assert.equal(daily.totals.views, 3);
      assert.equal(daily.totals.unique_viewers, 3);
      const mine = JSON.parse(ok(await docshare(['stats', '--daily', '--file', fileId, '--from', daily.from, '--json']), 'stats --daily --file').stdout);
      assert.equal(mine.totals.views, 3);
    });
    const table = ok(await docshare(['stats', '--daily']), 'stats --daily');
    assert.match(table.stdout, /^date +views +unique viewers +downloads +unique downloaders +sales +comments$/m);
    assert.match(table.stdout, /^total +3 +3 +0 +0 +0 +0$/m);
    assert.match(table.stderr, /^30 UTC days, \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}, all your files$/m);
    const bad = await docshare(['stats', '--daily', '--from', '2020-01-01', '--to', '2025-01-01']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /The range may span at most 366 days \(HTTP 400/);

    await eventually(async () => {
      const top = ok(await docshare(['top', '--metric', 'unique_viewers', '--days', '2']), 'top');
      assert.equal(top.stdout, `${fileId}\t3  Quarterly ${word} report  ${fx.server.baseUrl}/docs/${fileId}\n`);
      const hot = JSON.parse(ok(await docshare(['trending', '--hours', '2', '--json']), 'trending').stdout);
      assert.deepEqual(hot.results.find((r: { id: string }) => r.id === fileId), {
        id: fileId, title: `Quarterly ${word} report`, link: `${fx.server.baseUrl}/docs/${fileId}`, category: 'CLI tests', unique_viewers: 3, views: 3,
      });
    });
    const wrong = await docshare(['top', '--metric', 'likes']);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /metric must be one of views, unique_viewers, downloads, sales, comments \(HTTP 400/);
  });

  it('comment, comments, update', async () => {
    const c = ok(await docshare(['comment', fileId, 'Very', 'useful']), 'comment');
    assert.match(c.stdout, /Comment posted successfully: comment \d+/);
    await eventually(async () => {
      const list = JSON.parse(ok(await docshare(['comments', '--json']), 'comments').stdout);
      assert.deepEqual(list.data.map((x: { comment: string }) => x.comment), ['Very useful']);
    });
    const u = ok(await docshare(['update', fileId, '--title', `Renamed ${word}`]), 'update');
    assert.match(u.stdout, /File updated successfully/);
    await eventually(async () => {
      const files = JSON.parse(ok(await docshare(['files', '--json']), 'files').stdout);
      assert.ok(files.files.some((f: { title: string }) => f.title === `Renamed ${word}`));
    });
  });

  it('download: the bytes; an existing file needs --force; a .part is resumed with a Range request', async () => {
    // Into a directory: the server's file name.
    await mkdir(path.join(work, 'downloads'));
    const r = ok(await docshare(['download', fileId, '-o', 'downloads']), 'download');
    assert.match(r.stdout, /^File ready for download: saved report\.bin \(3\.0 MiB\) to .*downloads\/report\.bin\n$/);
    assert.equal(r.stderr, '', 'no bar without a terminal');
    assert.equal(sha(await readFile(path.join(work, 'downloads', 'report.bin'))), sha(content));
    // report.bin in the working directory is the upload itself: not replaced without --force.
    for (const args of [['download', fileId], ['download', fileId, '-o', 'report.bin']]) {
      const refused = await docshare(args);
      assert.equal(refused.code, 7, args.join(' '));
      assert.match(refused.stderr, /report\.bin exists: --force replaces it/);
    }
    ok(await docshare(['download', fileId, '-o', 'downloads', '--force', '-q']), 'download --force');

    const out = path.join(work, 'copy.bin');
    ok(await docshare(['download', fileId, '-o', 'copy.bin']), 'download -o');
    assert.equal(sha(await readFile(out)), sha(content));

    // An interrupted download: part of the bytes in copy.bin.part.
    await rm(out);
    await writeFile(`${out}.part`, content.subarray(0, 1_000_000));
    const resumed = ok(await docshare(['download', fileId, '-o', 'copy.bin', '--json']), 'resume');
    const body = JSON.parse(resumed.stdout);
    assert.equal(body.resumed_from, 1_000_000, 'the server answered the Range request with the rest');
    assert.equal(body.bytes, content.length);
    assert.equal(body.original_file_name, 'report.bin');
    assert.equal(sha(await readFile(out)), sha(content), 'the resumed file has the uploaded bytes');
    await assert.rejects(stat(`${out}.part`), { code: 'ENOENT' });

    const piped = await new Promise<Buffer>((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, 'download', fileId, '-o', '-'], { cwd: work, env, stdio: ['ignore', 'pipe', 'inherit'] });
      const chunks: Buffer[] = [];
      child.stdout.on('data', (c: Buffer) => chunks.push(c));
      child.on('error', reject);
      child.on('close', () => resolve(Buffer.concat(chunks)));
    });
    assert.equal(sha(piped), sha(content), '-o - writes the bytes to stdout');
  });

  it('progress bars are drawn under a terminal', async () => {
    const up = await inTerminal(uploadArgs('report.bin', `Terminal ${word}`));
    assert.equal(up.code, 0, up.stdout + up.stderr);
    assert.match(up.stdout, /Uploading report\.bin \[[= ]*\] \d+%/);
    assert.match(up.stdout, /100% \| 3\.0 MiB \/ 3\.0 MiB/);
    assert.ok(up.stdout.includes('\u001b[1G'), 'the bar redraws in place (cursor to column 1)');
    assert.match(up.stdout, /File uploaded successfully: file \d+/);

    const down = await inTerminal(['download', fileId, '-o', 'terminal.bin']);
    assert.equal(down.code, 0, down.stdout + down.stderr);
    assert.match(down.stdout, /Downloading report\.bin \[[= ]*\] \d+%/);
    assert.match(down.stdout, /100% \| 3\.0 MiB \/ 3\.0 MiB/);
    assert.equal(sha(await readFile(path.join(work, 'terminal.bin'))), sha(content));

    const quiet = await inTerminal(['download', fileId, '-o', 'quiet.bin', '--no-progress']);
    assert.equal(quiet.code, 0);
    assert.doesNotMatch(quiet.stdout, /\d+%/, '--no-progress draws no bar');
  });

  it('delete; then the file is not found (exit 4)', async () => {
    const d = ok(await docshare(['delete', fileId]), 'delete');
    assert.match(d.stdout, /File deleted successfully/);
    const again = await docshare(['delete', fileId]);
    assert.equal(again.code, 4);
    assert.match(again.stderr, /File not found \(HTTP 404, request [\w-]+\)/);
    const dl = await docshare(['download', fileId, '-o', 'gone.bin', '--json']);
    assert.equal(dl.code, 4);
    assert.deepEqual(JSON.parse(dl.stdout), { status: 'error', message: 'File not found' });
  });

  it('exit codes: usage 2, bad token 3, server down 5', async () => {
    const usage = await docshare(['download']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /missing argument/);
    const unknown = await docshare(['frobnicate']);
    assert.equal(unknown.code, 2);

    const bad = await docshare(['stats'], { DOCSHARE_TOKEN: 'not.a.token' });
    assert.equal(bad.code, 3);
    assert.match(bad.stderr, /Invalid JWT token \(HTTP 401.*docshare login/);

    const down = await docshare(['stats', '--retries', '0', '--url', `http://127.0.0.1:${await freePort()}`], { DOCSHARE_TOKEN: 'x' });
    assert.equal(down.code, 5);
    assert.match(down.stderr, /cannot reach .*ECONNREFUSED/);
  });

  it('logout forgets the token', async () => {
    ok(await docshare(['logout']), 'logout');
    const r = await docshare(['files']);
    assert.equal(r.code, 3);
  });
});
