/**
 * Runs a command with a real test stack in its environment (KAFKA_BROKERS, MONGO_URL,
 * ELASTICSEARCH_URL, MINIO_*, REDIS_URL), taken from, in this order:
 *   1. explicit URLs already in the environment (all five must be set),
 *   2. testcontainers, where a container runtime answers,
 *   3. the local servers of infra/local (provisioned on first use, cached outside the repo).
 * When none works the run fails: the integration suites never skip.
 *
 *   node infra/with-stack.ts -- <command> [args...]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnvFile } from './stack/services.ts';

const ROOT = join(import.meta.dirname, '..');
const KEYS = ['KAFKA_BROKERS', 'MONGO_URL', 'ELASTICSEARCH_URL', 'MINIO_ENDPOINT', 'MINIO_ACCESS_KEY', 'MINIO_SECRET_KEY', 'REDIS_URL'] as const;

interface Stack { source: string; env: Record<string, string>; stop(): Promise<void> }

const fromEnv = (): Stack | null => {
  const missing = KEYS.filter((k) => !process.env[k]);
  if (missing.length === KEYS.length) return null;
  if (missing.length > 0) throw new Error(`explicit test stack is incomplete: ${missing.join(', ')} missing`);
  return { source: 'environment', env: Object.fromEntries(KEYS.map((k) => [k, process.env[k] as string])), stop: async () => {} };
};

/** Images matching the servers of infra/local (docs/infra.md). */
const IMAGES = {
  kafka: 'confluentinc/cp-kafka:7.9.1',
  mongo: 'mongo:7.0',
  elasticsearch: 'docker.elastic.co/elasticsearch/elasticsearch:9.5.4',
  minio: 'minio/minio:RELEASE.2025-09-07T16-13-09Z',
  redis: 'redis:7.0',
};

const fromTestcontainers = async (): Promise<Stack | null> => {
  const tc = await import('testcontainers');
  try {
    await tc.getContainerRuntimeClient();
  } catch {
    return null;
  }
  const [{ KafkaContainer }, { MongoDBContainer }, { ElasticsearchContainer }, { MinioContainer }, { RedisContainer }] = await Promise.all([
    import('@testcontainers/kafka'), import('@testcontainers/mongodb'), import('@testcontainers/elasticsearch'),
    import('@testcontainers/minio'), import('@testcontainers/redis'),
  ]);
  const [kafka, mongo, es, minio, redis] = await Promise.all([
    new KafkaContainer(IMAGES.kafka).withKraft().start(),
    new MongoDBContainer(IMAGES.mongo).start(),
    new ElasticsearchContainer(IMAGES.elasticsearch).withEnvironment({ 'xpack.security.enabled': 'false' }).start(),
    new MinioContainer(IMAGES.minio).start(),
    new RedisContainer(IMAGES.redis).start(),
  ]);
  return {
    source: 'testcontainers',
    env: {
      KAFKA_BROKERS: `${kafka.getHost()}:${kafka.getMappedPort(9093)}`,
      MONGO_URL: `${mongo.getConnectionString()}/?directConnection=true`,
      ELASTICSEARCH_URL: `http://${es.getHost()}:${es.getPort()}`,
      MINIO_ENDPOINT: minio.getConnectionUrl(),
      MINIO_ACCESS_KEY: minio.getUsername(),
      MINIO_SECRET_KEY: minio.getPassword(),
      REDIS_URL: redis.getConnectionUrl(),
    },
    stop: async () => {
      await Promise.all([kafka, mongo, es, minio, redis].map((c) => c.stop()));
    },
  };
};

const fromLocalServers = async (): Promise<Stack | null> => {
  const data = await mkdtemp(join(tmpdir(), 'docshare-test-stack-'));
  const env = { ...process.env, DOCSHARE_INFRA_DATA: data };
  const run = (script: string): number =>
    spawnSync('bash', [join(ROOT, 'infra', 'local', script), 'all'], { env, stdio: 'inherit' }).status ?? 1;
  if (run('start.sh') !== 0) {
    run('stop.sh');
    return null;
  }
  return {
    source: 'local servers (infra/local)',
    env: await parseEnvFile(join(data, 'stack.env')),
    stop: async () => {
      run('stop.sh');
      await rm(data, { recursive: true, force: true });
    },
  };
};

const separator = process.argv.indexOf('--');
const command = separator >= 0 ? process.argv.slice(separator + 1) : [];
if (command.length === 0) {
  console.error('usage: node infra/with-stack.ts -- <command> [args...]');
  process.exit(2);
}

let stack: Stack | null = null;
try {
  stack = fromEnv() ?? await fromTestcontainers() ?? await fromLocalServers();
} catch (error) {
  console.error(`with-stack: ${String(error)}`);
}
if (!stack) {
  console.error('with-stack: no test stack: no explicit URLs, no container runtime, and the local servers did not start. Failing, not skipping.');
  process.exit(1);
}
/** A URL without its credentials, for the log. */
const shown = (value: string | undefined): string => {
  try {
    const url = new URL(value ?? '');
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return value ?? '';
  }
};
console.error(`with-stack: real servers from ${stack.source}: ${KEYS.filter((k) => !k.includes('SECRET') && !k.includes('ACCESS')).map((k) => `${k}=${shown(stack.env[k])}`).join(' ')}`);
const [bin = '', ...args] = command;
const child = spawn(bin, args, { stdio: 'inherit', env: { ...process.env, ...stack.env, DOCSHARE_STACK_SOURCE: stack.source } });
const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
process.on('SIGINT', forward('SIGINT'));
process.on('SIGTERM', forward('SIGTERM'));
const code: number = await new Promise((resolve) => child.once('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
await stack.stop();
process.exit(code);
