import { createRequire } from 'node:module';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import type { Admin, Consumer, EachBatchPayload, IHeaders, KafkaMessage, LogEntry, Message, Producer } from 'kafkajs';
import { backoffMs, partitionKeyOf, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { oneAtATime } from './batches.ts';
import type { BatchConsumerOptions, BatchHandler, EventBatch, EventConsumer, EventPublisher, Subscription } from './port.ts';

export * from './kafka-topics.ts';

/** The pino-shaped logger the bus reports to (pino's `logger.warn(obj, msg)` signature). */
export interface KafkaBusLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Consumer knobs; the defaults suit services, tests turn the timeouts down. */
export interface KafkaConsumerTuning {
  /**
   * Group session timeout (default 10 000 ms; the broker's minimum is group.min.session.timeout.ms,
   * 6 000 by default). Also how long a restarted member waits to join: the group waits for the
   * dead member's session to expire first.
   */
  sessionTimeout?: number;
  /** How long the coordinator waits for every member to rejoin during a rebalance (default 60 000 ms). */
  rebalanceTimeout?: number;
  /** Heartbeat period, also while a handler runs (default 1 000 ms). */
  heartbeatInterval?: number;
  /** Longest an idle fetch waits for data; bounds stop() and rebalance latency when idle (default 1 000 ms). */
  maxWaitTimeInMs?: number;
  /** Partitions one subscriber handles at the same time, each still in order (default 1). */
  partitionsConsumedConcurrently?: number;
  /** First redelivery delay after a handler rejection; doubles per attempt, jittered (default 20 ms). */
  retryBaseDelayMs?: number;
  /** Cap on the redelivery delay (default 1 000 ms). */
  retryMaxDelayMs?: number;
}

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

/** Kafka record headers the bus writes next to the structured-mode CloudEvent value. */
export const kafkaHeaders = {
  contentType: 'content-type',
  id: 'ce_id',
  type: 'ce_type',
  specversion: 'ce_specversion',
  position: 'docshare_position',
  /** On a record with no value: every event of this partition up to this position precedes it. */
  watermark: 'docshare_watermark',
  correlationId: 'correlation_id',
  dlqError: 'dlq_error',
  dlqGroup: 'dlq_group',
  dlqAttempts: 'dlq_attempts',
  dlqTopic: 'dlq_topic',
  dlqPartition: 'dlq_partition',
  dlqOffset: 'dlq_offset',
} as const;

export const CLOUDEVENTS_JSON = 'application/cloudevents+json';

/**
 * kafkajs 2.2.4 re-arms a pending-request check on every connection with a negative timeout
 * (clamped to 1 ms) even when nothing is pending or throttled: each open connection wakes the
 * event loop ~1000 times a second (≈2 % of a core per client idle, measured) and Node 24 prints a
 * TimeoutNegativeWarning. Upstream: tulios/kafkajs#1704, #1751 (fixes #1755/#1768 unreleased).
 * Skipping the re-arm when the queue is empty and unthrottled is the fix proposed there: a
 * request that cannot be sent at once is queued by push(), which schedules the check itself.
 */
function patchKafkajsIdleLoop(): void {
  interface RequestQueueLike {
    pending: unknown[];
    throttledUntil: number;
    scheduleCheckPendingRequests(): void;
  }
  try {
    const requestQueue = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as {
      prototype?: RequestQueueLike & { __docshareIdlePatch?: true };
    };
    const proto = requestQueue.prototype;
    if (!proto || proto.__docshareIdlePatch || typeof proto.scheduleCheckPendingRequests !== 'function') return;
    const original = proto.scheduleCheckPendingRequests;
    proto.scheduleCheckPendingRequests = function (this: RequestQueueLike): void {
      if (Array.isArray(this.pending) && this.pending.length === 0 && this.throttledUntil <= Date.now()) return;
      original.call(this);
    };
    proto.__docshareIdlePatch = true;
  } catch {
    // Another kafkajs layout: run unpatched.
  }
}
patchKafkajsIdleLoop();

const silentLogger: KafkaBusLogger = { info() {}, warn() {}, error() {} };

const errorMessage = (error: unknown): string => (error instanceof Error ? error.message : String(error));

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
const retryOptions = (maxRetryTime: number, retries: number) => ({ initialRetryTime: 100, maxRetryTime, retries });

const makeClient = (brokers: string[], clientId: string, logger: KafkaBusLogger, retryMaxMs = 1_000): Kafka => {
  if (brokers.length === 0 || brokers.some((broker) => broker.trim() === '')) {
    throw new Error(`Kafka needs at least one broker (host:port), got ${JSON.stringify(brokers)}`);
  }
  if (!Number.isSafeInteger(retryMaxMs) || retryMaxMs < 100) throw new RangeError(`retryMaxMs must be an integer >= 100, got ${retryMaxMs}`);
  // 10 retries capped at retryMaxMs: a request gives up after ~retryMaxMs·8 (the caller retries on).
  return new Kafka({
    clientId, brokers, logLevel: logLevel.WARN, logCreator: logCreatorFor(logger), retry: retryOptions(retryMaxMs, 10),
  });
};

/** Parses a comma-separated broker list such as KAFKA_BROKERS. */
export const parseBrokers = (value: string | undefined): string[] =>
  (value ?? '').split(',').map((broker) => broker.trim()).filter((broker) => broker !== '');

const headerText = (headers: IHeaders | undefined, name: string): string | undefined => {
  const value = headers?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
};

const isCloudEvent = (value: unknown): value is CloudEvent => {
  if (typeof value !== 'object' || value === null) return false;
  const event = value as Record<string, unknown>;
  const text = (key: string): boolean => typeof event[key] === 'string' && event[key] !== '';
  return (
    event.specversion === '1.0' &&
    text('id') &&
    text('source') &&
    text('type') &&
    text('subject') &&
    Number.isSafeInteger(event.streamversion) &&
    (event.streamversion as number) >= 1
  );
};

type Decoded =
  | { ok: true; record: StoredEvent<CloudEvent> }
  | { ok: true; watermark: number }
  | { ok: false; reason: string };

/** A Kafka record as the handler sees it: an event, a watermark, or poison (anything else). */
export function decodeKafkaRecord(message: Pick<KafkaMessage, 'value' | 'headers' | 'offset'>): Decoded {
  const mark = headerText(message.headers, kafkaHeaders.watermark);
  if (mark !== undefined && (message.value === null || message.value.length === 0)) {
    const watermark = Number(mark);
    return Number.isSafeInteger(watermark) && watermark >= 0 ? { ok: true, watermark } : { ok: false, reason: `bad watermark ${mark}` };
  }
  if (message.value === null || message.value.length === 0) return { ok: false, reason: 'record has no value' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.value.toString('utf8'));
  } catch (error) {
    return { ok: false, reason: `value is not JSON: ${errorMessage(error)}` };
  }
  if (!isCloudEvent(parsed)) {
    return { ok: false, reason: 'value is not a docshare CloudEvent (needs specversion 1.0, id, source, type, subject, streamversion)' };
  }
  const header = headerText(message.headers, kafkaHeaders.position);
  const fromHeader = header === undefined ? Number.NaN : Number(header);
  const position = Number.isSafeInteger(fromHeader) && fromHeader >= 1 ? fromHeader : Number(message.offset);
  return { ok: true, record: { position, event: parsed } };
}

