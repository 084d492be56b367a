/**
 * `npm run stack` and `npm run rebuild -- stats` as the README gives them, with their defaults
 * (the gateway on 8080, the servers on their default ports, everything under ./data): the whole
 * distributed system starts, answers a user's writes and reads, a rebuild beside it keeps the
 * statistics exact, and SIGTERM to the pid of npm (what a process manager sends) stops every
 * service and server and frees every port.
 *
 * Run after the real-server suites (`npm run test:real`), once their servers are stopped: the
 * default ports must be free. ./data is removed afterwards only when this test created it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { api } from '../support/client.ts';
import { descendants, portFree, running } from '../support/processes.ts';
import { waitFor } from '../support/wait.ts';
import { afterInstall, blockAfter, README, REPO_ROOT, shCommands, typed } from './readme.ts';

const stackLine = blockAfter(README, '**Without Docker**', 'sh').split('\n')[0] as string;
const rebuildLine = shCommands(README).find((command) => command.startsWith('npm run rebuild'));
const BASE = 'http://localhost:8080';
// The servers' default ports (docs/infra.md): free again once the stack stopped.
const SERVER_PORTS = [19092, 19093, 19200, 19300, 19000, 19001, 27018, 16379];

const dataDir = join(REPO_ROOT, 'data');
const madeData = !existsSync(dataDir);
let npm: ChildProcess | undefined;
let exited: Promise<unknown> = Promise.resolve();
let output = '';

describe('README: npm run stack, a rebuild beside it, and SIGTERM to npm', { timeout: 1_200_000 }, () => {
  before(async () => {
    for (const port of [8080, ...SERVER_PORTS]) assert.ok(await portFree(port), `port ${port} is taken before the stack starts`);
    const command = afterInstall(stackLine);
    assert.equal(command, 'npm run stack');
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env['NODE_TEST_CONTEXT'];
    // npm itself, as a shell runs the typed command: its pid is the one a process manager signals.
    // Its own process group, so that whatever it leaves behind is killed after the test.
    npm = spawn('npm', command.split(' ').slice(1), { cwd: REPO_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    npm.stdout?.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-131_072); });
    npm.stderr?.on('data', (chunk: Buffer) => { output = (output + chunk.toString()).slice(-131_072); });
    exited = new Promise((resolve) => npm!.once('exit', resolve));
    // Provisioning is cached by the earlier tiers; a cold machine provisions here (minutes).
    await waitFor(async () => (await fetch(`${BASE}/healthz`)).ok, { timeoutMs: 900_000, intervalMs: 500 })
      .catch((error: unknown) => { throw new Error(`npm run stack never answered on ${BASE}: ${String(error)}\n${output}`); });
  });

  after(async () => {
    // Whatever a failed test left: the stack's own SIGTERM path first, then the servers by their pid
    // files (they run in sessions of their own, out of npm's group), and only then the data dir.
    if (npm?.pid !== undefined && npm.exitCode === null && npm.signalCode === null) {
      try { process.kill(npm.pid, 'SIGTERM'); } catch { /* gone */ }
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 120_000))]);
      try { process.kill(-npm.pid, 'SIGKILL'); } catch { /* gone */ }
    }
    await typed(`bash infra/local/stop.sh all`, { ...process.env, DOCSHARE_INFRA_DATA: join(dataDir, 'infra') });
    if (madeData) await rm(dataDir, { recursive: true, force: true });
  });

  const c = api({ baseUrl: BASE });
  let token = '';
  let fileId = '';

  it('answers a user: register, upload, search, stats', async () => {
    const user = await c.register();
    token = user.token;
    const word = `stackreadme${Date.now().toString(36)}`;
    ({ fileId } = await c.uploadOk(token, { title: `Stack ${word}` }));
    const found = await c.json('POST', '/api/V1/stats/api-search', token, { search: word });
    assert.equal(found.status, 200, found.text);
    assert.deepEqual(found.body.results.map((r: { id: number }) => String(r.id)), [fileId]);
    const stats = await c.json('POST', '/api/V1/stats/api-stats', token);
    assert.equal(stats.status, 200, stats.text);
    assert.equal(stats.body.data.total_files, 1);
  });

  it('npm run rebuild -- stats, typed beside it, leaves the statistics exact', async () => {
    assert.ok(rebuildLine, 'README shows npm run rebuild');
    const { code, out } = await typed(afterInstall(rebuildLine));
    assert.equal(code, 0, out);
    const stats = await c.json('POST', '/api/V1/stats/api-stats', token);
    assert.equal(stats.status, 200, stats.text);
    assert.equal(stats.body.data.total_files, 1);
  });

  it('SIGTERM to the pid of npm stops every service and server and frees every port', async () => {
    const npmPid = npm!.pid as number;
    const tree = await descendants(npmPid);
    // npm -> the stack (the script execs node) -> six services. The servers run in sessions of
    // their own (infra/local/start.sh: setsid), outside npm's tree: their ports tell they stopped.
    assert.ok(tree.length >= 7, `npm run stack runs its services: ${tree.join(', ')}`);
    process.kill(npmPid, 'SIGTERM');
    await exited;
    const left = async (): Promise<number[]> => {
      const alive: number[] = [];
      for (const pid of tree) if (await running(pid)) alive.push(pid);
      return alive;
    };
    // Polled: services drain, then servers stop (each bounded by its own grace period).
    await waitFor(async () => (await left()).length === 0, { timeoutMs: 300_000, intervalMs: 500 })
      .catch(async () => assert.fail(`still running after SIGTERM to npm (pid ${npmPid}): ${(await left()).join(', ')}\n${output}`));
    for (const port of [8080, ...SERVER_PORTS]) assert.ok(await portFree(port), `port ${port} is still bound`);
  });
});
