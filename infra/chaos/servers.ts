/**
 * The chaos suite's own set of servers (Kafka, FerretDB, Elasticsearch, MinIO, Redis) from
 * infra/local, on their own ports and data dir, so killing them never touches anyone else's.
 * Every server runs in its own process group (infra/local/start.sh uses setsid); its pid file
 * `<data>/<server>/<server>.pid` holds "pid starttime" of the group leader.
 */
import { spawn } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { readProcTable, treeOf } from '../stack/procs.ts';
import { parseEnvFile } from '../stack/services.ts';

const ROOT = join(import.meta.dirname, '..', '..');

export const SERVER_NAMES = ['kafka', 'ferretdb', 'elasticsearch', 'minio', 'redis'] as const;
export type ServerName = typeof SERVER_NAMES[number];

/** Default ports of infra/local (docs/infra.md); the suite adds an offset to each. */
const DEFAULT_PORTS: Record<string, number> = {
  DOCSHARE_KAFKA_PORT: 19092,
  DOCSHARE_KAFKA_CONTROLLER_PORT: 19093,
  DOCSHARE_ES_PORT: 19200,
  DOCSHARE_ES_TRANSPORT_PORT: 19300,
  DOCSHARE_MINIO_PORT: 19000,
  DOCSHARE_MINIO_CONSOLE_PORT: 19001,
  DOCSHARE_FERRETDB_PORT: 27018,
  DOCSHARE_REDIS_PORT: 16379,
};

export const serverPorts = (offset: number): Record<string, string> =>
  Object.fromEntries(Object.entries(DEFAULT_PORTS).map(([k, v]) => [k, String(v + offset)]));

/** Runs a script of infra/local; resolves with its exit code and output (never rejects). */
const runScript = (script: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> =>
  new Promise((resolve) => {
    const child = spawn('bash', [join(ROOT, 'infra', 'local', script), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => { output += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { output += c.toString(); });
    child.once('error', (error) => resolve({ code: 1, output: `${output}\n${String(error)}` }));
    child.once('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });

/** Field 22 of /proc/<pid>/stat (start time), and the state letter. */
const procStat = async (pid: number): Promise<{ start: string; state: string; pgrp: number } | null> => {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '?', pgrp: Number(fields[2]), start: fields[19] ?? '' };
  } catch {
    return null;
  }
};

/** Live (non-zombie) processes of a process group. */
export const groupMembers = async (pgid: number): Promise<number[]> => {
  const out: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await procStat(Number(name));
    if (stat && stat.pgrp === pgid && stat.state !== 'Z') out.push(Number(name));
  }
  return out;
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class Servers {
  readonly dataDir: string;
  readonly env: NodeJS.ProcessEnv;
  private readonly paused = new Set<ServerName>();

  constructor(dataDir: string, portOffset: number) {
    this.dataDir = dataDir;
    this.env = { ...process.env, ...serverPorts(portOffset), DOCSHARE_INFRA_DATA: dataDir, DOCSHARE_START_PARALLEL: '1' };
  }

  /** Starts the given servers (all by default) in parallel; throws with start.sh's output on failure. */
  async start(names: readonly string[] = ['all'], attempts = 2): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      const result = await runScript('start.sh', [...names], this.env);
      if (result.code === 0) return;
      if (attempt >= attempts || /already in use/.test(result.output)) {
        throw new Error(`infra/local/start.sh ${names.join(' ')} failed (exit ${result.code}, attempt ${attempt}):\n${result.output}`);
      }
      // A start that failed (a JVM that died on a loaded machine) stopped what it launched: once more.
      console.log(`[chaos] infra/local/start.sh ${names.join(' ')} failed (exit ${result.code}); trying again. Its output:\n${result.output.split('\n').slice(-15).join('\n')}`);
      await sleep(2_000);
    }
  }

  /** The servers' settings for the app (KAFKA_BROKERS, MONGO_URL, ...), from stack.env. */
  stackEnv(): Promise<Record<string, string>> {
    return parseEnvFile(join(this.dataDir, 'stack.env'));
  }

  /** The recorded group leader of a server, if that exact process still lives. */
  async pid(name: ServerName): Promise<number | null> {
    let text: string;
    try {
      text = await readFile(join(this.dataDir, name, `${name}.pid`), 'utf8');
    } catch {
      return null;
    }
    const [pidText, start] = text.trim().split(/\s+/);
    const pid = Number(pidText);
    if (!Number.isSafeInteger(pid) || pid <= 1) return null;
    const stat = await procStat(pid);
    if (!stat || stat.state === 'Z' || (start !== undefined && stat.start !== start)) return null;
    return pid;
  }

  private async signalGroup(name: ServerName, signal: NodeJS.Signals): Promise<number> {
    const pid = await this.pid(name);
    if (pid === null) throw new Error(`${name} is not running (no live pid in ${join(this.dataDir, name, `${name}.pid`)})`);
    process.kill(-pid, signal);
    return pid;
  }

  /**
   * SIGKILL to every process of the server: its process group, and every descendant of its leader
   * (PostgreSQL's backends each setsid() out of the group of the `ferretdb` server); resolves when
   * none is left, so a restart never meets a backend of the killed server still holding its data.
   */
  async kill(name: ServerName): Promise<void> {
    if (this.paused.has(name)) await this.resume(name);
    const leader = await this.pid(name);
    const tree = leader === null ? [] : treeOf(await readProcTable(), leader).map((p) => p.pid);
    const pid = await this.signalGroup(name, 'SIGKILL');
    for (const member of tree) {
      try { process.kill(member, 'SIGKILL'); } catch { /* gone */ }
    }
    const alive = async (): Promise<number[]> => {
      const table = await readProcTable();
      return [...await groupMembers(pid), ...tree.filter((p) => table.has(p) && table.get(p)?.state !== 'Z')];
    };
    const deadline = Date.now() + 30_000;
    while ((await alive()).length > 0) {
      if (Date.now() > deadline) throw new Error(`${name}: processes ${(await alive()).join(', ')} still alive 30 s after SIGKILL`);
      await sleep(50);
    }
  }

  async pause(name: ServerName): Promise<void> {
    await this.signalGroup(name, 'SIGSTOP');
    this.paused.add(name);
  }

  async resume(name: ServerName): Promise<void> {
    await this.signalGroup(name, 'SIGCONT');
    this.paused.delete(name);
  }

  /** Stops every server (SIGCONT first for paused ones); falls back to SIGKILL of each group. Never throws. */
  async stopAll(): Promise<string> {
    for (const name of [...this.paused]) await this.resume(name).catch(() => undefined);
    const result = await runScript('stop.sh', ['all'], { ...this.env, DOCSHARE_STOP_TIMEOUT: '15' });
    for (const name of SERVER_NAMES) {
      const pid = await this.pid(name);
      if (pid !== null) {
        try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ }
      }
    }
    return result.output;
  }

  /** The last lines of a server's log (for failure reports). */
  async logTail(name: ServerName, lines = 30): Promise<string> {
    try {
      return (await readFile(join(this.dataDir, name, `${name}.log`), 'utf8')).split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}
