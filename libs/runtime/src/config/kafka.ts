import { z } from 'zod';
import { DEAD_LETTER_TOPIC, EVENTS_TOPIC } from '@docshare/event-bus/kafka';
import { intVar, listVar, stringVar } from '@docshare/http';
import { concern } from './concern.ts';

/** Consumer groups: their names' suffix and the partitions of the events topic (what a checkpoint covers). */
export interface GroupSettings {
  groupSuffix: string;
  eventsPartitions: number;
}

/** Kafka: brokers, topics, consumer tuning. */
export interface KafkaConfig extends GroupSettings {
  kafkaBrokers: string[];
  eventsTopic: string;
  deadLetterTopic: string;
  kafkaSessionTimeoutMs: number;
  kafkaHeartbeatIntervalMs: number;
  kafkaRetryMaxMs: number;
}

const GROUP_VARS = {
  /** Appended to consumer group names, so several docshare instances can share one Kafka. */
  KAFKA_GROUP_SUFFIX: z.string().optional().transform((raw) => raw ?? ''),
  KAFKA_EVENTS_PARTITIONS: intVar(6, 1),
};

/** KAFKA_GROUP_SUFFIX, KAFKA_EVENTS_PARTITIONS: for a service that reads a group's checkpoints without Kafka (the edge). */
export const groups = () => concern(GROUP_VARS, (v): GroupSettings => ({ groupSuffix: v.KAFKA_GROUP_SUFFIX, eventsPartitions: v.KAFKA_EVENTS_PARTITIONS }));

/** KAFKA_*: KAFKA_BROKERS required. */
export const kafka = () => concern({
  ...GROUP_VARS,
  KAFKA_BROKERS: listVar(),
  KAFKA_EVENTS_TOPIC: stringVar(EVENTS_TOPIC),
  KAFKA_DLQ_TOPIC: stringVar(DEAD_LETTER_TOPIC),
  /** Consumer group session: also how long a restarted projector waits to get its partitions back. */
  KAFKA_SESSION_TIMEOUT_MS: intVar(6_000, 6_000),
  KAFKA_HEARTBEAT_INTERVAL_MS: intVar(1_000, 100),
  /** Longest pause between kafkajs retries: how soon after Kafka returns publishing and consuming resume. */
  KAFKA_RETRY_MAX_MS: intVar(1_000, 100),
}, (v): KafkaConfig => ({
  kafkaBrokers: v.KAFKA_BROKERS,
  eventsTopic: v.KAFKA_EVENTS_TOPIC,
  deadLetterTopic: v.KAFKA_DLQ_TOPIC,
  groupSuffix: v.KAFKA_GROUP_SUFFIX,
  eventsPartitions: v.KAFKA_EVENTS_PARTITIONS,
  kafkaSessionTimeoutMs: v.KAFKA_SESSION_TIMEOUT_MS,
  kafkaHeartbeatIntervalMs: v.KAFKA_HEARTBEAT_INTERVAL_MS,
  kafkaRetryMaxMs: v.KAFKA_RETRY_MAX_MS,
}));
