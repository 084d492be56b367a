/**
 * The stack the bench measures: its own servers from infra/local (Kafka, FerretDB, Elasticsearch,
 * MinIO, Redis) on the default ports + an offset, under its own data dir (the chaos suite's
 * Servers), or servers that already run (BENCH_STACK_REUSE=1, URLs from the environment); then one
 * distributed docshare instance on them (infra/stack/instance.ts through the chaos suite's
 * Instance: every service of the registry supervised, namespaced databases, topics, index and bucket).
 */
import { readFile } from 'node:fs/promises';
import { Kafka, logLevel } from 'kafkajs';
import { Client as EsClient } from '@elastic/elasticsearch';
import { Client as MinioClient } from 'minio';
import { parseEndPoint } from '@docshare/blob-store/minio';
import { MongoClient, type Db } from 'mongodb';
import { CONSUMER_SERVICES, PROJECTOR_SERVICES } from '@docshare/contracts/services';
import { SERVER_NAMES, Servers } from '../../infra/chaos/servers.ts';
import { Instance, SERVICE_NAMES } from '../../infra/chaos/instance.ts';
import { parseEnvFile } from '../../infra/stack/services.ts';
import { readProcTable, treeCpuSeconds, treeMemoryMiB } from '../../infra/stack/procs.ts';

export { Instance, Servers, SERVER_NAMES, SERVICE_NAMES };

/** What the servers' clients need (as infra/local writes it into stack.env). */
export const SERVER_ENV_KEYS = ['KAFKA_BROKERS', 'MONGO_URL', 'ELASTICSEARCH_URL', 'MINIO_ENDPOINT', 'MINIO_ACCESS_KEY', 'MINIO_SECRET_KEY', 'REDIS_URL'] as const;

/** The servers' settings of a reuse run: from BENCH_STACK_ENV_FILE (a stack.env) and/or the environment. */
export const reusedServerEnv = async (env: NodeJS.ProcessEnv): Promise<Record<string, string>> => {
  const fromFile = env.BENCH_STACK_ENV_FILE ? await parseEnvFile(env.BENCH_STACK_ENV_FILE) : {};
  const out: Record<string, string> = {};
  const missing: string[] = [];
  for (const key of SERVER_ENV_KEYS) {
    const value = env[key] || fromFile[key];
    if (value) out[key] = value;
    else missing.push(key);
  }
  if (missing.length > 0) {
    throw new Error(`BENCH_STACK_REUSE=1 needs the servers' settings: ${missing.join(', ')} missing `
      + '(export them, e.g. `set -a; . ~/.cache/docshare/data/stack.env; set +a`, or set BENCH_STACK_ENV_FILE=<stack.env>)');
  }
  return out;
};

/** VmRSS of a process in MiB, NaN when it is gone. */
export const rssMiB = async (pid: number): Promise<number> => {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
};

/** RSS of every service of the instance (MiB; NaN for one without a live process). */
export const serviceRss = async (instance: Instance): Promise<Record<string, number>> => {
  const out: Record<string, number> = {};
  for (const name of SERVICE_NAMES) {
    const pid = await instance.servicePid(name);
    out[name] = pid === null ? NaN : await rssMiB(pid);
  }
  return out;
};

/**
 * Memory of every server the bench started (MiB): its whole process tree (procs.ts; the ferretdb
 * server is bash + PostgreSQL and its backends + FerretDB), PSS summed.
 */
export const serverMemory = async (servers: Servers): Promise<Record<string, number>> => {
  const table = await readProcTable();
  const out: Record<string, number> = {};
  for (const name of SERVER_NAMES) {
    const leader = await servers.pid(name);
    out[name] = leader === null ? NaN : await treeMemoryMiB(table, leader);
  }
  return out;
};

/**
 * On servers the bench did not start (reuse), removes what the instance and the ceilings created
 * there: databases, topics, consumer groups, indices, buckets. Best effort; returns what failed.
 */
