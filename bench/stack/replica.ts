/**
 * A second docs-command replica for bench:stack's hot-file measure (issue 21: "two docs-command
 * replicas and no 5xx"). The instance's launcher (infra/stack/instance.ts) runs one process per
 * service and its gateway knows one DOCS_COMMAND_URL, so the bench starts, beside the instance,
 * another docs-command and another gateway in front of it, each with the environment of the
 * instance's own process (read from /proc: the same servers, namespace, secrets and internal
 * token) on ports of their own. Requests alternate between the two gateways: both replicas serve
 * the same files of the same event store at once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { retrying, sleep } from '@docshare/contracts';
import { serviceNamed } from '@docshare/contracts/services';

const ROOT = join(import.meta.dirname, '..', '..');

/** `/proc/<pid>/environ` (NUL-separated `KEY=value`) as an object; later keys win, as in a process. */
export const parseEnviron = (text: string): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const entry of text.split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) out[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return out;
};

/**
 * The environment of a copy of a service on another port: its own, with PORT moved, no metrics
 * listener (the instance's owns that port) and `overrides` on top.
 */
export const replicaEnv = (own: Record<string, string>, port: number, overrides: Record<string, string> = {}): Record<string, string> => ({
  ...own, PORT: String(port), METRICS_PORT: '', ...overrides,
});

export interface Replica { name: string; url: string; child: ChildProcess }

/** Starts `service` with `env` (output appended to `logFile`) and waits for its /readyz; stops it if it is not ready. */
export const startReplica = async (service: 'docs-command' | 'gateway', env: Record<string, string>, logFile: string, timeoutMs = 90_000): Promise<Replica> => {
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(process.execPath, [join(ROOT, serviceNamed(service).entry)], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  // A process that exits during start ends the wait at once.
  const exited = new AbortController();
  child.once('exit', () => {
    exited.abort();
    log.end();
  });
  const replica = { name: service, url: `http://127.0.0.1:${env.PORT}`, child };
  try {
    await retrying(async () => {
      const res = await fetch(`${replica.url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      const text = await res.text();
      if (!res.ok) throw new Error(`${res.status} ${text.slice(0, 200)}`);
    }, { attempts: Math.ceil(timeoutMs / 200), baseMs: 200, capMs: 200, signal: exited.signal });
  } catch (error) {
    await stopReplica(replica);
    const why = exited.signal.aborted ? `exited (${child.exitCode ?? child.signalCode}) during start` : `not ready: ${error instanceof Error ? error.message : String(error)}`;
    throw new Error(`${service} replica ${why}; see ${logFile}`);
  }
  return replica;
};

/** SIGTERM, SIGKILL after `graceMs`; resolves once the process is gone. */
export const stopReplica = async (replica: Replica, graceMs = 20_000): Promise<void> => {
  const { child } = replica;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await Promise.race([gone, sleep(graceMs)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await gone;
};

/** The environment of the running process `pid` (one of the instance's services). */
export const environOf = async (pid: number): Promise<Record<string, string>> => parseEnviron(await readFile(`/proc/${pid}/environ`, 'utf8'));