/** The Kafka record for one stored event: structured-mode CloudEvent, keyed by `partitionKeyOf`. */
export function toKafkaMessage(record: StoredEvent<CloudEvent>): Message {
  const { event } = record;
  if (typeof event.subject !== 'string' || event.subject === '') {
    throw new TypeError(`event ${String(event.id)} has no subject to key it by`);
  }
  const headers: IHeaders = {
    [kafkaHeaders.id]: event.id,
    [kafkaHeaders.type]: event.type,
    [kafkaHeaders.specversion]: event.specversion,
    [kafkaHeaders.contentType]: CLOUDEVENTS_JSON,
    [kafkaHeaders.position]: String(record.position),
  };
  if (typeof event.correlationid === 'string') headers[kafkaHeaders.correlationId] = event.correlationid;
  return { key: partitionKeyOf(event), value: JSON.stringify(event), headers };
}

/**
 * The watermark records that follow a published batch, one per partition: a consumer that reads
 * one knows it has seen every event of its partition up to `position`, even a partition the
 * batch put nothing on. That is how a projector's progress can be one number per partition that
 * every partition advances, which consistency tokens (global positions) are compared with.
 */
export const watermarkMessages = (position: number, partitions: number): Message[] =>
  Array.from({ length: partitions }, (_, partition) => ({
    partition, key: null, value: null, headers: { [kafkaHeaders.watermark]: String(position) },
  }));

