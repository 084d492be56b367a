// Where a local server still keeps some text (issue 24: an erased person's markers must be found
// nowhere). Every place is read raw, as an operator or an attacker with the disks would:
//   embedded:    every file under DATA_DIR (event log, claims, idempotency log, keys, blobs) byte for byte;
//   distributed: every document of both MongoDB databases (as BSON bytes), every record of the
//                instance's Kafka topics from the beginning (key, value, headers), every index of
//                Elasticsearch (a query for the text, and each _source of the instance's indices),
//                every object of its MinIO bucket, every key and value of Redis;
//   both:        the services' logs (the server's captured stdout/stderr: embedded one process,
//                distributed every service's output, which the instance inherits).
// The answer names each place and the markers seen there, so a failure says what leaked where.
import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { listFiles, storedBytesContaining } from './datadir.ts';
import type { Server } from './server.ts';
import { TARGET } from './server.ts';
import { waitFor } from './wait.ts';

export interface Sighting {
  /** The place: a file, `mongo <db>.<collection> <_id>`, `kafka <topic>/<partition>@<offset>`, ... */
  where: string;
  markers: string[];
}

const need = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the distributed suites under infra/with-stack.ts (npm run test:real)`);
  return value;
};

/** The instance's namespace, as infra/stack/instance.ts derives it from DATA_DIR. */
export const namespaceOf = (server: Pick<Server, 'dataDir'>): string =>
  createHash('sha256').update(path.resolve(server.dataDir)).digest('hex').slice(0, 12);

const seen = (bytes: Buffer, markers: readonly string[]): string[] => markers.filter((m) => bytes.indexOf(m) !== -1);

const sighting = (where: string, bytes: Buffer, markers: readonly string[], into: Sighting[]): void => {
  const found = seen(bytes, markers);
  if (found.length > 0) into.push({ where, markers: found });
};

/** Every file under DATA_DIR, byte for byte (files removed while reading are skipped). */
export async function inDataDir(dataDir: string, markers: readonly string[]): Promise<Sighting[]> {
  const out: Sighting[] = [];
  for (const file of await listFiles(dataDir)) {
    const bytes = await readFile(file).catch(() => null);
    if (bytes !== null) sighting(path.relative(dataDir, file), bytes, markers, out);
  }
  return out;
}

/** The server's captured output: the logs of every process it ran (the last 256 KiB of it). */
export const inLogs = (server: Pick<Server, 'output'>, markers: readonly string[]): Sighting[] => {
  const out: Sighting[] = [];
  sighting('server output (logs)', Buffer.from(server.output(), 'utf8'), markers, out);
  return out;
};

/** Every document of the instance's command and read databases, serialized to BSON (strings and binaries raw). */
export async function inMongo(server: Pick<Server, 'dataDir'>, markers: readonly string[]): Promise<Sighting[]> {
  const { BSON, MongoClient } = await import('mongodb');
  const ns = namespaceOf(server);
  const client = new MongoClient(need('MONGO_URL'));
  const out: Sighting[] = [];
  try {
    await client.connect();
    for (const dbName of [`docshare_${ns}`, `docshare_${ns}_read`]) {
      const db = client.db(dbName);
      let documents = 0;
      for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
        if (name.startsWith('system.')) continue;
        for await (const doc of db.collection(name).find({})) {
          documents += 1;
          sighting(`mongo ${dbName}.${name} ${JSON.stringify(doc['_id'])}`, Buffer.from(BSON.serialize(doc)), markers, out);
        }
      }
      if (documents === 0) throw new Error(`MongoDB database ${dbName} holds no document: nothing was searched`);
    }
  } finally {
    await client.close();
  }
  return out;
}

/**
 * Every record of the instance's Kafka topics (the events topic, its DLQ and any later topic
 * generation `<topic>.g<N>`), read from the beginning up to the end offsets found at the start
 * by a consumer group of its own (deleted afterwards).
 */
export async function inKafka(server: Pick<Server, 'dataDir'>, markers: readonly string[]): Promise<Sighting[]> {
  const { Kafka, logLevel } = await import('kafkajs');
  const base = `docshare.events.${namespaceOf(server)}`;
  const kafka = new Kafka({ clientId: 'docshare-test-leaks', brokers: need('KAFKA_BROKERS').split(',').map((b) => b.trim()).filter(Boolean), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `docshare-test-leaks-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId });
  const out: Sighting[] = [];
  try {
    const topics = (await admin.listTopics()).filter((t) => t === base || t.startsWith(`${base}.`));
    /** `topic/partition` → the offset of its last record, for the partitions that hold any. */
    const last = new Map<string, bigint>();
    for (const topic of topics) {
      for (const p of await admin.fetchTopicOffsets(topic)) {
        if (BigInt(p.high) > BigInt(p.low)) last.set(`${topic}/${p.partition}`, BigInt(p.high) - 1n);
      }
    }
    let records = 0;
    if (last.size > 0) {
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: true });
      const pending = new Set(last.keys());
      await consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          records += 1;
          const parts = [message.key ?? Buffer.alloc(0), message.value ?? Buffer.alloc(0)];
          for (const [name, value] of Object.entries(message.headers ?? {})) {
            parts.push(Buffer.from(name), ...[value ?? []].flat().map((v) => Buffer.from(v)));
          }
          sighting(`kafka ${topic}/${partition}@${message.offset}`, Buffer.concat(parts), markers, out);
          const key = `${topic}/${partition}`;
          if (BigInt(message.offset) >= (last.get(key) ?? -1n)) pending.delete(key);
        },
      });
      await waitFor(() => pending.size === 0, { timeoutMs: 120_000, intervalMs: 100 });
      await consumer.disconnect();
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
    if (topics.length === 0) throw new Error(`no Kafka topic ${base}: is this the instance's namespace?`);
    if (records === 0) throw new Error(`the Kafka topics ${topics.join(', ')} hold no record: nothing was searched`);
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await admin.disconnect();
  }
  return out;
}

