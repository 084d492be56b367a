/** Admin requests: creating the topic plan, a bus's lazily connected admin client, consumer lag. */
import { retrying } from '@docshare/contracts';
import type { Admin, Kafka } from 'kafkajs';
import { makeClient } from './client.ts';
import { silentLogger, type KafkaBusLogger } from './log.ts';
import type { TopicSpec } from './topics.ts';

export interface EnsureTopicsResult {
  created: string[];
  existing: string[];
  /** Existing topics whose partition count differs from the plan (never changed automatically). */
  mismatched: { topic: string; planned: number; actual: number }[];
}

/** Creates the topics that do not exist yet; existing ones are left alone (and reported if their partition count differs). */
export async function ensureTopics(
  brokers: string[],
  topics: readonly TopicSpec[],
  options: { clientId?: string; logger?: KafkaBusLogger } = {},
): Promise<EnsureTopicsResult> {
  const admin = makeClient(brokers, options.clientId ?? 'docshare-topics', options.logger ?? silentLogger).admin();
  await admin.connect();
  try {
    const present = new Set(await admin.listTopics());
    const missing = topics.filter((spec) => !present.has(spec.topic));
    if (missing.length > 0) {
      // false means someone else created them meanwhile, which is fine too.
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((spec) => ({
          topic: spec.topic,
          numPartitions: spec.numPartitions,
          ...(spec.replicationFactor === undefined ? {} : { replicationFactor: spec.replicationFactor }),
          configEntries: Object.entries(spec.configs ?? {}).map(([name, value]) => ({ name, value })),
        })),
      });
    }
    const existingSpecs = topics.filter((spec) => present.has(spec.topic));
    const mismatched: EnsureTopicsResult['mismatched'] = [];
    if (existingSpecs.length > 0) {
      const metadata = await topicMetadata(admin, existingSpecs.map((spec) => spec.topic));
      for (const spec of existingSpecs) {
        const actual = metadata.find((topic) => topic.name === spec.topic)?.partitions.length ?? 0;
        if (actual !== spec.numPartitions) mismatched.push({ topic: spec.topic, planned: spec.numPartitions, actual });
      }
    }
    return { created: missing.map((spec) => spec.topic), existing: existingSpecs.map((spec) => spec.topic), mismatched };
  } finally {
    await admin.disconnect();
  }
}

/**
 * The metadata of topics just listed. A broker can list a topic whose metadata it does not serve
 * yet (KRaft propagates a new topic to the broker's cache after the controller commits it) and
 * answers UNKNOWN_TOPIC_OR_PARTITION, a retriable error kafkajs does not retry here: ask again,
 * a bounded number of times.
 */
export async function topicMetadata(
  admin: Admin,
  topics: string[],
  { attempts = 20, delayMs = (attempt: number) => Math.min(100 * attempt, 1_000) }: { attempts?: number; delayMs?: (attempt: number) => number } = {},
): Promise<{ name: string; partitions: unknown[] }[]> {
  return retrying(async () => (await admin.fetchTopicMetadata({ topics })).topics, {
    attempts,
    baseMs: 0,
    capMs: 0,
    retryIf: (error) => typeof error === 'object' && error !== null && 'type' in error && error.type === 'UNKNOWN_TOPIC_OR_PARTITION',
    delayMs: (_error, attempt) => delayMs(attempt),
  });
}

/** One admin client, connected on first use and again after a failure. */
export interface LazyAdmin {
  /** The connected client; rejects once the bus is closed. */
  get(): Promise<Admin>;
  /** Drops a client whose connection broke; the next get() opens a new one. */
  reset(): void;
  /** Disconnects the client, if one was opened. */
  close(): Promise<void>;
}

export function lazyAdmin(kafka: Kafka, isClosed: () => boolean): LazyAdmin {
  let admin: { client: Admin; connected: Promise<void> } | null = null;
  return {
    async get() {
      if (isClosed()) throw new Error('the Kafka bus is closed');
      if (!admin) {
        const client = kafka.admin();
        admin = { client, connected: client.connect() };
      }
      const current = admin;
      try {
        await current.connected;
        return current.client;
      } catch (error) {
        if (admin === current) admin = null;
        throw error;
      }
    },
    reset() {
      const was = admin;
      admin = null;
      if (was) void was.client.disconnect().catch(() => {});
    },
    async close() {
      const was = admin;
      admin = null;
      if (was) await was.connected.then(() => was.client.disconnect(), () => {});
    },
  };
}

/**
 * The consumer lag of `group` on `topic`, per partition: records after the group's committed
 * offset (the whole partition when it has committed nothing yet).
 */
export async function consumerLag(admin: LazyAdmin, topic: string, group: string): Promise<{ partition: number; lag: number }[]> {
  const client = await admin.get();
  try {
    const [ends, committed] = await Promise.all([
      client.fetchTopicOffsets(topic),
      client.fetchOffsets({ groupId: group, topics: [topic] }),
    ]);
    const at = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
    return ends.map(({ partition, high, low }) => {
      const offset = at.get(partition) ?? -1n;
      // -1: nothing committed yet, the group starts at the beginning of what is retained.
      const from = offset < 0n ? BigInt(low) : offset;
      const lag = BigInt(high) - from;
      return { partition, lag: Number(lag > 0n ? lag : 0n) };
    }).sort((a, b) => a.partition - b.partition);
  } catch (error) {
    // A broken connection is reopened on the next query.
    admin.reset();
    throw error;
  }
}