/** Jittered exponential backoff: between half and all of min(cap, base·2^(attempt-1)). */
const backoffDelay = (attempt: number, baseMs: number, capMs: number): number => {
  const ceiling = backoffMs(attempt, baseMs, capMs);
  return ceiling / 2 + Math.random() * (ceiling / 2);
};

/** One producer shared by the publisher and the dead-letter writes; connected on first use. */
function sharedProducer(kafka: Kafka, retryMaxMs: number) {
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

type Outcome = 'done' | 'abandoned';

/**
 * Event bus over Kafka. The publisher writes each event as a structured-mode CloudEvent keyed by
 * its subject (idempotent producer, acks from all in-sync replicas). Each subscription is a
 * kafkajs consumer in the named group that commits a record's offset only once its handler
 * resolved or it was dead-lettered, retrying a rejected record in place first.
 */
export function makeKafkaBus(options: KafkaBusOptions): KafkaBus {
  const logger = options.logger ?? silentLogger;
  const tuning = options.consumer ?? {};
  const { topic, deadLetterTopic } = options;
  const heartbeatInterval = tuning.heartbeatInterval ?? 1000;
  const retryBaseDelayMs = tuning.retryBaseDelayMs ?? 20;
  const retryMaxDelayMs = tuning.retryMaxDelayMs ?? 1000;
  const retryMaxMs = options.retryMaxMs ?? 1_000;
  const kafka = makeClient(options.brokers, options.clientId, logger, retryMaxMs);
  const producer = sharedProducer(kafka, retryMaxMs);
  const subscriptions = new Set<Subscription>();
  const publishing = new Set<Promise<void>>();
  let publisherClosed = false;
  let closed = false;

  const warn = (obj: object, msg: string): void => {
    try {
      logger.warn(obj, msg);
    } catch {
      // A broken log sink must not stop delivery.
    }
  };
  const logError = (obj: object, msg: string): void => {
    try {
      logger.error(obj, msg);
    } catch {
      // As above.
    }
  };

  /** The producer also writes dead letters, so it stays connected while a subscription is active. */
  const releaseProducerIfIdle = async (): Promise<void> => {
    if (publisherClosed && subscriptions.size === 0) await producer.disconnect();
  };

  /** The event topic's partition count, for watermarks: asked once a minute; 0 (no watermarks) while unknown. */
  let partitions: { count: number; at: number } | null = null;
  const partitionCount = async (): Promise<number> => {
    if (partitions && Date.now() - partitions.at < 60_000) return partitions.count;
    try {
      const metadata = await (await adminClient()).fetchTopicMetadata({ topics: [topic] });
      partitions = { count: metadata.topics[0]?.partitions.length ?? 0, at: Date.now() };
    } catch (error) {
      warn({ topic, err: error }, 'could not read the topic\'s partitions; publishing without watermarks');
      return partitions?.count ?? 0;
    }
    return partitions.count;
  };

  const publisher: EventPublisher = {
    async publish(records) {
      if (publisherClosed) throw new Error('the Kafka publisher is closed');
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
      publisherClosed = true;
      await Promise.allSettled([...publishing]);
      await releaseProducerIfIdle();
    },
  };

  const subscribeBatches = async (group: string, handler: BatchHandler, consumerOptions: BatchConsumerOptions = {}): Promise<Subscription> => {
    if (closed) throw new Error('the Kafka bus is closed');
    if (typeof group !== 'string' || group === '') throw new Error('subscribe needs a non-empty group name');
    const maxAttempts = consumerOptions.maxAttempts ?? 5;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new Error(`maxAttempts must be a positive integer, got ${maxAttempts}`);
    const { onDeadLetter } = consumerOptions;
    const maxBatch = consumerOptions.maxBatch ?? 500;
    if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new Error(`maxBatch must be a positive integer, got ${maxBatch}`);

    let stopping = false;
    const wakers = new Set<() => void>();
    const inFlight = new Set<Promise<void>>();

    /** Waits `ms`, or less if stop() is called meanwhile. */
    const pause = (ms: number): Promise<void> =>
      new Promise((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          wakers.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        wakers.add(done);
      });

    const consumer: Consumer = kafka.consumer({
      groupId: group,
      sessionTimeout: tuning.sessionTimeout ?? 10_000,
      rebalanceTimeout: tuning.rebalanceTimeout ?? 60_000,
      heartbeatInterval,
      maxWaitTimeInMs: tuning.maxWaitTimeInMs ?? 1000,
      allowAutoTopicCreation: false,
      retry: { ...retryOptions(retryMaxMs, 10), restartOnFailure: async () => !stopping },
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      const obj = { group, topic, err: payload.error, restart: payload.restart };
      if (payload.restart) warn(obj, 'kafka consumer crashed; kafkajs restarts it');
      else if (!stopping) logError(obj, 'kafka consumer crashed and will not restart: the group gets no more events from this subscription');
    });

    const where = (batchTopic: string, partition: number, message: KafkaMessage) => ({
      group,
      topic: batchTopic,
      partition,
      offset: message.offset,
    });

    /** Writes the record to the dead-letter topic, retrying until it is written or the subscription stops. */
    const writeDeadLetter = async (
      payload: EachBatchPayload,
      message: KafkaMessage,
      reason: string,
      attempts: number,
    ): Promise<Outcome> => {
      const headers: IHeaders = {};
      for (const [name, value] of Object.entries(message.headers ?? {})) if (value !== undefined) headers[name] = value;
      headers[kafkaHeaders.dlqError] = reason.slice(0, 4000);
      headers[kafkaHeaders.dlqGroup] = group;
      headers[kafkaHeaders.dlqAttempts] = String(attempts);
      headers[kafkaHeaders.dlqTopic] = payload.batch.topic;
      headers[kafkaHeaders.dlqPartition] = String(payload.batch.partition);
      headers[kafkaHeaders.dlqOffset] = message.offset;
      for (let attempt = 1; ; attempt++) {
        try {
          const ready = await producer.ready();
          await ready.send({ topic: deadLetterTopic, acks: -1, messages: [{ key: message.key, value: message.value, headers }] });
          return 'done';
        } catch (error) {
          // Moving on before the dead letter is written would lose the event silently.
          logError({ ...where(payload.batch.topic, payload.batch.partition, message), err: error, attempt }, 'writing a dead letter failed; retrying');
          if (stopping || !payload.isRunning() || payload.isStale()) return 'abandoned';
          await pause(backoffDelay(attempt, retryBaseDelayMs, retryMaxDelayMs));
          await payload.heartbeat();
          if (stopping || !payload.isRunning() || payload.isStale()) return 'abandoned';
        }
      }
    };

    /** Calls the handler, keeping the group session alive however long it takes. */
    const runHandler = async (payload: EachBatchPayload, batch: EventBatch): Promise<void> => {
      const beat = setInterval(() => {
        payload.heartbeat().catch(() => {
          // A rebalance is noticed by the next heartbeat or commit after the handler returns.
        });
      }, heartbeatInterval);
      try {
        await handler(batch);
      } finally {
        clearInterval(beat);
      }
    };

    const alive = (payload: EachBatchPayload): boolean => !stopping && payload.isRunning() && !payload.isStale();

    /** The handler on `batch`, up to maxAttempts times: 'failed' once they all failed. */
    const attempt = async (payload: EachBatchPayload, batch: EventBatch): Promise<Outcome | { failed: unknown }> => {
      let lastError: unknown;
      for (let n = 1; n <= maxAttempts; n++) {
        try {
          await runHandler(payload, batch);
          return 'done';
        } catch (error) {
          lastError = error;
        }
        if (n === maxAttempts) break;
        if (!alive(payload)) return 'abandoned';
        await pause(backoffDelay(n, retryBaseDelayMs, retryMaxDelayMs));
        if (!alive(payload)) return 'abandoned';
        await payload.heartbeat();
      }
      return { failed: lastError };
    };

    /** Dead-letters one event its handler failed on every time, then tells onDeadLetter. */
    const giveUp = async (payload: EachBatchPayload, message: KafkaMessage, record: StoredEvent<CloudEvent>, error: unknown): Promise<Outcome> => {
      const { batch } = payload;
      warn(
        { ...where(batch.topic, batch.partition, message), eventId: record.event.id, attempts: maxAttempts, err: error },
        'handler failed on every attempt: dead-lettering the event',
      );
      if ((await writeDeadLetter(payload, message, errorMessage(error), maxAttempts)) === 'abandoned') return 'abandoned';
      if (onDeadLetter) {
        // The event is safe in the dead-letter topic now, so a failing callback cannot hold the partition forever.
        for (let n = 1; n <= maxAttempts; n++) {
          try {
            await onDeadLetter(record, error);
            break;
          } catch (callbackError) {
            logError({ ...where(batch.topic, batch.partition, message), err: callbackError, attempt: n }, 'onDeadLetter failed');
            if (n === maxAttempts || stopping) break;
            await pause(backoffDelay(n, retryBaseDelayMs, retryMaxDelayMs));
          }
        }
      }
      return 'done';
    };

    /**
     * Delivers a run of records (events and watermarks) as one batch; when it keeps failing, its
     * events one at a time, so only an event that fails alone is dead-lettered. 'abandoned' leaves
     * the run uncommitted (stop, rebalance): it is delivered again.
     */
    const deliverRun = async (payload: EachBatchPayload, run: { message: KafkaMessage; record?: StoredEvent<CloudEvent> }[], through: number): Promise<Outcome> => {
      const events = run.filter((item) => item.record !== undefined) as { message: KafkaMessage; record: StoredEvent<CloudEvent> }[];
      const partition = payload.batch.partition;
      const whole = await attempt(payload, { partition, records: events.map((e) => e.record), through });
      if (whole === 'done' || whole === 'abandoned') return whole;
      if (events.length === 0) return 'done'; // only a watermark: the next batch carries a later one
      if (events.length === 1) return giveUp(payload, events[0]!.message, events[0]!.record, whole.failed);
      for (const { message, record } of events) {
        const one = await attempt(payload, { partition, records: [record], through: record.position });
        if (one === 'abandoned') return one;
        if (one !== 'done' && (await giveUp(payload, message, record, one.failed)) === 'abandoned') return 'abandoned';
      }
      const rest = await attempt(payload, { partition, records: [], through });
      return rest === 'abandoned' ? rest : 'done';
    };

    const eachBatch = async (payload: EachBatchPayload): Promise<void> => {
      const { batch, resolveOffset, commitOffsetsIfNecessary, heartbeat } = payload;
      let run: { message: KafkaMessage; record?: StoredEvent<CloudEvent> }[] = [];
      let events = 0;
      let through = 0;
      /** Delivers the run so far and commits past it; false when it was abandoned. */
      const flush = async (): Promise<boolean> => {
        const last = run.at(-1);
        if (!last) return true;
        if ((await deliverRun(payload, run, through)) === 'abandoned') return false;
        run = [];
        events = 0;
        await commitPast(last.message);
        return true;
      };
      const commitPast = async (message: KafkaMessage): Promise<void> => {
        resolveOffset(message.offset);
        const offset = (BigInt(message.offset) + 1n).toString();
        await commitOffsetsIfNecessary({ topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset }] }] });
        await heartbeat();
      };
      for (const message of batch.messages) {
        if (!alive(payload)) return;
        const decoded = decodeKafkaRecord(message);
        if (!decoded.ok) {
          if (!(await flush())) return;
          warn({ ...where(batch.topic, batch.partition, message), reason: decoded.reason }, 'poison record: dead-lettering it unhandled');
          if ((await writeDeadLetter(payload, message, decoded.reason, 0)) === 'abandoned') return;
          await commitPast(message);
          continue;
        }
        if ('watermark' in decoded) {
          run.push({ message });
          through = Math.max(through, decoded.watermark);
        } else {
          run.push({ message, record: decoded.record });
          through = Math.max(through, decoded.record.position);
          if (++events >= maxBatch && !(await flush())) return;
        }
      }
      if (alive(payload)) await flush();
    };

    const tracked = async (payload: EachBatchPayload): Promise<void> => {
      const run = eachBatch(payload);
      const settled = run.then(
        () => {},
        () => {},
      );
      inFlight.add(settled);
      try {
        await run;
      } catch (error) {
        // While stopping, a failed commit or heartbeat only means the record is redelivered to the group.
        if (stopping) {
          warn({ group, topic: payload.batch.topic, partition: payload.batch.partition, err: error }, 'commit or heartbeat failed while stopping; unacknowledged records will be redelivered');
          return;
        }
        throw error; // kafkajs rejoins the group on rebalance errors and retries or restarts on others.
      } finally {
        inFlight.delete(settled);
      }
    };

    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: tuning.partitionsConsumedConcurrently ?? 1,
        eachBatch: tracked,
      });
    } catch (error) {
      stopping = true;
      await consumer.disconnect().catch(() => {});
      throw error;
    }

    let stopped: Promise<void> | null = null;
    const subscription: Subscription = {
      stop() {
        stopped ??= (async () => {
          stopping = true;
          for (const wake of [...wakers]) wake();
          try {
            // kafkajs waits for the running batch, which ends after the in-flight record.
            await consumer.disconnect();
          } catch (error) {
            warn({ group, err: error }, 'disconnecting the kafka consumer failed');
          }
          await Promise.all([...inFlight]);
          subscriptions.delete(subscription);
          await releaseProducerIfIdle().catch((error: unknown) => warn({ err: error }, 'disconnecting the kafka producer failed'));
        })();
        return stopped;
      },
    };
    subscriptions.add(subscription);
    return subscription;
  };

  /** One admin client for lag queries, connected on first use and again after a failure. */
  let admin: { client: Admin; connected: Promise<void> } | null = null;
  const adminClient = async (): Promise<Admin> => {
    if (closed) throw new Error('the Kafka bus is closed');
    if (!admin) {
      const client = kafka.admin();
      admin = { client, connected: client.connect() };
    }
    const current = admin;
    try {
      await current.connected;
      return current.client;
    } catch (error) {
      if (admin === current) admin = null;
      throw error;
    }
  };

  return {
    consumer: { subscribe: (group, handler, consumerOptions) => subscribeBatches(group, oneAtATime(handler), { ...consumerOptions, maxBatch: 1 }), subscribeBatches },
    publisher,
    async close() {
      closed = true;
      await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
      await publisher.close();
      await producer.disconnect();
      const was = admin;
      admin = null;
      if (was) await was.connected.then(() => was.client.disconnect(), () => {});
    },
    async lag(group) {
      const client = await adminClient();
      try {
        const [ends, committed] = await Promise.all([
          client.fetchTopicOffsets(topic),
          client.fetchOffsets({ groupId: group, topics: [topic] }),
        ]);
        const at = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
        return ends.map(({ partition, high, low }) => {
          const offset = at.get(partition) ?? -1n;
          // -1: nothing committed yet, the group starts at the beginning of what is retained.
          const from = offset < 0n ? BigInt(low) : offset;
          const lag = BigInt(high) - from;
          return { partition, lag: Number(lag > 0n ? lag : 0n) };
        }).sort((a, b) => a.partition - b.partition);
      } catch (error) {
        // A broken connection is reopened on the next query.
        const was = admin;
        admin = null;
        if (was) void was.client.disconnect().catch(() => {});
        throw error;
      }
    },
  };
}

