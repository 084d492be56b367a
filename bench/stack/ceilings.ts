/**
 * The ceilings of `npm run bench:stack`: what the servers themselves do when asked directly, with
 * the same clients the services use (kafkajs, the mongodb driver, @elastic/elasticsearch,
 * minio-js), and the same queries the services send (copied from the read models' query code,
 * or imported where the project exports it). Each runs the same closed loop as the API measures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Kafka, Partitioners, logLevel, type Producer } from 'kafkajs';
import { MongoClient, type Db, type Document } from 'mongodb';
import type { Client as EsClient } from '@elastic/elasticsearch';
import { ensureTopics } from '@docshare/event-bus/kafka';
import { SEARCH_SORT, searchQuery } from '@docshare/search-index/elasticsearch';
import { tokenize } from '../../libs/search-index/src/memory-search-index.ts';
import { closedLoop, expectOk, request, sleep, type LoadResult } from './load.ts';
import { minioClient } from './infra.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** A ~1 KiB CloudEvent-like JSON, as the event log and the bus carry them. */
const eventJson = (n: number): string => JSON.stringify({
  specversion: '1.0', id: randomUUID(), source: '/docshare/bench', type: 'docs.comment.posted.v1', time: new Date().toISOString(),
  subject: `file-${n % 500}`, datacontenttype: 'application/json', correlationid: randomUUID(), causationid: randomUUID(), streamversion: n,
  data: { commentId: n, fileId: n % 500, fileOwnerId: 7, fileTitle: 'quantum notes 12', authorId: 3, comment: 'x'.repeat(640), postedAt: new Date().toISOString() },
});

// ---- Kafka ------------------------------------------------------------------------------------

export interface KafkaCeiling { single: LoadResult; batched: LoadResult; batchSize: number }

/**
 * kafkajs producer configured as the bus's (idempotent, one request in flight, acks from all
 * in-sync replicas) on a throw-away topic of 3 partitions: 1 message per send with `clients`
 * callers (a command's publish), then batches of 100 (what the outbox relay can send).
 */
export const kafkaProducerCeiling = async (brokers: string[], topic: string, seconds: number, clients: number): Promise<KafkaCeiling> => {
  await ensureTopics(brokers, [{ topic, numPartitions: 3 }], { clientId: 'docshare-bench' });
  const kafka = new Kafka({ clientId: 'docshare-bench', brokers, logLevel: logLevel.NOTHING });
  const producer: Producer = kafka.producer({
    idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false,
  });
  await producer.connect();
  const value = eventJson(1);
  const batchSize = 100;
  try {
    // warm-up: metadata, producer id
    await producer.send({ topic, acks: -1, messages: [{ key: 'warm', value }] });
    const single = await closedLoop({
      clients, seconds,
      op: async (_c, n) => { await producer.send({ topic, acks: -1, messages: [{ key: `file-${n % 500}`, value }] }); },
    });
    const batched = await closedLoop({
      clients, seconds,
      op: async (_c, n) => {
        await producer.send({ topic, acks: -1, messages: Array.from({ length: batchSize }, (_, i) => ({ key: `file-${(n * batchSize + i) % 500}`, value })) });
      },
    });
    return { single, batched, batchSize };
  } finally {
    await producer.disconnect();
  }
};

export interface JavaPerf { recordsPerSecond: number; mibPerSecond: number; avgMs: number; p50Ms: number; p99Ms: number; line: string }

/**
 * Kafka's own kafka-producer-perf-test (org.apache.kafka.tools.ProducerPerformance from the
 * cached jars, through infra/local/kafka.sh): acks=all, idempotent, 1 KiB records.
 */
