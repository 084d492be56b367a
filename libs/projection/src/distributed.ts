import { hostname } from 'node:os';
import { MongoClient, type Db } from 'mongodb';
import { DEAD_LETTER_TOPIC, EVENTS_TOPIC, ensureTopics, makeKafkaBus, topicPlan } from '@docshare/event-bus/kafka';
import { z } from 'zod';
import { intVar, listVar, optionalVar, publicBaseUrlOf, readConfig, stringVar, type Logger } from '@docshare/http';

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

export type CommonConfig = ReturnType<typeof commonConfig>;

/** How long MongoDB operations wait before failing (`commonConfig`'s MONGO_*_TIMEOUT_MS). */
export interface MongoTimeouts {
  mongoServerSelectionTimeoutMs: number;
  mongoConnectTimeoutMs: number;
  mongoSocketTimeoutMs: number;
  /** Credentials given apart from the URL (a password in MONGO_URL itself works too). */
  mongoUsername?: string | undefined;
  mongoPassword?: string | undefined;
}

/**
 * A connected MongoDB client and one of its databases.
 *
 * Timeouts make a server that is down or frozen a fast 503 instead of a request that hangs: no
 * reachable server fails after `mongoServerSelectionTimeoutMs` (the driver's default is 30 s),
 * and an operation sent to a server that stops answering fails after `mongoSocketTimeoutMs`.
 * Options in MONGO_URL itself win.
 */
export const connectMongo = async (
  url: string, dbName: string,
  timeouts: MongoTimeouts = { mongoServerSelectionTimeoutMs: 2_000, mongoConnectTimeoutMs: 2_000, mongoSocketTimeoutMs: 10_000 },
  /**
   * false for a writer that must know whether a failed write was sent (docs-command): with
   * retryable writes the driver may send an insert, lose the connection, and then fail the
   * retry's server selection, which would look like "never sent".
   */
  options: { retryWrites?: boolean } = {},
): Promise<{ client: MongoClient; db: Db }> => {
  // An acknowledged append or claim must survive a mongod crash: journaled, and on a replica set
  // on a majority. A write concern in MONGO_URL itself wins.
  const explicit = /[?&](w|journal|wtimeoutMS)=/i.test(url);
  const client = new MongoClient(url, {
    appName: `docshare-${hostname()}`,
    // commandStarted events: docshare_store_commands_total (countStoreCommands).
    monitorCommands: true,
    serverSelectionTimeoutMS: timeouts.mongoServerSelectionTimeoutMs,
    connectTimeoutMS: timeouts.mongoConnectTimeoutMs,
    socketTimeoutMS: timeouts.mongoSocketTimeoutMs,
    ...(options.retryWrites === undefined || /[?&]retryWrites=/i.test(url) ? {} : { retryWrites: options.retryWrites }),
    ...(explicit ? {} : { writeConcern: { w: 'majority', journal: true } }),
    ...(timeouts.mongoPassword === undefined ? {} : { auth: { username: timeouts.mongoUsername ?? 'docshare', password: timeouts.mongoPassword } }),
  });
  await client.connect();
  return { client, db: client.db(dbName) };
};

export { collectionOf, countStoreCommands, STORE_COMMANDS_METRIC } from './store-commands.ts';

/** Makes sure the topics exist with their explicit partition counts: whichever service starts first creates them. */
export const ensureKafkaTopics = async (config: KafkaConfig): Promise<void> => {
  await ensureTopics(config.kafkaBrokers, topicPlan({
    eventsTopic: config.eventsTopic, deadLetterTopic: config.deadLetterTopic, eventsPartitions: config.eventsPartitions,
  }));
};

/** The Kafka bus of one service (client id = service name); it connects on first use, so Kafka may be down now. */
export const kafkaBus = (config: KafkaConfig, clientId: string, logger: Logger) => makeKafkaBus({
  brokers: config.kafkaBrokers, clientId, topic: config.eventsTopic, deadLetterTopic: config.deadLetterTopic, logger,
  retryMaxMs: config.kafkaRetryMaxMs,
  consumer: { sessionTimeout: config.kafkaSessionTimeoutMs, heartbeatInterval: config.kafkaHeartbeatIntervalMs },
});

/** The Kafka bus of one service, after making sure the topics exist (waits for Kafka). */
export const connectKafka = async (config: KafkaConfig, clientId: string, logger: Logger) => {
  await ensureKafkaTopics(config);
  return kafkaBus(config, clientId, logger);
};

/**
 * The relay's lease owner: stable across restarts of one instance (INSTANCE_ID, else host name +
 * port), so a restarted docs-command takes its own unexpired lease back at once instead of
 * waiting for it to lapse. Two live processes must never share one: on one host they differ by port.
 */
export const instanceId = (env: NodeJS.ProcessEnv, port: number): string =>
  env.INSTANCE_ID !== undefined && env.INSTANCE_ID !== '' ? env.INSTANCE_ID : `${hostname()}:${port}`;
