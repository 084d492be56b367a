import { ensureTopics, makeKafkaBus, topicPlan } from '@docshare/event-bus/kafka';
import type { Logger } from '@docshare/http';
import type { KafkaConfig } from './config/kafka.ts';

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
