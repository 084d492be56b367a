// `npm start` as users and process managers run it: a signal sent to the pid of npm
// itself (not to the process group, not to the supervisor) stops every process it started and
// frees the port. npm forwards the signal to the `sh -c` it runs the script with; the script
// `exec`s node, so the shell is the supervisor (without it, the shell took the signal and the
// supervisor lived on with the server).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort, REPO_ROOT } from '../../../tests/support/server.ts';
import { descendants, healthy, portFree, running } from '../../../tests/support/processes.ts';
import { eventually } from '../../../tests/support/wait.ts';

const dirs: string[] = [];
const groups = new Set<number>();
after(async () => {
  // npm runs detached, in a group of its own that every process it starts stays in.
  for (const group of groups) {
    try { process.kill(-group, 'SIGKILL'); } catch { /* gone */ }
  }
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

interface NpmStart { npm: ChildProcess; port: number; output(): string; exited: Promise<unknown> }

/** `npm start` in the repository, as the README gives it, on a free port and a fresh DATA_DIR. */
const npmStart = async (): Promise<NpmStart> => {
  const dataDir = await mkdtemp(join(tmpdir(), 'docshare-npm-start-'));
  dirs.push(dataDir);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir };
  delete env['NODE_TEST_CONTEXT'];
  const npm = spawn('npm', ['start'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  assert.ok(npm.pid !== undefined, 'npm was started');
  groups.add(npm.pid);
  let out = '';
  npm.stdout.on('data', (chunk: Buffer) => { out = (out + chunk.toString()).slice(-64_000); });
  npm.stderr.on('data', (chunk: Buffer) => { out = (out + chunk.toString()).slice(-64_000); });
  const exited = new Promise((resolve) => npm.once('exit', resolve));
  const baseUrl = `http://127.0.0.1:${port}`;
  await eventually(() => healthy(baseUrl), { timeoutMs: 60_000, intervalMs: 200 }).catch((err: unknown) => {
    throw new Error(`npm start never answered /healthz; output:\n${out}`, { cause: err });
  });
  return { npm, port, output: () => out, exited };
};

describe('npm start stops on a signal to its own pid', () => {
  // npm forwards both to its child; without the start script's `exec`, dash took them (it died of
  // SIGTERM, sat on SIGINT) and the supervisor lived on with the server.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`kill -${signal.slice(3)} <pid of npm start> stops every process and frees the port`, { timeout: 240_000 }, async () => {
      const started = await npmStart();
      const npmPid = started.npm.pid as number;
      const tree = await descendants(npmPid);
      // npm -> sh -c -> supervisor -> server, at least (npm may run more than one level of shell).
      assert.ok(tree.length >= 2, `npm start runs a supervisor and a server: ${tree.join(', ')}`);

      process.kill(npmPid, signal);
      await started.exited;
      // Polled: the server drains gracefully (bounded by its grace period), so this takes a moment.
      const stillRunning = async (): Promise<number[]> => {
        const left: number[] = [];
        for (const pid of tree) if (await running(pid)) left.push(pid);
        return left;
      };
      await eventually(async () => (await stillRunning()).length === 0, { timeoutMs: 120_000, intervalMs: 200 }).catch(async (err: unknown) => {
        throw new Error(`still running after ${signal} to npm (pid ${npmPid}): ${(await stillRunning()).join(', ')}\n${started.output()}`, { cause: err });
      });
      assert.ok(await portFree(started.port), `port ${started.port} is still bound`);
      // Gracefully: the server said it stopped (no SIGKILL from the supervisor's guard).
      assert.match(started.output(), /"msg":"stopped"/, started.output());
      assert.doesNotMatch(started.output(), /did not stop in time/);
    });
  }
});
