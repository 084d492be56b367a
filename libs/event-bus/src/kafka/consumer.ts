/**
 * Consumer groups over Kafka: batches per partition, committed once handled; a failing batch is
 * retried in place, then split into single events, and an event that fails alone is dead-lettered.
 */
import type { Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import { retrying, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { oneAtATime } from '../batches.ts';
import type { BatchConsumerOptions, BatchHandler, EventBatch, EventConsumer, Subscription } from '../port.ts';
import { retryOptions } from './client.ts';
import { deadLetterHeaders, decodeKafkaRecord } from './codec.ts';
import { errorMessage, type KafkaBusLogger } from './log.ts';
import type { SharedProducer } from './producer.ts';

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

export interface KafkaConsumerParts {
  kafka: Kafka;
  /** The event topic. */
  topic: string;
  deadLetterTopic: string;
  tuning: KafkaConsumerTuning;
  /** Cap on kafkajs's request retry pauses (see KafkaBusOptions.retryMaxMs). */
  retryMaxMs: number;
  /** Writes the dead letters. */
  producer: SharedProducer;
  /** Must not throw (guardedLogger). */
  log: KafkaBusLogger;
  /** True once the bus is closed: no new subscriptions. */
  isClosed(): boolean;
  /** Told of each subscription once it runs, and once it has stopped. */
  started(subscription: Subscription): void;
  stopped(subscription: Subscription): Promise<void>;
}

type Outcome = 'done' | 'abandoned';

/** A failure of the operation being retried (a handler, a send), told apart from the retry loop's own (a heartbeat). */
class Failed extends Error {
  readonly error: unknown;
  constructor(error: unknown) {
    super('attempt failed');
    this.error = error;
  }
}
/** Thrown between attempts once the partition is no longer ours (stop, rebalance): the try ends, uncommitted. */
class Abandoned extends Error {}

/**
 * Each subscription is a kafkajs consumer in the named group that commits a record's offset only
 * once its handler resolved or it was dead-lettered, retrying a rejected batch in place first.
 */
export function makeKafkaConsumer(parts: KafkaConsumerParts): EventConsumer {
  const { kafka, topic, deadLetterTopic, tuning, retryMaxMs, producer, log } = parts;
  const heartbeatInterval = tuning.heartbeatInterval ?? 1000;
  const retryBaseDelayMs = tuning.retryBaseDelayMs ?? 20;
  const retryMaxDelayMs = tuning.retryMaxDelayMs ?? 1000;

  const subscribeBatches = async (group: string, handler: BatchHandler, consumerOptions: BatchConsumerOptions = {}): Promise<Subscription> => {
    if (parts.isClosed()) throw new Error('the Kafka bus is closed');
    if (typeof group !== 'string' || group === '') throw new Error('subscribe needs a non-empty group name');
    const maxAttempts = consumerOptions.maxAttempts ?? 5;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new Error(`maxAttempts must be a positive integer, got ${maxAttempts}`);
    const { onDeadLetter } = consumerOptions;
    const maxBatch = consumerOptions.maxBatch ?? 500;
    if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new Error(`maxBatch must be a positive integer, got ${maxBatch}`);

    let stopping = false;
    // stop() aborts it: the retry waits below end at once.
    const halt = new AbortController();
    const inFlight = new Set<Promise<void>>();
    const retries = { baseMs: retryBaseDelayMs, capMs: retryMaxDelayMs, signal: halt.signal };

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
      if (payload.restart) log.warn(obj, 'kafka consumer crashed; kafkajs restarts it');
      else if (!stopping) log.error(obj, 'kafka consumer crashed and will not restart: the group gets no more events from this subscription');
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
      const headers = deadLetterHeaders(message, { topic: payload.batch.topic, partition: payload.batch.partition, group }, reason, attempts);
      // Moving on before the dead letter is written would lose the event silently: retried for as
      // long as the partition is ours.
      try {
        await retrying(async (attempt) => {
          if (attempt > 1) {
            await payload.heartbeat();
            if (!alive(payload)) throw new Abandoned('the partition is no longer ours');
          }
          try {
            const ready = await producer.ready();
            await ready.send({ topic: deadLetterTopic, acks: -1, messages: [{ key: message.key, value: message.value, headers }] });
          } catch (error) {
            log.error({ ...where(payload.batch.topic, payload.batch.partition, message), err: error, attempt }, 'writing a dead letter failed; retrying');
            throw new Failed(error);
          }
        }, { ...retries, retryIf: (error) => error instanceof Failed && alive(payload) });
        return 'done';
      } catch (error) {
        if (error instanceof Failed || error instanceof Abandoned) return 'abandoned';
        throw error;
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
      let tried = 0;
      try {
        await retrying(async (n) => {
          tried = n;
          if (n > 1) {
            if (!alive(payload)) throw new Abandoned('the partition is no longer ours');
            await payload.heartbeat();
          }
          try {
            await runHandler(payload, batch);
          } catch (error) {
            throw new Failed(error);
          }
        }, { ...retries, attempts: maxAttempts, retryIf: (error) => error instanceof Failed && alive(payload) });
        return 'done';
      } catch (error) {
        // The last attempt's failure counts whatever happens meanwhile; an earlier one ends the try when the partition is no longer ours.
        if (error instanceof Failed) return tried === maxAttempts ? { failed: error.error } : 'abandoned';
        if (error instanceof Abandoned) return 'abandoned';
        throw error;
      }
    };

    /** Dead-letters one event its handler failed on every time, then tells onDeadLetter. */
    const giveUp = async (payload: EachBatchPayload, message: KafkaMessage, record: StoredEvent<CloudEvent>, error: unknown): Promise<Outcome> => {
      const { batch } = payload;
      log.warn(
        { ...where(batch.topic, batch.partition, message), eventId: record.event.id, attempts: maxAttempts, err: error },
        'handler failed on every attempt: dead-lettering the event',
      );
      if ((await writeDeadLetter(payload, message, errorMessage(error), maxAttempts)) === 'abandoned') return 'abandoned';
      if (onDeadLetter) {
        // The event is safe in the dead-letter topic now, so a failing callback cannot hold the partition forever.
        await retrying(async (n) => {
          try {
            await onDeadLetter(record, error);
          } catch (callbackError) {
            log.error({ ...where(batch.topic, batch.partition, message), err: callbackError, attempt: n }, 'onDeadLetter failed');
            throw callbackError;
          }
        }, { ...retries, attempts: maxAttempts }).catch(() => {
          // Logged above; the event is in the dead-letter topic whatever the callback does.
        });
      }
      return 'done';
    };

    /**
     * Delivers a run of records (events and watermarks) as one batch; when it keeps failing, its
     * events one at a time, so only an event that fails alone is dead-lettered. 'abandoned' leaves
     * the run uncommitted (stop, rebalance): it is delivered again.
     */
    const deliverRun = async (payload: EachBatchPayload, run: { message: KafkaMessage; record?: StoredEvent<CloudEvent> }[], through: number): Promise<Outcome> => {
      const events = run.flatMap(({ message, record }) => (record === undefined ? [] : [{ message, record }]));
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
          log.warn({ ...where(batch.topic, batch.partition, message), reason: decoded.reason }, 'poison record: dead-lettering it unhandled');
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
          log.warn({ group, topic: payload.batch.topic, partition: payload.batch.partition, err: error }, 'commit or heartbeat failed while stopping; unacknowledged records will be redelivered');
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
          halt.abort();
          try {
            // kafkajs waits for the running batch, which ends after the in-flight record.
            await consumer.disconnect();
          } catch (error) {
            log.warn({ group, err: error }, 'disconnecting the kafka consumer failed');
          }
          await Promise.all([...inFlight]);
          await parts.stopped(subscription).catch((error: unknown) => log.warn({ err: error }, 'disconnecting the kafka producer failed'));
        })();
        return stopped;
      },
    };
    parts.started(subscription);
    return subscription;
  };

  return {
    subscribe: (group, handler, consumerOptions) => subscribeBatches(group, oneAtATime(handler), { ...consumerOptions, maxBatch: 1 }),
    subscribeBatches,
  };
}
