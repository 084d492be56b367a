/**
 * Starts docshare's services as separate processes against running servers (distributed mode):
 * used by `npm run stack` and by the distributed test run. Each service runs under a supervisor
 * (services/standalone/src/supervisor.ts): once the stack has started, a service that dies is
 * restarted with backoff (a JSON log line says so) and the others keep serving.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '@docshare/contracts';
import { BACKEND_SERVICES, GATEWAY_SERVICE, UPSTREAM_SERVICES } from '@docshare/contracts/services';
import { makeLogger, type Logger } from '@docshare/http';
import { CONFIG_ERROR_EXIT_CODE, supervise, type RestartPolicy, type Supervised } from '@docshare/standalone/supervisor';

const ROOT = join(import.meta.dirname, '..', '..');

export interface ServiceSpec { name: string; entry: string }

/** Start order (the registry's, libs/contracts/src/services.ts): every service behind the gateway first... */
export const SERVICES: readonly ServiceSpec[] = BACKEND_SERVICES;
/** ...the gateway last. */
export const GATEWAY: ServiceSpec = GATEWAY_SERVICE;

export interface RunningService {
  name: string;
  url: string;
  /** Its metrics listener (`METRICS_PORT`), when it was given one; else /metrics is on `url` (never on the gateway's). */
  metricsUrl?: string;
  /** The service's process now (a new one after each restart; the last one once stopped). */
  readonly child: ChildProcess;
  supervisor: Supervised;
}

/**
 * Restarts in a stack: 250 ms, doubling, at most 5 s (a service that died while a server is down
 * comes back within 5 s of the server), reset after a minute up. Never given up, except on the
 * configuration-error exit code: after the first start the cause of a crash loop is usually a
 * server that is down, and giving up would turn its outage into a permanent one.
 */
export const STACK_RESTART_POLICY: RestartPolicy = {
  initialDelayMs: 250,
  maxDelayMs: 5_000,
  stableMs: 60_000,
  maxStartFailures: Infinity,
  giveUpOnExitCodes: [CONFIG_ERROR_EXIT_CODE],
};

export interface StackOptions {
  /** Environment of the servers (KAFKA_BROKERS, MONGO_URL, ...), e.g. from stack.env. */
  serverEnv: Record<string, string>;
  gatewayPort: number;
  /** Ports of the internal services start here (default 18081)... */
  firstServicePort?: number;
  /** ...unless given one by one, in SERVICES' order. */
  servicePorts?: readonly number[];
  publicBaseUrl: string;
  jwtSecret: string;
  /**
   * The key webhook secrets are sealed with in events (WEBHOOK_SECRET_KEY): docs-command seals, the
   * webhook dispatcher opens, so both get this one. Keep it with the stack's data (a new key cannot
   * open the secrets already recorded); default: a new one for this stack only.
   */
  webhookSecretKey?: string;
  /**
   * The KEK every person's data key is wrapped with (DATA_KEK, issue 24): the services that write or
   * read events get it. Keep it with the stack's data (without it the log's personal fields cannot
   * be opened); default: a new one for this stack only.
   */
  dataKek?: string;
  /** Extra environment for every service (RATE_LIMIT_*, MAX_UPLOAD_BYTES, ...). */
  extraEnv?: Record<string, string>;
  /**
   * Each service's metrics listener port (`METRICS_PORT`), by service name; a service without one
   * serves /metrics on its own port (the gateway: not at all). Never inherited from this process.
   */
  metricsPorts?: Readonly<Record<string, number>>;
  /** Where the services' output goes: inherited (foreground) or a callback per line. */
  output?: 'inherit' | ((service: string, line: string) => void);
  readyTimeoutMs?: number;
  /**
   * Where each service's current pid is kept, as `<pidDir>/<service>.pid` (rewritten on every
   * restart, removed when the stack stops): how a test finds a service to kill.
   */
  pidDir?: string;
  restartPolicy?: RestartPolicy;
}

