import { hostname } from 'node:os';
import { MongoClient, type Db } from 'mongodb';
import { DEAD_LETTER_TOPIC, EVENTS_TOPIC, ensureTopics, makeKafkaBus, topicPlan } from '@docshare/event-bus/kafka';
import { envReader, publicBaseUrlOf, type Logger } from '@docshare/http';

/** The consumer groups whose progress read-your-writes waits on. */
export const PROJECTOR_GROUPS = ['stats-projector', 'files-projector', 'search-projector'] as const;

/** What every distributed service reads from its environment. */
export const commonConfig = (env: NodeJS.ProcessEnv) => {
  const e = envReader(env);
  return {
    host: e.string('HOST', '0.0.0.0'),
    mongoUrl: e.string('MONGO_URL'),
    commandDb: e.string('MONGO_COMMAND_DB', 'docshare'),
    readDb: e.string('MONGO_READ_DB', 'docshare_read'),
    kafkaBrokers: e.string('KAFKA_BROKERS').split(',').map((b) => b.trim()).filter(Boolean),
    eventsTopic: e.string('KAFKA_EVENTS_TOPIC', EVENTS_TOPIC),
    deadLetterTopic: e.string('KAFKA_DLQ_TOPIC', DEAD_LETTER_TOPIC),
    publicBaseUrl: publicBaseUrlOf(env, e.int('GATEWAY_PORT', 8080)),
    /** Appended to consumer group names, so several docshare instances can share one Kafka. */
    groupSuffix: e.string('KAFKA_GROUP_SUFFIX', ''),
    eventsPartitions: e.int('KAFKA_EVENTS_PARTITIONS', 6, 1),
  };
};

export type CommonConfig = ReturnType<typeof commonConfig>;

/** A connected MongoDB client and one of its databases. */
export const connectMongo = async (url: string, dbName: string): Promise<{ client: MongoClient; db: Db }> => {
  // An acknowledged append or claim must survive a mongod crash: journaled, and on a replica set
  // on a majority. A write concern in MONGO_URL itself wins.
  const explicit = /[?&](w|journal|wtimeoutMS)=/i.test(url);
  const client = new MongoClient(url, {
    appName: `docshare-${hostname()}`, serverSelectionTimeoutMS: 10_000,
    ...(explicit ? {} : { writeConcern: { w: 'majority', journal: true } }),
  });
  await client.connect();
  return { client, db: client.db(dbName) };
};

/**
 * The Kafka bus of one service (client id = service name), after making sure the topics exist
 * with their explicit partition counts: whichever service starts first creates them.
 */
export const connectKafka = async (config: CommonConfig, clientId: string, logger: Logger) => {
  await ensureTopics(config.kafkaBrokers, topicPlan({
    eventsTopic: config.eventsTopic, deadLetterTopic: config.deadLetterTopic, eventsPartitions: config.eventsPartitions,
  }));
  return makeKafkaBus({ brokers: config.kafkaBrokers, clientId, topic: config.eventsTopic, deadLetterTopic: config.deadLetterTopic, logger });
};
