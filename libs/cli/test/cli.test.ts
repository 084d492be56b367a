// The CLI in-process, without a server: command line parsing, help, exit codes, the config file.
// (End to end against npm start: tests/cli/cli.test.ts.)
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { DocshareApiError, DocshareNetworkError } from '@docshare/client';
import { COMMAND_NAMES } from '../src/cli.ts';
import { configPath, readConfig, resolveBaseUrl, resolveToken, writeConfig } from '../src/config.ts';
import { EXIT, exitCodeOf } from '../src/exit.ts';
import { formatBytes, progressBar } from '../src/progress.ts';
import { jsonResponse, runCli, type Ran } from './harness.ts';

let home: string;
before(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-'));
});
after(async () => {
  await rm(home, { recursive: true, force: true });
});

/** Runs the CLI with captured output; `answer` plays the server. */
const cli = (argv: string[], env: Record<string, string> = {}, answer?: (url: string, init?: RequestInit) => Promise<Response>): Promise<Ran> =>
  runCli(argv, { home, env, ...(answer ? { answer } : {}) });

const reply = (status: number, body: unknown) => async (): Promise<Response> => jsonResponse(status, body);

describe('docshare CLI', () => {
  it('--help lists every command, the exit codes and the environment; no command is a usage error', async () => {
    const r = await cli(['--help']);
    assert.equal(r.code, 0);
    for (const name of COMMAND_NAMES) assert.match(r.stdout, new RegExp(`^  ${name} `, 'm'));
    assert.match(r.stdout, /Exit codes:/);
    assert.match(r.stdout, /DOCSHARE_TOKEN/);
    const none = await cli([]);
    assert.equal(none.code, EXIT.usage);
    assert.match(none.stderr, /Usage: docshare <command>/);
  });

  it('every command has its own --help (and help <command>)', async () => {
    for (const name of COMMAND_NAMES) {
      const r = await cli([name, '--help']);
      assert.equal(r.code, 0, name);
      assert.match(r.stdout, new RegExp(`^Usage: docshare ${name}`), name);
      assert.equal(r.calls.length, 0);
    }
    const h = await cli(['help', 'upload']);
    assert.match(h.stdout, /--license <licence>/);
  });

  it('--version', async () => {
    const r = await cli(['--version']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^docshare \d+\.\d+\.\d+/);
  });

  it('usage errors exit 2: unknown command, unknown option, missing or bad argument', async () => {
    for (const argv of [['uplod', 'x'], ['stats', '--bogus'], ['download'], ['download', 'abc'], ['search', 'x', '--page', '0'], ['update', '3'], ['register', '--email', 'a@b.c']]) {
      const r = await cli(argv, { DOCSHARE_TOKEN: 't', DOCSHARE_PASSWORD: 'pw' });
      assert.equal(r.code, EXIT.usage, `${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^docshare: .*\nRun 'docshare .*--help' for usage\.\n$/s, argv.join(' '));
      assert.equal(r.calls.length, 0);
    }
    const near = await cli(['uplod']);
    assert.match(near.stderr, /did you mean upload/);
  });

  it('--json prints a JSON error on stdout', async () => {
    const r = await cli(['stats', '--bogus', '--json']);
    assert.equal(r.code, EXIT.usage);
    assert.equal(JSON.parse(r.stdout).status, 'error');
  });

  it('a command that needs a token without one exits 3 before any request', async () => {
    const r = await cli(['stats']);
    assert.equal(r.code, EXIT.auth);
    assert.match(r.stderr, /Not logged in to http:\/\/localhost:8080/);
    assert.equal(r.calls.length, 0);
  });

  it('API errors map to exit codes; --json prints the server\'s error envelope', async () => {
    const cases: [number, string, number][] = [
      [401, 'Invalid JWT token', EXIT.auth], [404, 'File not found', EXIT.notFound], [400, 'Comment is required', EXIT.apiError],
      [403, 'Forbidden', EXIT.apiError], [500, 'Internal server error', EXIT.server],
    ];
    for (const [status, message, code] of cases) {
      const r = await cli(['delete', '5', '--json', '--retries', '0'], { DOCSHARE_TOKEN: 't' }, reply(status, { status: 'error', message }));
      assert.equal(r.code, code, `${status}`);
      assert.deepEqual(JSON.parse(r.stdout), { status: 'error', message });
      assert.match(r.stderr, new RegExp(`${message} \\(HTTP ${status}, request rid\\)`));
    }
  });

  it('a server that cannot be reached exits 5', async () => {
    const r = await cli(['stats', '--retries', '0'], { DOCSHARE_TOKEN: 't', DOCSHARE_URL: 'http://127.0.0.1:9' });
    assert.equal(r.code, EXIT.server);
    assert.match(r.stderr, /cannot reach http:\/\/127\.0\.0\.1:9: .*ECONNREFUSED.*is the server running/);
  });

  it('login saves the token for that server only, mode 0600 in a 0700 directory, and never prints it', async () => {
    const env = { DOCSHARE_PASSWORD: 'secret pw', DOCSHARE_URL: 'http://api.test:8080/' };
    const r = await cli(['login', '--email', 'ada@example.com'], env, reply(200, { status: 'success', message: 'Login successful', user_id: 7, token: 'SECRET.JWT.VALUE' }));
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, /SECRET/);
    const file = configPath({ XDG_CONFIG_HOME: path.join(home, 'config') });
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await stat(path.dirname(file))).mode & 0o777, 0o700);
    const config = JSON.parse(await readFile(file, 'utf8'));
    assert.equal(config.url, 'http://api.test:8080');
    assert.equal(config.servers['http://api.test:8080'].token, 'SECRET.JWT.VALUE');
    assert.deepEqual(JSON.parse(r.calls[0]?.init?.body as string), { email: 'ada@example.com', password: 'secret pw' });

    const j = await cli(['login', '--email', 'ada@example.com', '--json'], env, reply(200, { status: 'success', message: 'Login successful', user_id: 7, token: 'SECRET.JWT.VALUE' }));
    assert.equal(JSON.parse(j.stdout).token, undefined);

    // The saved token goes to that server, and not to another.
    const stats = await cli(['stats'], {}, reply(200, { status: 'success', data: { total_comments: 0, total_files: 0, total_views: 0, total_downloads: 0, total_sales: 0 } }));
    assert.equal(stats.code, 0);
    assert.equal((stats.calls[0]?.init?.headers as Record<string, string>)['X-Authorization'], 'Bearer SECRET.JWT.VALUE');
    assert.equal(stats.calls[0]?.url, 'http://api.test:8080/api/V1/stats/api-stats');
    const other = await cli(['stats', '--url', 'http://elsewhere.test']);
    assert.equal(other.code, EXIT.auth);

    const out = await cli(['logout']);
    assert.equal(out.code, 0);
    assert.equal((await readConfig({ XDG_CONFIG_HOME: path.join(home, 'config') })).servers?.['http://api.test:8080'], undefined);
  });

  it('wrong password at login exits 3; no password and no terminal is a usage error', async () => {
    const r = await cli(['login', '--email', 'a@b.c'], { DOCSHARE_PASSWORD: 'nope' }, reply(401, { status: 'error', message: 'Invalid email or password' }));
    assert.equal(r.code, EXIT.auth);
    const none = await cli(['login', '--email', 'a@b.c']);
    assert.equal(none.code, EXIT.usage);
    assert.match(none.stderr, /no password/);
  });

  it('config: URL precedence (flag, DOCSHARE_URL, config, default); DOCSHARE_TOKEN wins', async () => {
    const config = { url: 'http://saved', servers: { 'http://saved': { token: 'saved-token' } } };
    assert.equal(resolveBaseUrl('http://flag/', { DOCSHARE_URL: 'http://env' }, config), 'http://flag');
    assert.equal(resolveBaseUrl(undefined, { DOCSHARE_URL: 'http://env' }, config), 'http://env');
    assert.equal(resolveBaseUrl(undefined, {}, config), 'http://saved');
    assert.equal(resolveBaseUrl(undefined, {}, {}), 'http://localhost:8080');
    assert.deepEqual(resolveToken('http://saved', {}, config), { token: 'saved-token', source: 'config' });
    assert.deepEqual(resolveToken('http://saved', { DOCSHARE_TOKEN: 'env-token' }, config), { token: 'env-token', source: 'env' });
    assert.equal(resolveToken('http://other', {}, config), undefined);
    assert.equal(configPath({ HOME: '/home/x' }), '/home/x/.config/docshare/config.json');
    assert.equal(configPath({ HOME: '/home/x', XDG_CONFIG_HOME: '/cfg' }), '/cfg/docshare/config.json');
    const env = { XDG_CONFIG_HOME: path.join(home, 'cfg2') };
    await writeConfig(env, config);
    assert.deepEqual(await readConfig(env), config);
    await writeFile(configPath(env), 'not json');
    await assert.rejects(readConfig(env), /not valid JSON/);
  });

  it('exit codes of errors', () => {
    const api = (status: number) => new DocshareApiError({ status, headers: new Headers(), body: { status: 'error', message: 'm' }, text: '' });
    assert.equal(exitCodeOf(api(429)), EXIT.rateLimited);
    assert.equal(exitCodeOf(api(503)), EXIT.server);
    assert.equal(exitCodeOf(api(413)), EXIT.apiError);
    assert.equal(exitCodeOf(new DocshareNetworkError('http://x', new Error('x'))), EXIT.server);
    assert.equal(exitCodeOf(Object.assign(new Error('no'), { code: 'ENOENT', path: '/x' })), EXIT.localFile);
  });

  it('no progress bar when the stream is not a terminal; sizes read well', () => {
    const stream = new PassThrough() as unknown as NodeJS.WriteStream;
    let written = '';
    (stream as unknown as PassThrough).on('data', (c: Buffer) => { written += c.toString(); });
    const bar = progressBar('x', stream, true);
    bar.update({ loaded: 5, total: 10 });
    bar.stop();
    assert.equal(written, '');
    assert.equal(formatBytes(512), '512 B');
    assert.equal(formatBytes(1536), '1.5 KiB');
    assert.equal(formatBytes(20 * 1024 * 1024), '20 MiB');
  });
});
