/** The bus's one producer and the publisher over it: events, then a watermark per partition. */
import { Partitioners } from 'kafkajs';
import type { Admin, Kafka, Producer } from 'kafkajs';
import type { EventPublisher } from '../port.ts';
import { retryOptions } from './client.ts';
import { toKafkaMessage, watermarkMessages } from './codec.ts';
import type { KafkaBusLogger } from './log.ts';

export interface SharedProducer {
  /** The producer, connected (on first use, and again after a failed connect). */
  ready(): Promise<Producer>;
  /** Disconnects it if it was ever connected; the next ready() connects again. */
  disconnect(): Promise<void>;
}

/** One producer shared by the publisher and the dead-letter writes; connected on first use. */
export function sharedProducer(kafka: Kafka, retryMaxMs: number): SharedProducer {
  const producer: Producer = kafka.producer({
    idempotent: true,
    // Without limit as kafkajs requires for the idempotent producer, but never more than
    // retryMaxMs apart (kafkajs's default grows to 30 s: a publish resumed up to 30 s after the
    // broker came back).
    retry: retryOptions(retryMaxMs, Number.MAX_SAFE_INTEGER),
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: false,
  });
  let connecting: Promise<void> | null = null;
  return {
    async ready(): Promise<Producer> {
      connecting ??= producer.connect().catch((error: unknown) => {
        connecting = null;
        throw error;
      });
      await connecting;
      return producer;
    },
    async disconnect(): Promise<void> {
      if (!connecting) return;
      const was = connecting;
      connecting = null;
      await was.catch(() => {});
      await producer.disconnect();
    },
  };
}

/**
 * The topic's partition count, for watermarks: asked once a minute; 0 (no watermarks) while
 * unknown, the last known count while the question fails.
 */
export function partitionCounter(topic: string, admin: () => Promise<Admin>, log: KafkaBusLogger): () => Promise<number> {
  let partitions: { count: number; at: number } | null = null;
  return async () => {
    if (partitions && Date.now() - partitions.at < 60_000) return partitions.count;
    try {
      const metadata = await (await admin()).fetchTopicMetadata({ topics: [topic] });
      partitions = { count: metadata.topics[0]?.partitions.length ?? 0, at: Date.now() };
    } catch (error) {
      log.warn({ topic, err: error }, 'could not read the topic\'s partitions; publishing without watermarks');
      return partitions?.count ?? 0;
    }
    return partitions.count;
  };
}

export interface KafkaPublisherParts {
  topic: string;
  producer: SharedProducer;
  partitionCount: () => Promise<number>;
  /** Called after close() has waited for the in-flight publishes: the producer may go if nothing else needs it. */
  release: () => Promise<void>;
}

/**
 * Publishes each batch in one send (idempotent producer, acks from all in-sync replicas): its
 * events keyed by `partitionKeyOf`, then a watermark on every partition.
 */
export function makePublisher({ topic, producer, partitionCount, release }: KafkaPublisherParts): { publisher: EventPublisher; isClosed: () => boolean } {
  const publishing = new Set<Promise<void>>();
  let closed = false;
  const publisher: EventPublisher = {
    async publish(records) {
      if (closed) throw new Error('the Kafka publisher is closed');
      if (records.length === 0) return;
      const last = Math.max(...records.map((r) => r.position));
      const sending = (async () => {
        const ready = await producer.ready();
        // In the same send: on each partition the watermark lands after the batch's events.
        const messages = [...records.map(toKafkaMessage), ...watermarkMessages(last, await partitionCount())];
        await ready.send({ topic, acks: -1, messages });
      })();
      publishing.add(sending);
      try {
        await sending;
      } finally {
        publishing.delete(sending);
      }
    },
    async close() {
      closed = true;
      await Promise.allSettled([...publishing]);
      await release();
    },
  };
  return { publisher, isClosed: () => closed };
}