/** One topic of a topic plan. */
export interface TopicSpec {
  topic: string;
  numPartitions: number;
  /** Omitted: the broker's default.replication.factor. */
  replicationFactor?: number;
  /** Topic configs such as `retention.ms`. */
  configs?: Record<string, string>;
}

export interface EnsureTopicsResult {
  created: string[];
  existing: string[];
  /** Existing topics whose partition count differs from the plan (never changed automatically). */
  mismatched: { topic: string; planned: number; actual: number }[];
}

/** Creates the topics that do not exist yet; existing ones are left alone (and reported if their partition count differs). */
export async function ensureTopics(
  brokers: string[],
  topics: readonly TopicSpec[],
  options: { clientId?: string; logger?: KafkaBusLogger } = {},
): Promise<EnsureTopicsResult> {
  const admin = makeClient(brokers, options.clientId ?? 'docshare-topics', options.logger ?? silentLogger).admin();
  await admin.connect();
  try {
    const present = new Set(await admin.listTopics());
    const missing = topics.filter((spec) => !present.has(spec.topic));
    if (missing.length > 0) {
      // false means someone else created them meanwhile, which is fine too.
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((spec) => ({
          topic: spec.topic,
          numPartitions: spec.numPartitions,
          ...(spec.replicationFactor === undefined ? {} : { replicationFactor: spec.replicationFactor }),
          configEntries: Object.entries(spec.configs ?? {}).map(([name, value]) => ({ name, value })),
        })),
      });
    }
    const existingSpecs = topics.filter((spec) => present.has(spec.topic));
    const mismatched: EnsureTopicsResult['mismatched'] = [];
    if (existingSpecs.length > 0) {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics: existingSpecs.map((spec) => spec.topic) });
      for (const spec of existingSpecs) {
        const actual = metadata.find((topic) => topic.name === spec.topic)?.partitions.length ?? 0;
        if (actual !== spec.numPartitions) mismatched.push({ topic: spec.topic, planned: spec.numPartitions, actual });
      }
    }
    return { created: missing.map((spec) => spec.topic), existing: existingSpecs.map((spec) => spec.topic), mismatched };
  } finally {
    await admin.disconnect();
  }
}
