/**
 * One distributed docshare instance (infra/stack/instance.ts) on the chaos suite's servers, in
 * its own process group, with its output in a log file. Finds the current pid of each service:
 * from `<DATA_DIR>/run/<service>.pid` (written by the instance's supervisor, rewritten on every
 * restart) or, where that file does not exist, from /proc (the service's entry in its command
 * line and the instance's namespaced database in its environment).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { sleep } from '@docshare/contracts';
import { SERVICE_NAMES, serviceNamed, type ServiceName } from '@docshare/contracts/services';
import { groupMembers } from './servers.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** Every service of an instance, in start order (the registry, libs/contracts/src/services.ts). */
export { SERVICE_NAMES, type ServiceName };

export interface InstanceOptions {
  port: number;
  dataDir: string;
  jwtSecret: string;
  serverEnv: Record<string, string>;
  logFile: string;
  extraEnv?: Record<string, string>;
}

export class Instance {
  readonly baseUrl: string;
  readonly dataDir: string;
  /** Namespace of the instance's databases, topics, index and bucket (as infra/stack/instance.ts derives it). */
  readonly ns: string;
  private child: ChildProcess | null = null;
  private log: WriteStream;
  private exitListeners: Array<(info: string) => void> = [];
  private expectingExit = false;

  private readonly options: InstanceOptions;

  constructor(options: InstanceOptions) {
    this.options = options;
    this.dataDir = resolve(options.dataDir);
    this.ns = createHash('sha256').update(this.dataDir).digest('hex').slice(0, 12);
    this.baseUrl = `http://127.0.0.1:${options.port}`;
    this.log = createWriteStream(options.logFile, { flags: 'a' });
  }

  get commandDb(): string { return `docshare_${this.ns}`; }
  get readDb(): string { return `docshare_${this.ns}_read`; }
  get running(): boolean { return this.child !== null && this.child.exitCode === null && this.child.signalCode === null; }

  /** Called when the instance's launcher exits without being asked to. */
  onUnexpectedExit(listener: (info: string) => void): void { this.exitListeners.push(listener); }

  async start(timeoutMs = 180_000): Promise<void> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    Object.assign(env, this.options.serverEnv, {
      PORT: String(this.options.port),
      PUBLIC_BASE_URL: this.baseUrl,
      DATA_DIR: this.dataDir,
      JWT_SECRET: this.options.jwtSecret,
      RATE_LIMIT_POINTS: '10000000',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
      ...this.options.extraEnv,
    });
    this.log.write(`\n===== chaos: instance start ${new Date().toISOString()} =====\n`);
    const child = spawn(process.execPath, [join(ROOT, 'infra', 'stack', 'instance.ts')], {
      cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
    });
    this.child = child;
    child.stdout?.pipe(this.log, { end: false });
    child.stderr?.pipe(this.log, { end: false });
    this.expectingExit = false;
    child.once('exit', (code, signal) => {
      const info = `instance launcher exited (${code ?? signal})`;
      this.log.write(`\n===== chaos: ${info} ${new Date().toISOString()} =====\n`);
      if (!this.expectingExit) for (const l of this.exitListeners) l(info);
    });
    const deadline = Date.now() + timeoutMs;
    let last = 'no answer';
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`the instance exited during start; see ${this.options.logFile}`);
      try {
        const res = await fetch(`${this.baseUrl}/readyz`, { signal: AbortSignal.timeout(3_000) });
        last = `${res.status} ${await res.text()}`;
        if (res.ok) return;
      } catch (error) {
        last = String(error);
      }
      await sleep(250);
    }
    throw new Error(`the instance was not ready within ${timeoutMs / 1000} s (last: ${last}); see ${this.options.logFile}`);
  }

  /** SIGTERM to the launcher (it stops its services), SIGKILL to the whole group after `graceMs`. Never throws. */
  async stop(graceMs = 30_000): Promise<void> {
    const child = this.child;
    this.expectingExit = true;
    if (child?.pid === undefined) return;
    if (this.running) {
      child.kill('SIGTERM');
      const deadline = Date.now() + graceMs;
      while (this.running && Date.now() < deadline) await sleep(100);
    }
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* group gone */ }
    // Services of an unsupervised instance may outlive a launcher that died: find them too.
    for (const name of SERVICE_NAMES) {
      for (const pid of await this.scanPids(name)) {
        try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
      }
    }
    const deadline = Date.now() + 15_000;
    while ((await groupMembers(child.pid)).length > 0 && Date.now() < deadline) await sleep(100);
  }

  async close(): Promise<void> {
    await this.stop();
    await new Promise((r) => this.log.end(r));
  }

  /** Pids of a service of this instance found through /proc. */
  private async scanPids(name: ServiceName): Promise<number[]> {
    const { entry } = serviceNamed(name);
    const marker = `MONGO_COMMAND_DB=${this.commandDb}`;
    const found: number[] = [];
    for (const dir of await readdir('/proc')) {
      if (!/^\d+$/.test(dir)) continue;
      try {
        const cmdline = await readFile(`/proc/${dir}/cmdline`, 'utf8');
        if (!cmdline.includes(entry)) continue;
        const environ = await readFile(`/proc/${dir}/environ`, 'utf8');
        if (!environ.split('\0').includes(marker)) continue;
        const stat = await readFile(`/proc/${dir}/stat`, 'utf8');
        if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
        found.push(Number(dir));
      } catch {
        // gone meanwhile, or not ours to read
      }
    }
    return found;
  }

  /** The current pid of a service (supervisor's pid file first, then /proc), or null. */
  async servicePid(name: ServiceName): Promise<number | null> {
    try {
      const text = await readFile(join(this.dataDir, 'run', `${name}.pid`), 'utf8');
      const pid = Number(/\d+/.exec(text)?.[0]);
      if (Number.isSafeInteger(pid) && pid > 1) {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
        if (stat !== '' && !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return pid;
      }
    } catch {
      // no supervisor pid file: fall back to /proc
    }
    const pids = await this.scanPids(name);
    return pids.length === 1 ? (pids[0] ?? null) : null;
  }
}
