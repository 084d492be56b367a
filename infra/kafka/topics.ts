/**
 * The docshare topic plan, and a CLI that creates it:
 *   set -a; . /root/.cache/docshare/data/stack.env; set +a
 *   node infra/kafka/topics.ts     # creates missing topics, then describes them
 * Env: KAFKA_BROKERS (required), KAFKA_EVENTS_TOPIC, KAFKA_DLQ_TOPIC, KAFKA_EVENTS_PARTITIONS,
 * KAFKA_REPLICATION_FACTOR (the same names the services read).
 * Existing topics are left as they are; a partition count that differs from the plan is reported
 * (exit code 1), never changed. Services import the same plan from @docshare/event-bus
 * (topicPlan / docshareTopics) and call ensureTopics(brokers, plan) at start.
 */
import { fileURLToPath } from 'node:url';
import { DEAD_LETTER_TOPIC, EVENTS_TOPIC, docshareTopics, ensureTopics, parseBrokers, topicPlan } from '@docshare/event-bus/kafka';
import type { TopicSpec } from '@docshare/event-bus/kafka';
import { Kafka, logLevel } from 'kafkajs';

export { DEAD_LETTER_TOPIC, EVENTS_TOPIC, docshareTopics, topicPlan };

const optionalInt = (name: string): number | undefined => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
};

/** The plan for this environment: the defaults unless the service env overrides names or sizes. */
export const planFromEnv = (): TopicSpec[] =>
  topicPlan({
    eventsTopic: process.env.KAFKA_EVENTS_TOPIC || undefined,
    deadLetterTopic: process.env.KAFKA_DLQ_TOPIC || undefined,
    eventsPartitions: optionalInt('KAFKA_EVENTS_PARTITIONS'),
    replicationFactor: optionalInt('KAFKA_REPLICATION_FACTOR'),
  });

async function describeTopics(brokers: string[], names: string[]): Promise<void> {
  const admin = new Kafka({ clientId: 'docshare-topics', brokers, logLevel: logLevel.WARN }).admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: names });
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({ type: 2 /* TOPIC */, name, configNames: ['cleanup.policy', 'retention.ms', 'retention.bytes'] })),
    });
    for (const topic of topics) {
      const resource = configs.resources.find((r) => r.resourceName === topic.name);
      const entries = (resource?.configEntries ?? []).map((entry) => `${entry.configName}=${entry.configValue}`).join(' ');
      const replicas = topic.partitions[0]?.replicas.length ?? 0;
      console.log(`${topic.name}\tpartitions=${topic.partitions.length}\treplicas=${replicas}\t${entries}`);
    }
  } finally {
    await admin.disconnect();
  }
}

async function main(): Promise<number> {
  const brokers = parseBrokers(process.env.KAFKA_BROKERS);
  if (brokers.length === 0) {
    console.error('KAFKA_BROKERS is not set (comma-separated host:port list); e.g. set -a; . /root/.cache/docshare/data/stack.env; set +a');
    return 2;
  }
  const plan = planFromEnv();
  const result = await ensureTopics(brokers, plan, { clientId: 'docshare-topics' });
  for (const topic of result.created) console.log(`created ${topic}`);
  for (const topic of result.existing) console.log(`exists  ${topic}`);
  await describeTopics(brokers, plan.map((spec) => spec.topic));
  for (const { topic, planned, actual } of result.mismatched) {
    console.error(`MISMATCH ${topic}: planned ${planned} partitions, has ${actual} (not changed: more partitions would move keys)`);
  }
  return result.mismatched.length > 0 ? 1 : 0;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (code) => (process.exitCode = code),
    (error: unknown) => {
      console.error('creating the Kafka topics failed:', error);
      process.exitCode = 1;
    },
  );
}
