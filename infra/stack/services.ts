/**
 * Starts docshare's services as separate processes against running servers (distributed mode):
 * used by `npm run stack` and by the distributed test run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

export interface ServiceSpec { name: string; entry: string }

/** Start order: the command side and projectors first, the gateway last. */
export const SERVICES: readonly ServiceSpec[] = [
  { name: 'docs-command', entry: 'services/docs-command/src/main.ts' },
  { name: 'stats-projector', entry: 'services/stats-projector/src/main.ts' },
  { name: 'files-projector', entry: 'services/files-projector/src/main.ts' },
  { name: 'search-projector', entry: 'services/search-projector/src/main.ts' },
];
export const GATEWAY: ServiceSpec = { name: 'gateway', entry: 'services/gateway/src/main.ts' };

export interface RunningService { name: string; url: string; child: ChildProcess }

export interface StackOptions {
  /** Environment of the servers (KAFKA_BROKERS, MONGO_URL, ...), e.g. from stack.env. */
  serverEnv: Record<string, string>;
  gatewayPort: number;
  /** Ports of the internal services start here (default 18081)... */
  firstServicePort?: number;
  /** ...unless given one by one (docs-command, stats, files, search). */
  servicePorts?: readonly number[];
  publicBaseUrl: string;
  jwtSecret: string;
  /** Extra environment for every service (RATE_LIMIT_*, MAX_UPLOAD_BYTES, ...). */
  extraEnv?: Record<string, string>;
  /** Where the services' output goes: inherited (foreground) or a callback per line. */
  output?: 'inherit' | ((service: string, line: string) => void);
  readyTimeoutMs?: number;
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

const waitReady = async (service: RunningService, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (service.child.exitCode !== null) throw new Error(`${service.name} exited with ${service.child.exitCode} during start`);
    try {
      const res = await fetch(`${service.url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
      last = `${res.status} ${await res.text()}`;
    } catch (error) {
      last = String(error);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${service.name} not ready after ${timeoutMs} ms: ${last}`);
};

const spawnService = (spec: ServiceSpec, port: number, env: Record<string, string>, output: StackOptions['output']): RunningService => {
  const child = spawn(process.execPath, [join(ROOT, spec.entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', output === 'inherit' || output === undefined ? 'inherit' : 'pipe', output === 'inherit' || output === undefined ? 'inherit' : 'pipe'],
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
  return { name: spec.name, url: `http://127.0.0.1:${port}`, child };
};

/** Starts every service, waits until each is ready, and returns them (gateway last). */
export const startServices = async (options: StackOptions): Promise<RunningService[]> => {
  const first = options.firstServicePort ?? 18081;
  const ports = SERVICES.map((_, i) => options.servicePorts?.[i] ?? first + i);
  const urls = {
    DOCS_COMMAND_URL: `http://127.0.0.1:${ports[0]}`,
    STATS_URL: `http://127.0.0.1:${ports[1]}`,
    FILES_URL: `http://127.0.0.1:${ports[2]}`,
    SEARCH_URL: `http://127.0.0.1:${ports[3]}`,
  };
  const env = {
    ...options.serverEnv, ...urls, ...options.extraEnv,
    JWT_SECRET: options.jwtSecret, PUBLIC_BASE_URL: options.publicBaseUrl, GATEWAY_PORT: String(options.gatewayPort),
  };
  const running: RunningService[] = [];
  try {
    const backends = SERVICES.map((spec, i) => spawnService(spec, ports[i] ?? first + i, env, options.output));
    running.push(...backends);
    await Promise.all(backends.map((s) => waitReady(s, options.readyTimeoutMs ?? 90_000)));
    const gateway = spawnService(GATEWAY, options.gatewayPort, env, options.output);
    running.push(gateway);
    await waitReady(gateway, options.readyTimeoutMs ?? 90_000);
    return running;
  } catch (error) {
    await stopServices(running);
    throw error;
  }
};

const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));

/** SIGTERM to the gateway first (no new requests), then the rest; SIGKILL after `graceMs`. */
export const stopServices = async (services: RunningService[], graceMs = 25_000): Promise<void> => {
  const ordered = [...services].reverse();
  const gateway = ordered.filter((s) => s.name === 'gateway');
  for (const group of [gateway, ordered.filter((s) => s.name !== 'gateway')]) {
    await Promise.all(group.map(async (s) => {
      if (s.child.exitCode !== null || s.child.signalCode !== null) return;
      s.child.kill('SIGTERM');
      const timer = setTimeout(() => s.child.kill('SIGKILL'), graceMs);
      await exited(s.child);
      clearTimeout(timer);
    }));
  }
};
