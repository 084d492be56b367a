/**
 * Runs a command with a real test stack in its environment (KAFKA_BROKERS, MONGO_URL,
 * ELASTICSEARCH_URL, MINIO_*, REDIS_URL), taken from, in this order:
 *   1. explicit URLs already in the environment (all five must be set),
 *   2. the local servers of infra/local (provisioned on first use, cached outside the repo),
 *   3. testcontainers, on images built here (infra/containers/images.sh) and podman or Docker,
 * or only the provider `--provider=env|local|testcontainers` names (CI runs the suites once on
 * each of local and testcontainers). When none works the run fails: the suites never skip.
 *
 *   node infra/with-stack.ts [--provider=<name>] -- <command> [args...]
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import type { StartedTestContainer as StartedContainer } from 'testcontainers';
import { buildImages, engineEnv } from './compose/compose.ts';
import { parseEnvFile } from './stack/services.ts';
import { checkMongoServer } from './stack/stand-in.ts';

const ROOT = join(import.meta.dirname, '..');
const KEYS = ['KAFKA_BROKERS', 'MONGO_URL', 'ELASTICSEARCH_URL', 'MINIO_ENDPOINT', 'MINIO_ACCESS_KEY', 'MINIO_SECRET_KEY', 'REDIS_URL'] as const;

interface Stack { source: string; env: Record<string, string>; stop(): Promise<void> }

const fromEnv = (): Stack | null => {
  const missing = KEYS.filter((k) => !process.env[k]);
  if (missing.length === KEYS.length) return null;
  if (missing.length > 0) throw new Error(`explicit test stack is incomplete: ${missing.join(', ')} missing`);
  return { source: 'environment', env: Object.fromEntries(KEYS.map((k) => [k, process.env[k] as string])), stop: async () => {} };
};

/**
 * The servers as containers started by testcontainers, on the images infra/containers/images.sh
 * builds here from what infra/local provisions (no registry is reachable on these machines), on
 * podman's Docker-compatible socket or a Docker daemon. Generic containers: the modules'
 * start-up scripts assume the registries' images (Confluent's Kafka, a mongod replica set).
 */