export const kafkaJavaPerf = async (
  brokers: string, topic: string, records: number, env: NodeJS.ProcessEnv, track: (child: ChildProcess) => void,
): Promise<JavaPerf> => {
  const args = [join(ROOT, 'infra', 'local', 'kafka.sh'), 'org.apache.kafka.tools.ProducerPerformance',
    '--topic', topic, '--num-records', String(records), '--record-size', '1024', '--throughput', '-1',
    '--producer-props', `bootstrap.servers=${brokers}`, 'acks=all', 'enable.idempotence=true', 'linger.ms=5'];
  const child = spawn('bash', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let out = '';
  child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { out += c.toString(); });
  const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
  const code = await new Promise<number>((resolve) => child.once('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
  clearTimeout(timer);
  // "50000 records sent, 23342.670401 records/sec (22.80 MB/sec), 512.18 ms avg latency, 800.00 ms max latency, 505 ms 50th, 760 ms 95th, 790 ms 99th, 799 ms 99.9th."
  const line = out.split('\n').reverse().find((l) => /records sent, .* 50th/.test(l));
  const m = line ? /([\d.]+) records\/sec \(([\d.]+) MB\/sec\), ([\d.]+) ms avg latency.*?(\d+) ms 50th.*?(\d+) ms 99th/.exec(line) : null;
  if (code !== 0 || !m) throw new Error(`ProducerPerformance exited ${code}: ${out.trim().split('\n').slice(-5).join(' | ')}`);
  return { recordsPerSecond: Number(m[1]), mibPerSecond: Number(m[2]), avgMs: Number(m[3]), p50Ms: Number(m[4]), p99Ms: Number(m[5]), line: line!.trim() };
};

// ---- the MongoDB store (FerretDB 2 + DocumentDB here, MongoDB in compose) ------------------------

export interface MongoWriteCeiling { insert: LoadResult; upsert: LoadResult }

/**
 * On a throw-away database: insertOne of an event-log-shaped document (one append, with the event
 * log's three unique indexes: libs/event-store/src/mongo-event-store.ts), and a read-model update
 * as libs/read-store/src/mongo-read-store.ts sends it (an upsert guarded by the document's `_pos`,
 * with $inc and $set), each by `clients` callers.
 */
export const mongoWriteCeiling = async (db: Db, seconds: number, clients: number): Promise<MongoWriteCeiling> => {
  const events = db.collection<Document & { _id: string }>('events');
  const counters = db.collection<Document & { _id: string }>('counters');
  const indexes: { key: Record<string, 1>; name: string }[] = [
    { key: { stream: 1, firstVersion: 1 }, name: 'stream_first_version' },
    { key: { stream: 1, version: 1 }, name: 'stream_version' },
    { key: { position: 1 }, name: 'position' },
  ];
  for (const index of indexes) await events.createIndex(index.key, { name: index.name, unique: true });
  await events.insertOne({ _id: 'warm', position: 0, count: 1, stream: 'warm', firstVersion: 1, version: 1, events: '[]', appendedAt: new Date() });
  const json = `[${eventJson(1)}]`;
  const insert = await closedLoop({
    clients, seconds,
    op: async (_c, n) => {
      await events.insertOne({ _id: String(n + 1), position: n + 1, count: 1, stream: `file-${n % 500}`, firstVersion: n, version: n, events: json, appendedAt: new Date() });
    },
  });
  const upsert = await closedLoop({
    clients, seconds,
    op: async (_c, n) => {
      // 1,000 documents; a document's positions only grow (n and n + 1,000 are never in flight together)
      const position = n + 1;
      await counters.updateOne(
        { _id: String(n % 1000), _pos: { $not: { $gte: position } } },
        { $inc: { total_comments: 1 }, $set: { updated: new Date().toISOString(), _pos: position } },
        { upsert: true },
      );
    },
  });
  return { insert, upsert };
};

/** The event log read as a rebuild reads it (pages of 1,000 appends by position): events per second. */
export const eventLogRead = async (db: Db): Promise<{ events: number; seconds: number; rate: number }> => {
  const log = db.collection<{ _id: string; position: number; count: number }>('events');
  const began = performance.now();
  let position = 1;
  let events = 0;
  for (;;) {
    const page = await log.find({ position: { $gte: position } }).sort({ position: 1 }).limit(1000).toArray();
    for (const doc of page) {
      // the rebuild decodes every append's events (JSON text; documents if the store keeps them so)
      const stored = (doc as unknown as { events: unknown }).events;
      if (typeof stored === 'string') JSON.parse(stored);
      events += doc.count;
    }
    const last = page.at(-1);
    if (!last || page.length < 1000) break;
    position = last.position + last.count;
  }
  const seconds = (performance.now() - began) / 1000;
  return { events, seconds, rate: events / seconds };
};

/** The prefix of a generational read model (libs/projection/src/generations.ts). */
export const generationPrefix = async (readDb: Db, model: string): Promise<string> => {
  const pointer = await readDb.collection<{ _id: string; prefix: string }>('read_model_generations').findOne({ _id: model });
  return pointer?.prefix ?? `${model}_`;
};

/**
 * api-files' query sent to the store (services/files-projector/src/queries.ts, filesOf): the
 * user, then count + one page of 20 of the user's files newest first, as `viewerId` sees them.
 */
export const directFilesQuery = async (readDb: Db, viewerId: number) => {
  const prefix = await generationPrefix(readDb, 'files');
  const users = readDb.collection<Document & { _id: string }>(`${prefix}users`);
  const files = readDb.collection(`${prefix}files`);
  return async (userId: number): Promise<number> => {
    const user = await users.findOne({ _id: String(userId) }, { projection: { _pos: 0 } });
    if (!user) throw new Error(`files read model: no user ${userId}`);
    const filter: Document = { owner_id: userId, deleted: false };
    if (userId !== viewerId) filter.enabled = true;
    const [, page] = await Promise.all([
      files.countDocuments(filter),
      files.find(filter, { projection: { _pos: 0 } }).sort([['uploaded_at', -1], ['file_id', -1]]).limit(20).toArray(),
    ]);
    return page.length;
  };
};

/** api-stats' query sent to the store (services/stats-projector/src/queries.ts, statsOf). */
export const directStatsQuery = async (readDb: Db) => {
  const prefix = await generationPrefix(readDb, 'stats');
  const stats = readDb.collection<Document & { _id: string }>(`${prefix}stats`);
  return async (userId: number): Promise<void> => {
    await stats.findOne({ _id: String(userId) }, { projection: { _pos: 0 } });
  };
};

/**
 * A 366-day api-daily's read sent to the store: the caller's `daily_users` documents of those
 * days by `_id` (`<ownerId>:<YYYY-MM-DD>`, an `in` of at most 366 ids, never a scan), their
 * counters only (the sketches stay in the store: the answer needs their counts, kept beside them).
 */
export const directDailyQuery = async (readDb: Db) => {
  const prefix = await generationPrefix(readDb, 'stats');
  const daily = readDb.collection<Document & { _id: string }>(`${prefix}daily_users`);
  return async (ownerId: number, days: readonly string[]): Promise<number> => {
    const found = await daily.find({ _id: { $in: days.map((day) => `${ownerId}:${day}`) } }, { projection: { _pos: 0, viewers: 0, downloaders: 0 } }).toArray();
    return found.length;
  };
};

/** api-search's query sent to Elasticsearch's _search (libs/search-index/src/elasticsearch-search-index.ts, search). */
export const directSearchQuery = (es: EsClient, alias: string) => async (term: string): Promise<number> => {
  const words = [...new Set(tokenize(term))];
  const response = await es.search({
    index: alias, query: searchQuery(words), sort: SEARCH_SORT, from: 0, size: 20, track_total_hits: true,
    _source: ['id', 'ownerId', 'visible', 'uploadedAt', 'original'],
  });
  return response.hits.hits.length;
};

export const connectMongo = (url: string): Promise<MongoClient> =>
  MongoClient.connect(url, { serverSelectionTimeoutMS: 10_000, maxPoolSize: 64 });

// ---- MinIO ------------------------------------------------------------------------------------

/** Counts a stream's bytes. */
export const drain = async (stream: Readable | AsyncIterable<Uint8Array>): Promise<number> => {
  let n = 0;
  for await (const chunk of stream as AsyncIterable<Uint8Array>) n += chunk.length;
  return n;
};

/** A direct put (multipart, 16 MiB parts, like the blob store) and get of the file at `path`. */
export const minioCeiling = async (serverEnv: Record<string, string>, bucket: string, path: string, size: number) => {
  const minio = minioClient(serverEnv);
  if (!(await minio.bucketExists(bucket))) await minio.makeBucket(bucket);
  const key = `bench-${randomUUID()}`;
  let t = performance.now();
  await minio.putObject(bucket, key, createReadStream(path, { highWaterMark: 1024 * 1024 }), size, { 'Content-Type': 'application/octet-stream' });
  const putSeconds = (performance.now() - t) / 1000;
  t = performance.now();
  const got = await drain(await minio.getObject(bucket, key));
  const getSeconds = (performance.now() - t) / 1000;
  if (got !== size) throw new Error(`minio get: ${got} bytes, expected ${size}`);
  await minio.removeObject(bucket, key);
  return { putSeconds, getSeconds };
};

// ---- HTTP -------------------------------------------------------------------------------------

export interface HttpCeilingServer { url: string; child: ChildProcess }

/** Starts bench/stack/http-ceiling.ts (`bare`, or `proxy` to `target`) in its own process; waits until it answers. */
export const startHttpCeiling = async (role: 'bare' | 'proxy', port: number, target = ''): Promise<HttpCeilingServer> => {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'http-ceiling.ts'), role, String(port), target], {
    stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, LOG_LEVEL: 'warn' },
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`http ceiling (${role}) exited with ${child.exitCode}`);
    try {
      expectOk(await request('POST', `${url}/api/V1/stats/api-stats`, { 'content-type': 'application/json' }, '{}', 2_000), `${role} ceiling`);
      return { url, child };
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await sleep(100);
  }
};
