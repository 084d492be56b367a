/**
 * The project's topic plan. Plain data: it imports nothing, so the admin code that creates the
 * topics (admin.ts) and the CLI (infra/kafka/topics.ts) can both use it without a cycle.
 */

/** One topic of a topic plan. */
export interface TopicSpec {
  topic: string;
  numPartitions: number;
  /** Omitted: the broker's default.replication.factor. */
  replicationFactor?: number;
  /** Topic configs such as `retention.ms`. */
  configs?: Record<string, string>;
}

/** The event topic: every docshare event, key = subject, kept forever so a projector can be rebuilt from it. */
export const EVENTS_TOPIC = 'docshare.events';
/** Events a consumer group gave up on, and records that are not CloudEvents; kept 30 days. */
export const DEAD_LETTER_TOPIC = 'docshare.events.dlq';
export const EVENTS_PARTITIONS = 6;

const DAY_MS = 24 * 60 * 60 * 1000;

export interface TopicPlanOptions {
  eventsTopic?: string;
  deadLetterTopic?: string;
  /** Partitions of the event topic (default 6): the most subscribers one group can keep busy. */
  eventsPartitions?: number;
  /** Omitted: the broker's default.replication.factor (1 locally; use 3 with min.insync.replicas=2 on a cluster). */
  replicationFactor?: number;
}

/**
 * The project's topics with their configs, for any topic names (instances sharing one Kafka use
 * their own). The event topic must keep everything (`retention.ms=-1`): the broker default would
 * delete events after 7 days, and a projector rebuilt from the topic would miss them.
 */
export const topicPlan = (options: TopicPlanOptions = {}): TopicSpec[] => {
  const replication = options.replicationFactor === undefined ? {} : { replicationFactor: options.replicationFactor };
  return [
    {
      topic: options.eventsTopic ?? EVENTS_TOPIC,
      numPartitions: options.eventsPartitions ?? EVENTS_PARTITIONS,
      ...replication,
      configs: { 'cleanup.policy': 'delete', 'retention.ms': '-1', 'retention.bytes': '-1' },
    },
    {
      topic: options.deadLetterTopic ?? DEAD_LETTER_TOPIC,
      numPartitions: 1,
      ...replication,
      configs: { 'cleanup.policy': 'delete', 'retention.ms': String(30 * DAY_MS) },
    },
  ];
};

/** The default plan: docshare.events (6 partitions, kept forever) and docshare.events.dlq (1 partition, 30 days). */
export const docshareTopics: readonly TopicSpec[] = topicPlan();
