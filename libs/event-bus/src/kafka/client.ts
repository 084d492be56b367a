/** The kafkajs client every part of the bus is made from: brokers, retry schedule, logging, the idle-loop patch. */
import { Kafka, logLevel } from 'kafkajs';
import type { LogEntry } from 'kafkajs';
import { applyKafkajsIdlePatch } from './kafkajs-patch.ts';
import type { KafkaBusLogger } from './log.ts';

/** Broker answers that only mean "a rebalance is under way": kafkajs logs each at ERROR, yet it rejoins by itself. */
const REBALANCE_NOISE = /rebalancing|not aware of this member|generation id is not valid|not the correct coordinator/i;

/**
 * Forwards kafkajs's own log lines (WARN and worse) to the bus logger instead of the console,
 * demoting the routine rebalance chatter (error responses to Heartbeat/OffsetCommit/JoinGroup
 * while a group rebalances) to info so real errors stand out.
 */
const logCreatorFor = (logger: KafkaBusLogger) => () => (entry: LogEntry): void => {
  const { message, timestamp: _timestamp, ...extra } = entry.log;
  const obj = { ...extra, kafkajs: entry.namespace };
  const detail = `${message} ${typeof extra.error === 'string' ? extra.error : ''}`;
  try {
    if (REBALANCE_NOISE.test(detail)) logger.info(obj, `kafkajs: ${message}`);
    else if (entry.level === logLevel.ERROR) logger.error(obj, `kafkajs: ${message}`);
    else if (entry.level === logLevel.WARN) logger.warn(obj, `kafkajs: ${message}`);
    else logger.info(obj, `kafkajs: ${message}`);
  } catch {
    // A broken log sink must not break the client.
  }
};

/** kafkajs's retry schedule: 100 ms, doubling (±20 %), capped at `maxRetryTime`. */
export const retryOptions = (maxRetryTime: number, retries: number) => ({ initialRetryTime: 100, maxRetryTime, retries });

/** Loggers already told that the idle-loop patch is off: once each, not once per client. */
const toldUnpatched = new WeakSet<KafkaBusLogger>();

/** Applies the kafkajs idle-loop patch (idempotent) and warns `logger` once if it could not. */
const patchKafkajs = (logger: KafkaBusLogger): void => {
  const patch = applyKafkajsIdlePatch();
  if (patch.applied || toldUnpatched.has(logger)) return;
  toldUnpatched.add(logger);
  try {
    logger.warn(
      { kafkajsVersion: patch.version, reason: patch.reason },
      'kafkajs idle-loop patch not applied: every idle Kafka connection wakes the event loop ~1000 times a second',
    );
  } catch {
    // A broken log sink must not break the client.
  }
};

export const makeClient = (brokers: string[], clientId: string, logger: KafkaBusLogger, retryMaxMs = 1_000): Kafka => {
  if (brokers.length === 0 || brokers.some((broker) => broker.trim() === '')) {
    throw new Error(`Kafka needs at least one broker (host:port), got ${JSON.stringify(brokers)}`);
  }
  if (!Number.isSafeInteger(retryMaxMs) || retryMaxMs < 100) throw new RangeError(`retryMaxMs must be an integer >= 100, got ${retryMaxMs}`);
  patchKafkajs(logger);
  // 10 retries capped at retryMaxMs: a request gives up after ~retryMaxMs·8 (the caller retries on).
  return new Kafka({
    clientId, brokers, logLevel: logLevel.WARN, logCreator: logCreatorFor(logger), retry: retryOptions(retryMaxMs, 10),
  });
};

/** Parses a comma-separated broker list such as KAFKA_BROKERS. */
export const parseBrokers = (value: string | undefined): string[] =>
  (value ?? '').split(',').map((broker) => broker.trim()).filter((broker) => broker !== '');