const fromTestcontainers = async (): Promise<Stack | null> => {
  const images = buildImages('servers');
  process.env['DOCKER_HOST'] = images.dockerHost || process.env['DOCKER_HOST'];
  process.env['CONTAINERS_CONF'] = engineEnv(images)['CONTAINERS_CONF'];
  // Ryuk (the reaper) needs the engine's socket mounted into a container of its own, an image that
  // cannot be pulled here: stop() removes the containers instead.
  process.env['TESTCONTAINERS_RYUK_DISABLED'] = 'true';
  const tc = await import('testcontainers');
  try {
    await tc.getContainerRuntimeClient();
  } catch (error) {
    console.error(`with-stack: testcontainers finds no container runtime: ${String(error)}`);
    return null;
  }
  const { GenericContainer, Wait } = tc;
  const tag = (name: string): string => {
    const image = images.tags[name];
    if (!image) throw new Error(`infra/containers/images.sh built no ${name} image`);
    return image;
  };
  const minute = 60_000;
  // Kafka advertises the address clients use: the host port must be known before it starts.
  const kafkaPort = await freeLocalPort();
  // Without Ryuk, a container whose start failed half-way has no handle: the label finds it.
  const label = { 'docshare.with-stack': `${process.pid}-${Date.now()}` };
  const started = await Promise.allSettled([
    new GenericContainer(tag('kafka')).withLabels(label)
      .withExposedPorts({ container: 9092, host: kafkaPort })
      .withEnvironment({
        KAFKA_NODE_ID: '1', KAFKA_PROCESS_ROLES: 'broker,controller',
        KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093', KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${kafkaPort}`,
        KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER', KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
        KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093', KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1', KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0', KAFKA_HEAP_OPTS: '-Xmx512m -Xms512m',
      })
      .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/)).withStartupTimeout(3 * minute).start(),
    // FerretDB 2 on PostgreSQL + DocumentDB, without credentials: --no-auth. It binds 27017 only
    // once PostgreSQL is up and the extension is created (infra/containers/images/ferretdb).
    new GenericContainer(tag('ferretdb')).withLabels(label).withExposedPorts(27017)
      .withWaitStrategy(Wait.forListeningPorts()).withStartupTimeout(2 * minute).start(),
    // Every port the image EXPOSEs: podman lists them all, and testcontainers waits until each is bound.
    new GenericContainer(tag('elasticsearch')).withLabels(label).withExposedPorts(9200, 9300)
      .withEnvironment({ 'discovery.type': 'single-node', 'xpack.security.enabled': 'false', ES_JAVA_OPTS: '-Xms512m -Xmx512m' })
      .withWaitStrategy(Wait.forHttp('/_cluster/health?wait_for_status=yellow&timeout=5s', 9200).forStatusCode(200))
      .withStartupTimeout(4 * minute).start(),
    new GenericContainer(tag('minio')).withLabels(label).withExposedPorts(9000, 9001)
      .withEnvironment({ MINIO_ROOT_USER: 'docshare-test', MINIO_ROOT_PASSWORD: 'docshare-test-secret' })
      .withCommand(['server', '/data'])
      .withWaitStrategy(Wait.forHttp('/minio/health/live', 9000).forStatusCode(200)).withStartupTimeout(2 * minute).start(),
    new GenericContainer(tag('redis')).withLabels(label).withExposedPorts(6379)
      .withCommand(['redis-server', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'])
      .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/)).withStartupTimeout(minute).start(),
  ]);
  const containers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const stop = async (): Promise<void> => {
    await Promise.all(containers.map((c) => c.stop({ remove: true, removeVolumes: true }).catch(() => {})));
    const cli = { env: engineEnv(images), encoding: 'utf8' as const };
    const left = spawnSync(images.engine, ['ps', '-aq', '--filter', `label=docshare.with-stack=${label['docshare.with-stack']}`], cli).stdout?.trim();
    if (left) spawnSync(images.engine, ['rm', '-f', '-v', ...left.split(/\s+/)], cli);
  };
  const failure = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure) {
    await stop();
    throw new Error(`testcontainers: a server did not start: ${String(failure.reason)}`);
  }
  const [kafka, mongo, es, minio, redis] = containers as [StartedContainer, StartedContainer, StartedContainer, StartedContainer, StartedContainer];
  const at = (c: StartedContainer, port: number): string => `${c.getHost()}:${c.getMappedPort(port)}`;
  console.error(`with-stack: testcontainers started ${containers.map((c) => c.getName().replace(/^\//, '')).join(', ')} on ${images.engine}`);
  return {
    source: `testcontainers (${images.engine}; images ${[tag('kafka'), tag('ferretdb'), tag('elasticsearch'), tag('minio'), tag('redis')].join(', ')})`,
    env: {
      KAFKA_BROKERS: `127.0.0.1:${kafka.getMappedPort(9092)}`,
      MONGO_URL: `mongodb://${at(mongo, 27017)}/?directConnection=true`,
      ELASTICSEARCH_URL: `http://${at(es, 9200)}`,
      MINIO_ENDPOINT: `http://${at(minio, 9000)}`,
      MINIO_ACCESS_KEY: 'docshare-test',
      MINIO_SECRET_KEY: 'docshare-test-secret',
      REDIS_URL: `redis://${at(redis, 6379)}`,
    },
    stop,
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

/**
 * A port nobody listens on now, for Kafka's host port, which must be fixed before it starts.
 * Drawn below the ephemeral range (32768+ on Linux), where the engine picks the other
 * containers' host ports at the same moment: a port from there could be taken between this
 * check and Kafka's bind.
 */
const freeLocalPort = async (): Promise<number> => {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 21_000 + Math.floor(Math.random() * 11_000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '0.0.0.0', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port for Kafka between 21000 and 32000');
};

const separator = process.argv.indexOf('--');
const command = separator >= 0 ? process.argv.slice(separator + 1) : [];
if (command.length === 0) {
  console.error('usage: node infra/with-stack.ts -- <command> [args...]');
  process.exit(2);
}

const providerArg = process.argv.slice(2, separator >= 0 ? separator : undefined).find((a) => a.startsWith('--provider='));
const provider = providerArg?.slice('--provider='.length) ?? 'auto';
const PROVIDERS: Record<string, () => Promise<Stack | null>> = {
  env: async () => fromEnv(),
  local: fromLocalServers,
  testcontainers: fromTestcontainers,
  auto: async () => fromEnv() ?? await fromLocalServers() ?? await fromTestcontainers(),
};
const chosen = PROVIDERS[provider];
if (!chosen) {
  console.error(`with-stack: unknown provider "${provider}" (env, local, testcontainers or auto)`);
  process.exit(2);
}
let stack: Stack | null = null;
try {
  stack = await chosen();
} catch (error) {
  console.error(`with-stack: ${String(error)}`);
}
if (!stack) {
  console.error(`with-stack: no test stack from provider "${provider}" (see above). Failing, not skipping.`);
  process.exit(1);
}
// The suites run on MongoDB or on the expected stand-in, never on a build FerretDB only warns about.
try {
  console.error(`with-stack: MONGO_URL answers as ${await checkMongoServer(stack.env['MONGO_URL'] ?? '')}`);
} catch (error) {
  console.error(`with-stack: ${error instanceof Error ? error.message : String(error)}`);
  await stack.stop();
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
