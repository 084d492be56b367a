// Starts a docshare server for the black-box tests, or binds to an external one.
//
// Default mode: every call to startServer() spawns `node services/standalone/src/main.ts` on a free
// port with a fresh temporary DATA_DIR. When DOCSHARE_BASE_URL is set, no process is spawned and the
// returned Server talks to that URL; stop/kill/restart then throw, and tests that need them (or a
// special environment) skip themselves through `localOnly`.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, freePorts } from '../../infra/stack/free-ports.ts';

export const REPO_ROOT = path.resolve(import.meta.dirname, '..', '..');
export const EXTERNAL_BASE_URL = process.env['DOCSHARE_BASE_URL']?.replace(/\/+$/, '') || undefined;

/**
 * `embedded` (default): a server is `npm start`, one process. `distributed`: a server is a whole
 * instance of separate service processes on the real servers named in the environment
 * (infra/stack/instance.ts, run under infra/with-stack.ts), namespaced by its DATA_DIR.
 */
export const TARGET = process.env['DOCSHARE_TARGET'] === 'distributed' ? 'distributed' : 'embedded';
const ENTRY = TARGET === 'distributed' ? 'infra/stack/instance.ts' : 'services/standalone/src/main.ts';
// A distributed instance takes longer to be ready (five processes, Kafka group joins).
const READY_TIMEOUT_MS = TARGET === 'distributed' ? 120_000 : 30_000;

/** `skip` option for tests that need a server of their own (restart, kill, special env). */
export const localOnly: string | false = EXTERNAL_BASE_URL
  ? 'needs a locally spawned server (restart/kill/special env); DOCSHARE_BASE_URL is set'
  : false;

/** `skip` option for tests that sign JWTs with the server's secret (known locally, or DOCSHARE_JWT_SECRET). */
export const secretOnly: string | false = EXTERNAL_BASE_URL && !process.env['DOCSHARE_JWT_SECRET']
  ? 'needs the server\'s JWT secret: DOCSHARE_BASE_URL is set without DOCSHARE_JWT_SECRET'
  : false;

/** A value of `undefined` removes the variable from the child's environment. */
export type ServerEnv = Record<string, string | undefined>;

export interface Server {
  readonly baseUrl: string;
  /**
   * The internal metrics listener (`METRICS_PORT`, `http://127.0.0.1:<port>`), where /metrics is
   * served (never on `baseUrl`); undefined against an external server or when the test unset it.
   */
  readonly metricsUrl: string | undefined;
  readonly dataDir: string;
  readonly port: number;
  readonly external: boolean;
  /** Everything the child wrote to stdout/stderr (last 256 KiB). */
  output(): string;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
  /** Start again on the same port and data dir; `env` is merged over the original env. */
  restart(env?: ServerEnv): Promise<void>;
  /** Kill the child if it runs and remove the temporary data dir (if we made it). */
  dispose(): Promise<void>;
}

const CONFIG_VARS = [
  'PORT', 'PUBLIC_BASE_URL', 'DATA_DIR', 'RATE_LIMIT_POINTS', 'RATE_LIMIT_WINDOW_SECONDS',
  'MAX_UPLOAD_BYTES', 'JWT_SECRET', 'JWT_TTL_SECONDS', 'DOWNLOAD_URL_TTL_SECONDS', 'STORAGE_QUOTA_BYTES',
  'METRICS_PORT', 'METRICS_HOST',
];
const OUTPUT_LIMIT = 256 * 1024;
const HEALTH_TIMEOUT_MS = READY_TIMEOUT_MS;

const live = new Set<ChildProcess>();

/** Sends a signal to the server; in distributed mode to its whole process group (every service). */
const signalTree = (child: ChildProcess, sig: NodeJS.Signals): void => {
  if (TARGET === 'distributed' && child.pid !== undefined && sig === 'SIGKILL') {
    try {
      process.kill(-child.pid, sig);
      return;
    } catch {
      // the group is gone already
    }
  }
  child.kill(sig);
};

process.on('exit', () => {
  for (const child of live) signalTree(child, 'SIGKILL');
});

/** Whether a process of ours with this pid still runs. */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Free ports: the one implementation the stack launchers use too. */
export { freePort, freePorts };

