/**
 * npm run stack: the whole distributed system in the foreground. Checks its ports, provisions and
 * starts the real servers (infra/local), then every service as its own supervised process; a
 * service that dies is restarted with backoff, and only Ctrl-C or SIGTERM stops all of it.
 *
 * Env: PORT (gateway, 8080), PUBLIC_BASE_URL, DATA_DIR (./data; servers under DATA_DIR/infra,
 * service pid files under DATA_DIR/run), RATE_LIMIT_POINTS, RATE_LIMIT_WINDOW_SECONDS,
 * MAX_UPLOAD_BYTES, JWT_SECRET (else generated into DATA_DIR/secrets/jwt-secret), DATA_KEK (else generated
 * into DATA_DIR/secrets/data-kek: every service that reads or writes events gets it), WEBHOOK_SECRET_KEY
 * (else generated into DATA_DIR/secrets/webhook-key; docs-command and the webhook dispatcher share it),
 * STACK_SERVICE_PORT (first internal port, 18081), DOCSHARE_*_PORT (the servers' ports),
 * METRICS_PORT (the gateway's metrics listener; unset: the gateway serves no metrics, the other
 * services serve theirs on their own ports).
 */
import { spawnSync } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { resolve, join } from 'node:path';
import { loadOrCreateSecret } from '@docshare/auth';
import { publicBaseUrlOf } from '@docshare/http';
import { checkStackPorts } from './ports.ts';
import { GATEWAY, parseEnvFile, startServices, stopServices, type RunningService } from './services.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const env = process.env;
const dataDir = resolve(env.DATA_DIR ?? './data');
const infraData = join(dataDir, 'infra');
const pidDir = join(dataDir, 'run');
// start.sh lists there the servers it launched itself (not those it found running).
const startedFile = join(infraData, 'started-by-this-run');
const infraEnv = { ...env, DOCSHARE_INFRA_DATA: infraData, DOCSHARE_STARTED_FILE: startedFile };
const began = performance.now();

const problems = await checkStackPorts(env);
if (problems.length > 0) {
  for (const problem of problems) console.error(`stack: ${problem}`);
  console.error('stack: nothing was started');
  process.exit(1);
}
const port = Number(env.PORT ?? 8080);

const infra = (script: string, servers: string[] = ['all']): number =>
  spawnSync('bash', [join(ROOT, 'infra', 'local', script), ...servers], { env: infraEnv, stdio: 'inherit' }).status ?? 1;

/** Stops the servers this run launched (start.sh cleans up after its own failures). */
const stopServersWeStarted = async (): Promise<void> => {
  const started = (await readFile(startedFile, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  if (started.length > 0) infra('stop.sh', started);
  await rm(startedFile, { force: true });
};

await rm(startedFile, { force: true });
if (infra('start.sh') !== 0) {
  console.error('stack: the servers did not start (see above); the ones this run started were stopped');
  process.exit(1);
}
const serversMs = performance.now() - began;
const passthrough = ['RATE_LIMIT_POINTS', 'RATE_LIMIT_WINDOW_SECONDS', 'CORS_ORIGINS', 'MAX_UPLOAD_BYTES', 'JWT_TTL_SECONDS', 'DOWNLOAD_URL_TTL_SECONDS', 'LOG_LEVEL', 'TRUST_PROXY'];
let services: RunningService[];
try {
  services = await startServices({
    serverEnv: await parseEnvFile(join(infraData, 'stack.env')),
    gatewayPort: port,
    firstServicePort: Number(env.STACK_SERVICE_PORT ?? 18081),
    publicBaseUrl: publicBaseUrlOf(env, port),
    jwtSecret: env.JWT_SECRET || await loadOrCreateSecret(join(dataDir, 'secrets', 'jwt-secret')),
    // As `npm start` keeps it: the secrets sealed in the log stay readable across restarts.
    webhookSecretKey: env.WEBHOOK_SECRET_KEY || await loadOrCreateSecret(join(dataDir, 'secrets', 'webhook-key')),
    dataKek: env.DATA_KEK || await loadOrCreateSecret(join(dataDir, 'secrets', 'data-kek')),
    extraEnv: Object.fromEntries(passthrough.filter((k) => env[k] !== undefined).map((k) => [k, env[k] as string])),
    ...(env.METRICS_PORT ? { metricsPorts: { [GATEWAY.name]: Number(env.METRICS_PORT) } } : {}),
    output: 'inherit',
    pidDir,
  });
} catch (error) {
  console.error(`stack: ${String(error)}; stopping the servers this run started`);
  await stopServersWeStarted();
  process.exit(1);
}
await rm(startedFile, { force: true });
console.error(`stack: ready on http://localhost:${port} (servers ${(serversMs / 1000).toFixed(1)} s, everything ${((performance.now() - began) / 1000).toFixed(1)} s); Ctrl-C stops it`);

let stopping = false;
const stopAll = async (code: number): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await stopServices(services, undefined, pidDir);
  infra('stop.sh');
  process.exit(code);
};
process.once('SIGINT', () => void stopAll(0));
process.once('SIGTERM', () => void stopAll(0));
// Supervision ends on its own only when a service reports a configuration error (exit 78): a
// restart cannot help, so the stack stops rather than run without that service.
for (const service of services) {
  void service.supervisor.ended.then((end) => {
    if (stopping || !end.gaveUp) return;
    console.error(`stack: ${service.name} cannot run (exit ${end.code ?? end.signal}); stopping everything`);
    void stopAll(1);
  });
}