export const removeNamespace = async (serverEnv: Record<string, string>, ns: string, extra: { databases: string[]; topics: string[]; buckets: string[] }): Promise<string[]> => {
  const problems: string[] = [];
  const attempt = async (what: string, fn: () => Promise<unknown>): Promise<void> => {
    try {
      await fn();
    } catch (error) {
      problems.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  await attempt('mongodb', async () => {
    const client = await MongoClient.connect(serverEnv.MONGO_URL!, { serverSelectionTimeoutMS: 5_000 });
    try {
      for (const name of [`docshare_${ns}`, `docshare_${ns}_read`, ...extra.databases]) await client.db(name).dropDatabase();
    } finally {
      await client.close();
    }
  });
  await attempt('kafka', async () => {
    const admin = new Kafka({ clientId: 'docshare-bench-cleanup', brokers: serverEnv.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const topics = new Set(await admin.listTopics());
      const ours = [`docshare.events.${ns}`, `docshare.events.${ns}.dlq`, ...extra.topics].filter((t) => topics.has(t));
      if (ours.length > 0) await admin.deleteTopics({ topics: ours });
      const ourGroups = async (): Promise<string[]> => (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.endsWith(`.${ns}`));
      const groups = await ourGroups();
      // A group whose topic was just deleted may vanish by itself meanwhile (GROUP_ID_NOT_FOUND): what counts is what is left.
      if (groups.length > 0) await admin.deleteGroups(groups).catch(() => undefined);
      const left = await ourGroups();
      if (left.length > 0) throw new Error(`consumer groups left: ${left.join(', ')}`);
    } finally {
      await admin.disconnect();
    }
  });
  await attempt('elasticsearch', async () => {
    const es = new EsClient({ node: serverEnv.ELASTICSEARCH_URL! });
    try {
      const indices = Object.keys(await es.indices.get({ index: `docshare-files-${ns}*`, expand_wildcards: 'all' }));
      if (indices.length > 0) await es.indices.delete({ index: indices });
    } finally {
      await es.close();
    }
  });
  await attempt('minio', async () => {
    const minio = minioClient(serverEnv);
    for (const bucket of [`docshare-${ns}`, ...extra.buckets]) {
      if (!(await minio.bucketExists(bucket))) continue;
      const names: string[] = [];
      for await (const item of minio.listObjectsV2(bucket, '', true) as AsyncIterable<{ name?: string }>) if (item.name) names.push(item.name);
      for (let i = 0; i < names.length; i += 1000) await minio.removeObjects(bucket, names.slice(i, i + 1000));
      for await (const upload of minio.listIncompleteUploads(bucket, '', true) as AsyncIterable<{ key: string }>) {
        await minio.removeIncompleteUpload(bucket, upload.key);
      }
      await minio.removeBucket(bucket);
    }
  });
  return problems;
};

/**
 * What answers MONGO_URL, from its buildInfo: FerretDB 2 reports `ferretdb.version` (and
 * MongoDB's `version`, 7.0.77), FerretDB 1.x `ferretdbVersion`; anything else is MongoDB.
 */
export const storeName = async (client: MongoClient): Promise<string> => {
  const info = await client.db('admin').command({ buildInfo: 1 }) as { version?: string; ferretdb?: { version?: string }; ferretdbVersion?: string };
  const ferret = info.ferretdb?.version ?? info.ferretdbVersion;
  return ferret ? `FerretDB ${ferret.replace(/^v/, '')}` : `MongoDB ${info.version ?? '?'}`;
};

/** A minio-js client on MINIO_ENDPOINT (http://host:port) with the stack's credentials. */
export const minioClient = (serverEnv: Record<string, string>, partSize = 16 * 1024 * 1024): MinioClient => {
  return new MinioClient({
    ...parseEndPoint(serverEnv.MINIO_ENDPOINT!),
    accessKey: serverEnv.MINIO_ACCESS_KEY!,
    secretKey: serverEnv.MINIO_SECRET_KEY!,
    partSize,
  });
};

/** CPU seconds so far of one process tree (`root`: the process it was read from; NaN seconds when gone). */
export interface CpuReading { root: number | null; seconds: number }
export type CpuSnapshot = Record<string, CpuReading>;

/**
 * CPU seconds so far of every service (its process and any children, e.g. extraction children),
 * and of every server the bench started (its whole process tree: procs.ts).
 */
export const cpuSnapshot = async (instance: Instance, servers: Servers | undefined): Promise<CpuSnapshot> => {
  const table = await readProcTable();
  const out: CpuSnapshot = {};
  const read = (root: number | null): CpuReading => ({ root, seconds: root === null ? NaN : treeCpuSeconds(table, root) });
  for (const name of SERVICE_NAMES) out[name] = read(await instance.servicePid(name));
  if (servers) for (const name of SERVER_NAMES) out[name] = read(await servers.pid(name));
  return out;
};

/** CPU seconds each process tree used between two snapshots; NaN where it was restarted (another root) or is gone. */
export const cpuUsed = (before: CpuSnapshot, after: CpuSnapshot): Record<string, number> =>
  Object.fromEntries(Object.entries(after).map(([name, a]) => {
    const b = before[name];
    const used = b && b.root !== null && b.root === a.root ? a.seconds - b.seconds : NaN;
    return [name, Number.isFinite(used) && used >= 0 ? used : NaN];
  }));

/** The projector groups of an instance, as infra/stack/instance.ts names them (`<service>.<ns>`): the registry's projectors. */
export const PROJECTORS: readonly string[] = PROJECTOR_SERVICES.map((service) => service.name);
/**
 * The whole pipeline behind an upload: every consumer of the registry, the projectors and the
 * workers (the text extractor's settling group commits an upload's offset once its text is
 * recorded through the command side, whose event the projectors then read).
 */
export const PIPELINE_GROUPS: readonly string[] = CONSUMER_SERVICES.map((service) => service.name);

export interface PipelineLag {
  /** events in the event log the outbox relay has not yet checkpointed as published */
  outbox: number;
  /** per projector: records on the instance's topic not yet processed and committed */
  groups: Record<string, number>;
  total: number;
}

/**
 * How far the pipeline is behind the event log: the outbox relay's checkpoint (libs/outbox,
 * `outbox_checkpoints`) against the log's end, and each projector group's committed offsets
 * against the topic's end offsets (what `docshare_consumer_lag` reports).
 */
export const makeLagProbe = async (brokers: string[], commandDb: Db, ns: string) => {
  const admin = new Kafka({ clientId: 'docshare-bench-lag', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const topic = `docshare.events.${ns}`;
  const events = commandDb.collection<{ _id: string; position: number; count: number }>('events');
  const checkpoints = commandDb.collection<{ _id: string; position: number }>('outbox_checkpoints');
  /** `names`: the consumer groups (services) to count; the projectors by default, PIPELINE_GROUPS for the whole pipeline. */
  const lag = async (names: readonly string[] = PROJECTORS): Promise<PipelineLag> => {
    const last = (await events.find({}, { projection: { position: 1, count: 1 } }).sort({ position: -1 }).limit(1).toArray())[0];
    const end = last ? last.position + last.count - 1 : 0;
    const published = Math.max(0, ...(await checkpoints.find({}).toArray()).map((c) => c.position));
    const high = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]));
    const groups: Record<string, number> = {};
    for (const name of names) {
      const [offsets] = await admin.fetchOffsets({ groupId: `${name}.${ns}`, topics: [topic] });
      let behind = 0;
      for (const [partition, h] of high) {
        const committed = Number(offsets?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
        behind += committed < 0 ? h : Math.max(0, h - committed);
      }
      groups[name] = behind;
    }
    const outbox = Math.max(0, end - published);
    return { outbox, groups, total: outbox + Object.values(groups).reduce((a, b) => a + b, 0) };
  };
  return { lag, close: () => admin.disconnect() };
};

export const describeLag = (lag: PipelineLag): string =>
  `outbox ${lag.outbox}, ${Object.entries(lag.groups).map(([g, n]) => `${g.replace(/-projector$/, '')} ${n}`).join(', ')}`;
