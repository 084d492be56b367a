// npm start's supervisor (services/standalone/src/supervise.ts) over real processes: a child
// killed with SIGKILL comes back on the same port with its data, SIGTERM stops both, and a child
// that cannot start is not restarted for ever.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { api } from '../../../tests/support/client.ts';
import { alive, freePort } from '../../../tests/support/server.ts';
import { eventually } from '../../../tests/support/wait.ts';
import { healthy } from '../../../tests/support/processes.ts';

const SUPERVISE = join(import.meta.dirname, '..', 'src', 'supervise.ts');

interface Supervisor {
  process: ChildProcess;
  /** JSON log lines so far (the supervisor's and the child's). */
  logs(): Record<string, unknown>[];
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const dirs: string[] = [];
const running = new Set<ChildProcess>();
after(async () => {
  for (const child of running) {
    // Its own process group: the supervisor and the server it runs.
    try { process.kill(-(child.pid ?? 0), 'SIGKILL'); } catch { /* gone */ }
  }
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const startSupervisor = async (env: Record<string, string>): Promise<Supervisor> => {
  const dataDir = await mkdtemp(join(tmpdir(), 'docshare-supervise-'));
  dirs.push(dataDir);
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, [SUPERVISE], {
    env: { ...childEnv, DATA_DIR: dataDir, HOST: '127.0.0.1', RATE_LIMIT_POINTS: '100000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running.add(child);
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => { out += chunk.toString(); });
  child.stderr?.on('data', (chunk: Buffer) => { out += chunk.toString(); });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  const logs = (): Record<string, unknown>[] => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { process: child, logs, output: () => out, exited };
};

const started = (s: Supervisor): number[] =>
  s.logs().filter((l) => l.component === 'supervisor' && l.msg === 'docshare started').map((l) => Number(l.pid));

/** Waits for /healthz; on a timeout the error carries the supervisor's output. */
const waitHealthy = async (sup: Supervisor, baseUrl: string): Promise<void> => {
  await eventually(() => healthy(baseUrl), { timeoutMs: 60_000 }).catch((err: unknown) => {
    throw new Error(`${baseUrl} never answered /healthz; output:\n${sup.output()}`, { cause: err });
  });
};

describe('npm start supervisor', () => {
  it('restarts a child killed with SIGKILL on the same port with its data, and SIGTERM stops both', async () => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const sup = await startSupervisor({ PORT: String(port), SUPERVISOR_BACKOFF_MS: '100' });
    await waitHealthy(sup, baseUrl);
    const c = api({ baseUrl });
    const user = await c.register();
    const bytes = new TextEncoder().encode('survives a kill -9');
    const { fileId } = await c.uploadOk(user.token, {}, bytes);

    const [first] = started(sup);
    assert.ok(first !== undefined && alive(first));
    process.kill(first, 'SIGKILL');
    await eventually(() => started(sup).length === 2, { timeoutMs: 30_000 });
    const restart = sup.logs().find((l) => typeof l.restartInMs === 'number');
    assert.ok(restart, 'the restart is logged');
    assert.equal(restart.service, 'docshare');
    assert.equal(restart.signal, 'SIGKILL');
    assert.equal(restart.pid, first);
    assert.equal(restart.restartInMs, 100);
    await waitHealthy(sup, baseUrl);

    // The same data: the user logs in, the file downloads with its bytes.
    assert.equal((await c.login(user.email, user.password)).status, 200);
    const link = await c.download(user.token, fileId);
    assert.equal(link.status, 200);
    const got = await c.bytes(link.body.download_url as string);
    assert.deepEqual(new Uint8Array(got.bytes), bytes);

    const second = started(sup)[1] ?? 0;
    assert.notEqual(second, first);
    sup.process.kill('SIGTERM');
    assert.deepEqual(await sup.exited, { code: 0, signal: null });
    assert.ok(!alive(second), 'the child stopped with the supervisor');
    assert.equal(started(sup).length, 2, 'no restart while stopping');
    assert.ok(sup.logs().some((l) => l.msg === 'stopped' && l.component === undefined), 'the child exited gracefully');
  });

  it('does not restart a child that reports a configuration error (exit 78)', async () => {
    const sup = await startSupervisor({ PORT: 'not-a-port' });
    assert.deepEqual(await sup.exited, { code: 78, signal: null });
    assert.equal(started(sup).length, 1);
    assert.ok(sup.logs().some((l) => l.level === 60 && String(l.msg).includes('configuration error')));
  });

  it('gives up on a child that dies before it is ready N times in a row (its port is taken)', async () => {
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    try {
      const port = (squatter.address() as AddressInfo).port;
      const sup = await startSupervisor({ PORT: String(port), SUPERVISOR_BACKOFF_MS: '10', SUPERVISOR_MAX_START_FAILURES: '3' });
      assert.deepEqual(await sup.exited, { code: 1, signal: null });
      assert.equal(started(sup).length, 3);
      assert.equal(sup.logs().filter((l) => typeof l.restartInMs === 'number').length, 2);
      assert.ok(sup.logs().some((l) => l.level === 60 && String(l.msg).includes('3 times in a row')));
    } finally {
      squatter.close();
    }
  });
});
