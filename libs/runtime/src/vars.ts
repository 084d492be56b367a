// TODO(h5, issue 20 item 5): these are the existing variable shapes, moved here as they were from
// libs/projection/src/distributed.ts; the configuration of libs/runtime/src/config.ts replaces them.
import { z } from 'zod';
import { DEAD_LETTER_TOPIC, EVENTS_TOPIC } from '@docshare/event-bus/kafka';
import { intVar, listVar, optionalVar, publicBaseUrlOf, readConfig, stringVar } from '@docshare/http';

/** What every distributed service reads from its environment (besides its own variables). */
export const COMMON_VARS = {
  HOST: stringVar('0.0.0.0'),
  MONGO_URL: stringVar(),
  /** Credentials apart from MONGO_URL, so the password can come from a secret file (MONGO_PASSWORD_FILE). */
  MONGO_USERNAME: optionalVar(),
  MONGO_PASSWORD: optionalVar(),
  MONGO_COMMAND_DB: stringVar('docshare'),
  MONGO_READ_DB: stringVar('docshare_read'),
  KAFKA_BROKERS: listVar(),
  KAFKA_EVENTS_TOPIC: stringVar(EVENTS_TOPIC),
  KAFKA_DLQ_TOPIC: stringVar(DEAD_LETTER_TOPIC),
  GATEWAY_PORT: intVar(8080),
  PUBLIC_BASE_URL: optionalVar(),
  /** Appended to consumer group names, so several docshare instances can share one Kafka. */
  KAFKA_GROUP_SUFFIX: z.string().optional().transform((raw) => raw ?? ''),
  KAFKA_EVENTS_PARTITIONS: intVar(6, 1),
  /** How long a MongoDB operation waits for a reachable server before failing (a 503). */
  MONGO_SERVER_SELECTION_TIMEOUT_MS: intVar(2_000, 100),
  /** Connecting a socket to MongoDB, and the longest a sent operation waits for its answer (0: no limit). */
  MONGO_CONNECT_TIMEOUT_MS: intVar(2_000, 100),
  MONGO_SOCKET_TIMEOUT_MS: intVar(10_000, 0),
  /** Consumer group session: also how long a restarted projector waits to get its partitions back. */
  KAFKA_SESSION_TIMEOUT_MS: intVar(6_000, 6_000),
  KAFKA_HEARTBEAT_INTERVAL_MS: intVar(1_000, 100),
  /** Longest pause between kafkajs retries: how soon after Kafka returns publishing and consuming resume. */
  KAFKA_RETRY_MAX_MS: intVar(1_000, 100),
  /** Longest a read carrying a consistency token waits for its read model before answering as it is. */
  CONSISTENCY_WAIT_MS: intVar(5_000, 0),
};

/** What a service that only talks to Kafka reads (the text extractor: no MongoDB). */
export const KAFKA_VARS = {
  KAFKA_BROKERS: COMMON_VARS.KAFKA_BROKERS,
  KAFKA_EVENTS_TOPIC: COMMON_VARS.KAFKA_EVENTS_TOPIC,
  KAFKA_DLQ_TOPIC: COMMON_VARS.KAFKA_DLQ_TOPIC,
  KAFKA_GROUP_SUFFIX: COMMON_VARS.KAFKA_GROUP_SUFFIX,
  KAFKA_EVENTS_PARTITIONS: COMMON_VARS.KAFKA_EVENTS_PARTITIONS,
  KAFKA_SESSION_TIMEOUT_MS: COMMON_VARS.KAFKA_SESSION_TIMEOUT_MS,
  KAFKA_HEARTBEAT_INTERVAL_MS: COMMON_VARS.KAFKA_HEARTBEAT_INTERVAL_MS,
  KAFKA_RETRY_MAX_MS: COMMON_VARS.KAFKA_RETRY_MAX_MS,
};

/** The Kafka part of a service's configuration, from `KAFKA_VARS`; throws a ConfigError. */
export const kafkaConfig = (env: NodeJS.ProcessEnv) => {
  const v = readConfig(KAFKA_VARS, env);
  return {
    kafkaBrokers: v.KAFKA_BROKERS,
    eventsTopic: v.KAFKA_EVENTS_TOPIC,
    deadLetterTopic: v.KAFKA_DLQ_TOPIC,
    groupSuffix: v.KAFKA_GROUP_SUFFIX,
    eventsPartitions: v.KAFKA_EVENTS_PARTITIONS,
    kafkaSessionTimeoutMs: v.KAFKA_SESSION_TIMEOUT_MS,
    kafkaHeartbeatIntervalMs: v.KAFKA_HEARTBEAT_INTERVAL_MS,
    kafkaRetryMaxMs: v.KAFKA_RETRY_MAX_MS,
  };
};

export type KafkaConfig = ReturnType<typeof kafkaConfig>;

/** The common configuration of a distributed service, from `COMMON_VARS`; throws a ConfigError. */
export const commonConfig = (env: NodeJS.ProcessEnv) => {
  const v = readConfig(COMMON_VARS, env);
  return {
    host: v.HOST,
    mongoUrl: v.MONGO_URL,
    mongoUsername: v.MONGO_USERNAME,
    mongoPassword: v.MONGO_PASSWORD,
    commandDb: v.MONGO_COMMAND_DB,
    readDb: v.MONGO_READ_DB,
    ...kafkaConfig(env),
    publicBaseUrl: publicBaseUrlOf(env, v.GATEWAY_PORT),
    mongoServerSelectionTimeoutMs: v.MONGO_SERVER_SELECTION_TIMEOUT_MS,
    mongoConnectTimeoutMs: v.MONGO_CONNECT_TIMEOUT_MS,
    mongoSocketTimeoutMs: v.MONGO_SOCKET_TIMEOUT_MS,
    consistencyWaitMs: v.CONSISTENCY_WAIT_MS,
  };
};

