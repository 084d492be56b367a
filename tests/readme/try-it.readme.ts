/**
 * The README's quick start and "Try it", exactly as a newcomer types them: `npm start` with its
 * defaults (port 8080, data under ./data), then each snippet of "Try it" (the docshare command,
 * curl, the SDK) taken from README.md itself and run twice in a shell at the repository root, as
 * the README promises ("every snippet can be run again and again ... ends with the bytes on disk").
 * Nothing is retyped here: a snippet edited in the README is the snippet tested.
 *
 * Only the user's home is a temporary one, so the CLI's token file never touches the developer's.
 * ./data is removed afterwards only when this test created it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../support/wait.ts';
import { afterInstall, blockAfter, README, REPO_ROOT, typed } from './readme.ts';

const quickStart = blockAfter(README, '## Quick start', 'sh');
const startLine = quickStart.split('\n').find((line) => line.startsWith('npm ci && npm start'));
const snippets = {
  cli: blockAfter(README, '**With the `docshare` command**', 'sh'),
  curl: blockAfter(README, '**With curl**', 'sh'),
  sdk: blockAfter(README, '**With the TypeScript SDK**', 'ts'),
};
// The SDK snippet's own instructions: where to save it and how to run it.
const sdkRun = /save as\s+`([^`]+)`[^`]*run `([^`]+)`/.exec(README.slice(README.indexOf('**With the TypeScript SDK**')));

const dataDir = join(REPO_ROOT, 'data');
const madeData = !existsSync(dataDir);
let server: ChildProcess | undefined;
let home = '';
let serverOutput = '';

const run = (command: string): Promise<{ code: number | null; out: string }> => typed(command, { ...process.env, HOME: home });

describe('README: quick start and "Try it", as written', { timeout: 600_000 }, () => {
  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'docshare-readme-home-'));
    assert.ok(startLine, 'README quick start shows `npm ci && npm start`');
    // `npm ci` has run (this test runs from the installed tree); the rest of the line is typed as is.
    const command = afterInstall(startLine);
    assert.equal(command, 'npm start');
    // Its own process group, so everything it started is stopped at the end whatever npm does with signals.
    server = spawn('bash', ['-c', command], { cwd: REPO_ROOT, env: { ...process.env, HOME: home }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout?.on('data', (chunk: Buffer) => { serverOutput = (serverOutput + chunk.toString()).slice(-65_536); });
    server.stderr?.on('data', (chunk: Buffer) => { serverOutput = (serverOutput + chunk.toString()).slice(-65_536); });
    await waitFor(async () => (await fetch('http://localhost:8080/healthz')).ok, { timeoutMs: 120_000, intervalMs: 200 })
      .catch((error: unknown) => { throw new Error(`npm start never answered on http://localhost:8080: ${String(error)}\n${serverOutput}`); });
  });

  after(async () => {
    if (server?.pid !== undefined && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      process.kill(-server.pid, 'SIGTERM');
      await exited;
    }
    await rm(home, { recursive: true, force: true });
    if (madeData) await rm(dataDir, { recursive: true, force: true });
  });

  for (const round of [1, 2]) {
    it(`the docshare command snippet ends with the same bytes on disk (run ${round})`, async () => {
      const { code, out } = await run(snippets.cli);
      assert.equal(code, 0, out);
      assert.match(out, /same bytes\n$/);
      // The typo-tolerant search of the snippet finds the upload.
      assert.match(out, /Read me/);
    });

    it(`the curl snippet ends with the same bytes on disk (run ${round})`, async () => {
      const { code, out } = await run(snippets.curl);
      assert.equal(code, 0, out);
      assert.match(out, /"status":"success"/);
      assert.match(out, /Read me/);
      assert.match(out, /same bytes\n$/);
    });

    it(`the SDK snippet, saved and run as the README says (run ${round})`, async () => {
      assert.ok(sdkRun, 'README says where to save the SDK snippet and how to run it');
      const [, file, command] = sdkRun;
      const path = join(REPO_ROOT, file!);
      await writeFile(path, snippets.sdk);
      try {
        const { code, out } = await run(command!);
        assert.equal(code, 0, out);
        assert.match(out, /Read me/);
        const saved = /saved (\d+) bytes to (\S+)/.exec(out);
        assert.ok(saved, out);
        assert.deepEqual(readFileSync(saved[2]!), readFileSync(join(REPO_ROOT, 'README.md')));
      } finally {
        await rm(path, { force: true });
      }
    });
  }
});
