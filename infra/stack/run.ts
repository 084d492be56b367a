/**
 * npm run stack: the whole distributed system in the foreground. Provisions and starts the real
 * servers (infra/local), then every service as its own process; Ctrl-C or SIGTERM stops all of it.
 *
 * Env: PORT (gateway, 8080), PUBLIC_BASE_URL, DATA_DIR (./data; servers under DATA_DIR/infra),
 * RATE_LIMIT_POINTS, RATE_LIMIT_WINDOW_SECONDS, MAX_UPLOAD_BYTES, JWT_SECRET (else generated
 * into DATA_DIR/secrets/jwt-secret), STACK_SERVICE_PORT (first internal port, 18081).
 */
import { spawnSync } from 'node:child_process';
import { resolve, join } from 'node:path';
import { loadOrCreateSecret } from '@docshare/auth';
import { publicBaseUrlOf } from '@docshare/http';
import { parseEnvFile, startServices, stopServices } from './services.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const env = process.env;
const port = Number(env.PORT ?? 8080);
const dataDir = resolve(env.DATA_DIR ?? './data');
const infraData = join(dataDir, 'infra');
const infraEnv = { ...env, DOCSHARE_INFRA_DATA: infraData };
const began = performance.now();

const infra = (script: string): number =>
  spawnSync('bash', [join(ROOT, 'infra', 'local', script), 'all'], { env: infraEnv, stdio: 'inherit' }).status ?? 1;

if (infra('start.sh') !== 0) {
  console.error('stack: the servers did not start (see above)');
  process.exit(1);
}
const serversMs = performance.now() - began;
const passthrough = ['RATE_LIMIT_POINTS', 'RATE_LIMIT_WINDOW_SECONDS', 'MAX_UPLOAD_BYTES', 'STORAGE_QUOTA_BYTES', 'JWT_TTL_SECONDS', 'DOWNLOAD_URL_TTL_SECONDS', 'LOG_LEVEL', 'TRUST_PROXY'];
let services;
try {
  services = await startServices({
    serverEnv: await parseEnvFile(join(infraData, 'stack.env')),
    gatewayPort: port,
    firstServicePort: Number(env.STACK_SERVICE_PORT ?? 18081),
    publicBaseUrl: publicBaseUrlOf(env, port),
    jwtSecret: env.JWT_SECRET || await loadOrCreateSecret(join(dataDir, 'secrets', 'jwt-secret')),
    extraEnv: Object.fromEntries(passthrough.filter((k) => env[k] !== undefined).map((k) => [k, env[k] as string])),
    output: 'inherit',
  });
} catch (error) {
  console.error(`stack: ${String(error)}`);
  infra('stop.sh');
  process.exit(1);
}
console.error(`stack: ready on http://localhost:${port} (servers ${(serversMs / 1000).toFixed(1)} s, everything ${((performance.now() - began) / 1000).toFixed(1)} s); Ctrl-C stops it`);

let stopping = false;
const stopAll = async (code: number): Promise<never> => {
  stopping = true;
  await stopServices(services);
  infra('stop.sh');
  process.exit(code);
};
process.once('SIGINT', () => void stopAll(0));
process.once('SIGTERM', () => void stopAll(0));
for (const service of services) {
  service.child.once('exit', (code, signal) => {
    if (stopping) return;
    console.error(`stack: ${service.name} exited (${code ?? signal}); stopping everything`);
    void stopAll(1);
  });
}