function externalServer(baseUrl: string): Server {
  const unsupported = async (): Promise<void> => {
    throw new Error('not supported against an external server (DOCSHARE_BASE_URL)');
  };
  const port = Number(new URL(baseUrl).port || 80);
  return {
    baseUrl,
    metricsUrl: undefined,
    dataDir: '',
    port,
    external: true,
    output: () => '',
    stop: unsupported,
    kill: unsupported,
    restart: unsupported,
    dispose: async () => {},
  };
}

export async function startServer(env: ServerEnv = {}): Promise<Server> {
  if (EXTERNAL_BASE_URL !== undefined) return externalServer(EXTERNAL_BASE_URL);

  const [port, freeMetricsPort] = await freePorts(2) as [number, number];
  const baseUrl = `http://127.0.0.1:${port}`;
  // The metrics listener of the server (in distributed mode: the gateway's); `METRICS_PORT: undefined` goes without.
  const metricsPort = 'METRICS_PORT' in env ? env['METRICS_PORT'] : String(freeMetricsPort);
  const madeDataDir = env['DATA_DIR'] === undefined;
  const dataDir = env['DATA_DIR'] ?? (await mkdtemp(path.join(os.tmpdir(), 'docshare-test-')));
  let baseEnv: ServerEnv = { ...env };
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let out = '';

  const append = (chunk: Buffer): void => {
    out += chunk.toString('utf8');
    if (out.length > OUTPUT_LIMIT) out = out.slice(out.length - OUTPUT_LIMIT);
  };

  const spawnChild = async (): Promise<void> => {
    const childEnv: NodeJS.ProcessEnv = { ...process.env };
    delete childEnv['NODE_TEST_CONTEXT'];
    for (const name of CONFIG_VARS) delete childEnv[name];
    const wanted: ServerEnv = {
      RATE_LIMIT_POINTS: '100000',
      ...baseEnv,
      METRICS_PORT: metricsPort,
      PORT: String(port),
      PUBLIC_BASE_URL: baseEnv['PUBLIC_BASE_URL'] ?? baseUrl,
      DATA_DIR: dataDir,
    };
    for (const [k, v] of Object.entries(wanted)) {
      if (v === undefined) delete childEnv[k];
      else childEnv[k] = v;
    }
    out += `\n--- spawn (port ${port}, data ${dataDir}) ---\n`;
    const c = spawn(process.execPath, [ENTRY], {
      cwd: REPO_ROOT,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: TARGET === 'distributed',
    });
    child = c;
    live.add(c);
    c.stdout?.on('data', append);
    c.stderr?.on('data', append);
    let exitInfo: string | undefined;
    exited = new Promise<void>((resolve) => {
      c.on('exit', (code, signal) => {
        exitInfo = `exited with code ${code} signal ${signal}`;
        live.delete(c);
        resolve();
      });
      c.on('error', (err) => {
        exitInfo = `failed to spawn: ${err.message}`;
        live.delete(c);
        resolve();
      });
    });

    const deadline = Date.now() + HEALTH_TIMEOUT_MS;
    for (;;) {
      if (exitInfo !== undefined) {
        throw new Error(`server ${exitInfo} before /healthz answered 200. Output:\n${out}`);
      }
      try {
        const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2000) });
        await res.arrayBuffer();
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        signalTree(c, 'SIGKILL');
        await exited;
        throw new Error(`server did not answer /healthz with 200 within ${HEALTH_TIMEOUT_MS} ms. Output:\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const signal = async (sig: NodeJS.Signals, graceMs: number): Promise<void> => {
    const c = child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) {
      await exited;
      return;
    }
    signalTree(c, sig);
    const timer = setTimeout(() => signalTree(c, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    if (TARGET === 'distributed' && c.pid !== undefined) {
      // The launcher is gone; make sure none of its services outlive it.
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {
        // nothing left
      }
    }
  };

  await spawnChild();

  return {
    baseUrl,
    metricsUrl: metricsPort === undefined || metricsPort === '' ? undefined : `http://127.0.0.1:${metricsPort}`,
    dataDir,
    port,
    external: false,
    output: () => out,
    stop: () => signal('SIGTERM', 30_000),
    kill: () => signal('SIGKILL', 15_000),
    restart: async (more: ServerEnv = {}) => {
      await signal('SIGTERM', 30_000);
      baseEnv = { ...baseEnv, ...more };
      await spawnChild();
    },
    dispose: async () => {
      await signal('SIGKILL', 15_000);
      if (madeDataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
