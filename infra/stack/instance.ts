/**
 * One docshare instance in distributed mode on servers that are already running: every service
 * its own supervised process (restarted with backoff when it dies; its current pid in
 * DATA_DIR/run/<service>.pid), all in this process's group (so `kill -9 -<pid>` takes the whole
 * instance down, as a machine crash would). Server URLs come from the environment (KAFKA_BROKERS,
 * MONGO_URL, ELASTICSEARCH_URL, MINIO_*, REDIS_URL); the instance's databases, topics, index
 * alias, bucket, consumer groups and rate-limit keys are namespaced by DATA_DIR, so several
 * instances share one set of servers and a restart on the same DATA_DIR finds its data again.
 *
 * Env: PORT, PUBLIC_BASE_URL, DATA_DIR, RATE_LIMIT_*, CORS_ORIGINS, MAX_UPLOAD_BYTES, JWT_*, DOWNLOAD_URL_TTL_SECONDS,
 * WEBHOOK_SECRET_KEY (else generated into DATA_DIR/secrets/webhook-key; the other WEBHOOK_* reach every service as given),
 * METRICS_PORT (the gateway's metrics listener; the other services get free ports of their own).
 * Each service's metrics URL is written to DATA_DIR/run/metrics.json (`{ "<service>": "http://…" }`).
 */
import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { loadOrCreateSecret } from '@docshare/auth';
import { publicBaseUrlOf } from '@docshare/http';
import { GATEWAY, SERVICES, startServices, stopServices } from './services.ts';
import { freePorts } from './ports.ts';

const env = process.env;
const port = Number(env.PORT ?? 8080);
const dataDir = resolve(env.DATA_DIR ?? './data');
await mkdir(dataDir, { recursive: true });
const ns = createHash('sha256').update(dataDir).digest('hex').slice(0, 12);
/** `<service>.pid` of each service's current process, rewritten on every restart. */
const pidDir = join(dataDir, 'run');

const gatewayMetricsPort = env.METRICS_PORT ? Number(env.METRICS_PORT) : undefined;
// The gateway's ports were chosen by whoever started this instance and are free until the gateway
// binds them, last: a port picked here must not be one of them.
const reserved = new Set([port, gatewayMetricsPort]);
const picked = (await freePorts(2 * SERVICES.length + reserved.size)).filter((p) => !reserved.has(p)).slice(0, 2 * SERVICES.length);
const [servicePorts, metricsPorts] = [picked.slice(0, SERVICES.length), picked.slice(SERVICES.length)];

const passthrough = ['RATE_LIMIT_POINTS', 'RATE_LIMIT_WINDOW_SECONDS', 'CORS_ORIGINS', 'MAX_UPLOAD_BYTES', 'STORAGE_QUOTA_BYTES', 'JWT_TTL_SECONDS', 'DOWNLOAD_URL_TTL_SECONDS', 'LOG_LEVEL'];
const services = await startServices({
  serverEnv: {},
  gatewayPort: port,
  servicePorts,
  publicBaseUrl: publicBaseUrlOf(env, port),
  jwtSecret: env.JWT_SECRET || await loadOrCreateSecret(join(dataDir, 'secrets', 'jwt-secret')),
  // As `npm start` keeps it: the secrets sealed in the log stay readable across restarts.
  webhookSecretKey: env.WEBHOOK_SECRET_KEY || await loadOrCreateSecret(join(dataDir, 'secrets', 'webhook-key')),
  dataKek: env.DATA_KEK || await loadOrCreateSecret(join(dataDir, 'secrets', 'data-kek')),
  extraEnv: {
    ...Object.fromEntries(passthrough.filter((k) => env[k] !== undefined).map((k) => [k, env[k] as string])),
    MONGO_COMMAND_DB: `docshare_${ns}`,
    MONGO_READ_DB: `docshare_${ns}_read`,
    KAFKA_EVENTS_TOPIC: `docshare.events.${ns}`,
    KAFKA_DLQ_TOPIC: `docshare.events.${ns}.dlq`,
    KAFKA_EVENTS_PARTITIONS: '3',
    KAFKA_GROUP_SUFFIX: `.${ns}`,
    ELASTICSEARCH_ALIAS: `docshare-files-${ns}`,
    MINIO_BUCKET: `docshare-${ns}`,
    RATE_LIMIT_KEY_PREFIX: `docshare-rl-${ns}`,
  },
  metricsPorts: {
    ...Object.fromEntries(SERVICES.map((spec, i) => [spec.name, metricsPorts[i] as number])),
    ...(gatewayMetricsPort === undefined ? {} : { [GATEWAY.name]: gatewayMetricsPort }),
  },
  output: 'inherit',
  pidDir,
});
const metricsFile = join(pidDir, 'metrics.json');
await mkdir(pidDir, { recursive: true });
await writeFile(`${metricsFile}.tmp`, `${JSON.stringify(Object.fromEntries(services.flatMap((s) => (s.metricsUrl ? [[s.name, s.metricsUrl]] : []))), null, 2)}\n`);
await rename(`${metricsFile}.tmp`, metricsFile);
console.error(`instance ${ns}: ready on port ${port}`);

let stopping = false;
const stop = async (code: number): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await stopServices(services, undefined, pidDir);
  process.exit(code);
};
process.once('SIGTERM', () => void stop(0));
process.once('SIGINT', () => void stop(0));
// A service that dies is restarted by its supervisor; supervision ends on its own only on a
// configuration error (exit 78), which no restart can fix.
for (const service of services) {
  void service.supervisor.ended.then((end) => {
    if (stopping || !end.gaveUp) return;
    console.error(`instance ${ns}: ${service.name} cannot run (exit ${end.code ?? end.signal}); stopping the instance`);
    void stop(1);
  });
}