/**
 * Elasticsearch: a query for each marker over every index (what a search would find), and every
 * document's _source of the instance's indices (what is stored whether searchable or not).
 */
export async function inElasticsearch(server: Pick<Server, 'dataDir'>, markers: readonly string[]): Promise<Sighting[]> {
  const { Client } = await import('@elastic/elasticsearch');
  const client = new Client({ node: need('ELASTICSEARCH_URL') });
  const prefix = `docshare-files-${namespaceOf(server)}`;
  const out: Sighting[] = [];
  try {
    await client.indices.refresh({ index: '_all' });
    for (const marker of markers) {
      const found = await client.search({ index: '_all', query: { query_string: { query: `"${marker}"` } }, size: 100 });
      for (const hit of found.hits.hits) out.push({ where: `elasticsearch query ${hit._index}/${hit._id}`, markers: [marker] });
    }
    const indices = Object.keys(await client.indices.get({ index: `${prefix}*`, expand_wildcards: 'all' }));
    if (indices.length === 0) throw new Error(`no Elasticsearch index ${prefix}*: nothing was searched`);
    for (const index of indices) {
      let after: unknown[] | undefined;
      for (;;) {
        const page = await client.search({
          index, query: { match_all: {} }, size: 500, sort: ['_doc'], ...(after === undefined ? {} : { search_after: after as never }),
        });
        const hits = page.hits.hits;
        for (const hit of hits) sighting(`elasticsearch ${index}/${hit._id}`, Buffer.from(JSON.stringify(hit._source ?? {})), markers, out);
        if (hits.length < 500) break;
        after = hits[hits.length - 1]?.sort;
      }
    }
  } finally {
    await client.close();
  }
  return out;
}

/**
 * Every key of the stack's Redis (the gateway's consistency tokens, rate-limit keys and revoked
 * users live there; the test stack serves only the suites, so all of it is read): its name and value.
 */
export async function inRedis(markers: readonly string[]): Promise<Sighting[]> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(need('REDIS_URL'), { lazyConnect: true, maxRetriesPerRequest: 2 });
  const out: Sighting[] = [];
  try {
    await redis.connect();
    let cursor = '0';
    let seenKeys = 0;
    do {
      const [next, keys] = await redis.scanBuffer(cursor, 'COUNT', '500');
      cursor = next.toString();
      seenKeys += keys.length;
      for (const key of keys) {
        const type = await redis.type(key);
        const values: Buffer[] =
          type === 'string' ? [await redis.getBuffer(key) ?? Buffer.alloc(0)]
          : type === 'hash' ? Object.entries(await redis.hgetallBuffer(key)).flatMap(([k, v]) => [Buffer.from(k), v])
          : type === 'list' ? await redis.lrangeBuffer(key, 0, -1)
          : type === 'set' ? await redis.smembersBuffer(key)
          : type === 'zset' ? await redis.zrangeBuffer(key, '0', '-1')
          : [];
        sighting(`redis ${key.toString()}`, Buffer.concat([key, ...values]), markers, out);
      }
    } while (cursor !== '0');
    if (seenKeys === 0) throw new Error('Redis holds no key: nothing was searched');
  } finally {
    redis.disconnect();
  }
  return out;
}

/** Every object of the instance's MinIO bucket. */
export async function inMinio(server: Pick<Server, 'dataDir'>, markers: readonly string[]): Promise<Sighting[]> {
  const out: Sighting[] = [];
  for (const marker of markers) {
    for (const where of await storedBytesContaining(server, Buffer.from(marker))) out.push({ where: `minio ${where}`, markers: [marker] });
  }
  return out;
}

/** Every place the target keeps data and logs (see the head of this file), with the markers seen there. */
export async function markerSightings(server: Pick<Server, 'dataDir' | 'output'>, markers: readonly string[]): Promise<Sighting[]> {
  if (TARGET !== 'distributed') return [...(await inDataDir(server.dataDir, markers)), ...inLogs(server, markers)];
  return [
    // The DATA_DIR of a distributed instance holds its secrets, pid files and key files, if any.
    ...(await inDataDir(server.dataDir, markers)),
    ...(await inMongo(server, markers)),
    ...(await inKafka(server, markers)),
    ...(await inElasticsearch(server, markers)),
    ...(await inMinio(server, markers)),
    ...(await inRedis(markers)),
    ...inLogs(server, markers),
  ];
}
