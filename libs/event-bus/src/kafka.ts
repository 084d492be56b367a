/**
 * The Kafka event bus (entry point `@docshare/event-bus/kafka`): assembles the parts in ./kafka/
 * into makeKafkaBus and re-exports the public names. docs/kafka.md describes the whole.
 *
 *   kafka/log.ts            KafkaBusLogger, the guarded logger
 *   kafka/topics.ts         the topic plan (TopicSpec, topicPlan, docshareTopics); imports nothing
 *   kafka/codec.ts          records ⇄ events: headers, watermarks, dead-letter headers
 *   kafka/kafkajs-patch.ts  applyKafkajsIdlePatch, pinned to one kafkajs version
 *   kafka/client.ts         makeClient (retry schedule, log forwarding, the patch), parseBrokers
 *   kafka/producer.ts       the shared producer, the publisher, the partition count
 *   kafka/consumer.ts       subscribe/subscribeBatches: retries, splitting, dead letters
 *   kafka/admin.ts          ensureTopics, the lazy admin client, consumer lag
 */
import type { EventConsumer, EventPublisher, Subscription } from './port.ts';
import { consumerLag, lazyAdmin } from './kafka/admin.ts';
import { makeClient } from './kafka/client.ts';
import { makeKafkaConsumer, type KafkaConsumerTuning } from './kafka/consumer.ts';
import { guardedLogger, silentLogger, type KafkaBusLogger } from './kafka/log.ts';
import { makePublisher, partitionCounter, sharedProducer } from './kafka/producer.ts';

export type { KafkaBusLogger } from './kafka/log.ts';
export type { KafkaConsumerTuning } from './kafka/consumer.ts';
export { CLOUDEVENTS_JSON, decodeKafkaRecord, kafkaHeaders, toKafkaMessage, watermarkMessages } from './kafka/codec.ts';
export type { DecodedKafkaRecord } from './kafka/codec.ts';
export { parseBrokers } from './kafka/client.ts';
export { ensureTopics } from './kafka/admin.ts';
export type { EnsureTopicsResult } from './kafka/admin.ts';
export { DEAD_LETTER_TOPIC, EVENTS_PARTITIONS, EVENTS_TOPIC, docshareTopics, topicPlan } from './kafka/topics.ts';
export type { TopicPlanOptions, TopicSpec } from './kafka/topics.ts';
export { applyKafkajsIdlePatch, KAFKAJS_IDLE_PATCH_VERSION } from './kafka/kafkajs-patch.ts';
export type { KafkajsIdlePatchResult } from './kafka/kafkajs-patch.ts';

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  /** The event topic: one CloudEvent per record, key = subject. */
  topic: string;
  /** Where events go that a group gave up on, and records that are not CloudEvents. */
  deadLetterTopic: string;
  logger?: KafkaBusLogger;
  consumer?: KafkaConsumerTuning;
  /**
   * Longest wait between kafkajs's retries of a request (connect, metadata, produce, join), from
   * 100 ms doubling (default 1 000 ms; kafkajs's own is 30 000). Bounds how long after a broker
   * comes back the producer and consumers notice it. The idempotent producer still retries
   * without limit.
   */
  retryMaxMs?: number;
}

export interface KafkaBus {
  consumer: EventConsumer;
  publisher: EventPublisher;
  /** Stops every subscription (each after its in-flight event) and disconnects the producer. */
  close(): Promise<void>;
  /**
   * The consumer lag of `group` on the event topic, per partition: records after the group's
   * committed offset (the whole partition when it has committed nothing yet).
   */
  lag(group: string): Promise<{ partition: number; lag: number }[]>;
}

/**
 * Event bus over Kafka. The publisher writes each event as a structured-mode CloudEvent keyed by
 * its subject (idempotent producer, acks from all in-sync replicas). Each subscription is a
 * kafkajs consumer in the named group that commits a record's offset only once its handler
 * resolved or it was dead-lettered, retrying a rejected record in place first.
 */
export function makeKafkaBus(options: KafkaBusOptions): KafkaBus {
  const logger = options.logger ?? silentLogger;
  const log = guardedLogger(logger);
  const { topic, deadLetterTopic } = options;
  const retryMaxMs = options.retryMaxMs ?? 1_000;
  const kafka = makeClient(options.brokers, options.clientId, logger, retryMaxMs);
  const producer = sharedProducer(kafka, retryMaxMs);
  const subscriptions = new Set<Subscription>();
  let closed = false;
  const admin = lazyAdmin(kafka, () => closed);

  /** The producer also writes dead letters, so it stays connected while a subscription is active. */
  const releaseProducerIfIdle = async (): Promise<void> => {
    if (publisherClosed() && subscriptions.size === 0) await producer.disconnect();
  };
  const { publisher, isClosed: publisherClosed } = makePublisher({
    topic,
    producer,
    partitionCount: partitionCounter(topic, admin.get, log),
    release: releaseProducerIfIdle,
  });
  const consumer = makeKafkaConsumer({
    kafka,
    topic,
    deadLetterTopic,
    tuning: options.consumer ?? {},
    retryMaxMs,
    producer,
    log,
    isClosed: () => closed,
    started: (subscription) => subscriptions.add(subscription),
    async stopped(subscription) {
      subscriptions.delete(subscription);
      await releaseProducerIfIdle();
    },
  });

  return {
    consumer,
    publisher,
    async close() {
      closed = true;
      await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
      await publisher.close();
      await producer.disconnect();
      await admin.close();
    },
    lag: (group) => consumerLag(admin, topic, group),
  };
}