/** Parses `KEY=value` lines (a stack.env file). */
export const parseEnvFile = async (path: string): Promise<Record<string, string>> => {
  const out: Record<string, string> = {};
  for (const line of (await readFile(path, 'utf8')).split('\n')) {
    const match = /^\s*([A-Z0-9_]+)=(.*)$/.exec(line);
    if (match?.[1]) out[match[1]] = (match[2] ?? '').replace(/^(['"])(.*)\1$/, '$2');
  }
  return out;
};

/** The path of a service's pid file under `pidDir`. */
export const pidFileOf = (pidDir: string, service: string): string => join(pidDir, `${service}.pid`);

/** Replaces the pid file in one rename, so a reader never sees it half written. */
const writePidFile = (pidDir: string, service: string, pid: number): void => {
  mkdirSync(pidDir, { recursive: true });
  const file = pidFileOf(pidDir, service);
  writeFileSync(`${file}.tmp`, `${pid}\n`);
  renameSync(`${file}.tmp`, file);
};

const exited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

/** Waits for the service's first process to answer /readyz; its death fails the start. */
const waitReady = async (service: RunningService, timeoutMs: number): Promise<void> => {
  const first = service.child;
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (exited(first)) throw new Error(`${service.name} exited with ${first.exitCode ?? first.signalCode} during start`);
    try {
      const res = await fetch(`${service.url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      const text = await res.text();
      // A projector is ready (it serves queries) before it has joined its consumer group; a start
      // waits for the join too, so the first commands do not wait out read-your-writes.
      if (res.ok && !/"consumer":"(?!ok")/.test(text)) return;
      last = `${res.status} ${text}`;
    } catch (error) {
      last = String(error);
    }
    await sleep(100);
  }
  throw new Error(`${service.name} not ready after ${timeoutMs} ms: ${last}`);
};

/** A supervisor's own log lines go where the service's output goes. */
const supervisorLogger = (name: string, output: StackOptions['output']): Logger =>
  typeof output === 'function'
    ? makeLogger(name, 'info', { write: (line: string) => output(name, line.trimEnd()) })
    : makeLogger(name, 'info');

const spawnService = (
  spec: ServiceSpec, port: number, env: Record<string, string>, output: StackOptions['output'], metricsPort: number | undefined,
): ChildProcess => {
  const inherit = output === 'inherit' || output === undefined;
  const child = spawn(process.execPath, [join(ROOT, spec.entry)], {
    cwd: ROOT,
    // One METRICS_PORT per service: a value this process was given must not reach all five.
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: metricsPort === undefined ? '' : String(metricsPort) },
    // Not detached: every service stays in the launcher's process group, so killing the group
    // (a machine crash in the tests) takes restarted services down too.
    stdio: ['ignore', inherit ? 'inherit' : 'pipe', inherit ? 'inherit' : 'pipe'],
  });
  if (typeof output === 'function') {
    for (const stream of [child.stdout, child.stderr]) {
      let buffer = '';
      stream?.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split('\n');
        buffer = lines.pop() ?? '';
        for (const line of lines) output(spec.name, line);
      });
    }
  }
  return child;
};

const superviseService = (spec: ServiceSpec, port: number, env: Record<string, string>, options: StackOptions): RunningService => {
  let latest: ChildProcess | undefined;
  const metricsPort = options.metricsPorts?.[spec.name];
  const supervisor = supervise({
    name: spec.name,
    logger: supervisorLogger(spec.name, options.output),
    policy: options.restartPolicy ?? STACK_RESTART_POLICY,
    spawn: () => spawnService(spec, port, env, options.output, metricsPort),
    onStart: (child) => {
      latest = child;
      if (options.pidDir !== undefined && child.pid !== undefined) writePidFile(options.pidDir, spec.name, child.pid);
    },
  });
  return {
    name: spec.name,
    url: `http://127.0.0.1:${port}`,
    // METRICS_HOST is 127.0.0.1 unless this process was told otherwise (then it still listens there).
    ...(metricsPort === undefined ? {} : { metricsUrl: `http://127.0.0.1:${metricsPort}` }),
    get child(): ChildProcess {
      if (latest === undefined) throw new Error(`${spec.name} has no process`);
      return latest;
    },
    supervisor,
  };
};

/** Starts every service, waits until each is ready, and returns them (gateway last). */
export const startServices = async (options: StackOptions): Promise<RunningService[]> => {
  const first = options.firstServicePort ?? 18081;
  const ports = SERVICES.map((_, i) => options.servicePorts?.[i] ?? first + i);
  // DOCS_COMMAND_URL, STATS_URL, ...: where the gateway (and the text extractor) find each service.
  const urls = Object.fromEntries(UPSTREAM_SERVICES.map((upstream) => {
    const i = SERVICES.findIndex((spec) => spec.name === upstream.name);
    return [upstream.urlVar, `http://127.0.0.1:${ports[i] ?? first + i}`];
  }));
  const dispatcherIndex = SERVICES.findIndex((spec) => spec.name === 'webhook-dispatcher');
  const dispatcherPort = ports[dispatcherIndex] ?? first + dispatcherIndex;
  const env = {
    // docs-command, the text extractor and the webhook dispatcher share it (docs-command's internal routes); one per stack.
    INTERNAL_TOKEN: randomBytes(24).toString('hex'),
    ...options.serverEnv, ...urls, ...options.extraEnv,
    JWT_SECRET: options.jwtSecret, PUBLIC_BASE_URL: options.publicBaseUrl, GATEWAY_PORT: String(options.gatewayPort),
    WEBHOOK_SECRET_KEY: options.webhookSecretKey ?? randomBytes(32).toString('hex'),
    DATA_KEK: options.dataKek ?? randomBytes(32).toString('base64url'),
    // docs-command asks the dispatcher to check an endpoint's URL at registration, as in compose.
    WEBHOOK_DISPATCHER_URL: `http://127.0.0.1:${dispatcherPort}`,
  };
  const running: RunningService[] = [];
  try {
    const backends = SERVICES.map((spec, i) => superviseService(spec, ports[i] ?? first + i, env, options));
    running.push(...backends);
    await Promise.all(backends.map((s) => waitReady(s, options.readyTimeoutMs ?? 90_000)));
    const gateway = superviseService(GATEWAY, options.gatewayPort, env, options);
    running.push(gateway);
    await waitReady(gateway, options.readyTimeoutMs ?? 90_000);
    return running;
  } catch (error) {
    await stopServices(running, undefined, options.pidDir);
    throw error;
  }
};

/**
 * Ends supervision (no more restarts) and stops the services: SIGTERM to the gateway first (no
 * new requests), then the rest; SIGKILL after `graceMs`. Removes their pid files.
 */
export const stopServices = async (services: RunningService[], graceMs = 25_000, pidDir?: string): Promise<void> => {
  const ordered = [...services].reverse();
  const gateway = ordered.filter((s) => s.name === GATEWAY.name);
  for (const group of [gateway, ordered.filter((s) => s.name !== GATEWAY.name)]) {
    await Promise.all(group.map((s) => s.supervisor.stop('SIGTERM', graceMs)));
  }
  if (pidDir !== undefined) for (const s of services) rmSync(pidFileOf(pidDir, s.name), { force: true });
};
