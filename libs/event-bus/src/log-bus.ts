import { backoffMs, retrying, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { oneAtATime } from './batches.ts';
import type { BatchConsumerOptions, BatchHandler, EventBatch, EventConsumer, Subscription } from './port.ts';

/**
 * What the bus needs from the event log. The event store's FileEventLog satisfies it; it is
 * spelled out here so the bus does not depend on the event-store package.
 */
export interface AppendLog {
  readAll(afterPosition: number, limit: number): Promise<StoredEvent<CloudEvent>[]>;
  onAppend(listener: (lastPosition: number) => void): () => void;
  /** Position of the newest event (0 when empty); positions are gap-free. */
  lastPosition(): Promise<number>;
}

export interface LogBusOptions {
  /** Events read from the log per batch, at most (default 256; a subscription's maxBatch may lower it). */
  batchSize?: number;
  /** First redelivery delay; it doubles per failed attempt (default 5 ms). */
  baseDelayMs?: number;
  /** Cap on the redelivery delay (default 1000 ms). */
  maxDelayMs?: number;
  /** Told about trouble the bus absorbs: a failing onDeadLetter, an event dropped without one, a failing read. */
  onWarning?: (message: string, error: unknown) => void;
}

export type LogBus = EventConsumer & {
  /**
   * Resolves true once every currently subscribed group has acknowledged (or dead-lettered)
   * every event up to `position`, false after `timeoutMs`: read-your-writes for embedded mode.
   */
  waitForGroups(position: number, timeoutMs: number): Promise<boolean>;
  /**
   * The consumer lag of `group`, in the shape the Kafka bus gives it: one partition (0), the
   * events of the log after the last one the group acknowledged or dead-lettered (the whole log
   * for a group this bus has not delivered to yet: a new process replays everything).
   */
  lag(group: string): Promise<{ partition: number; lag: number }[]>;
};

interface GroupState {
  /** Position of the last event handled or dead-lettered; only in memory, so a new process replays everything. */
  acked: number;
  active: boolean;
}

interface Waiter {
  position: number;
  settle(reached: boolean): void;
}

type Outcome = 'acked' | 'dead-lettered' | 'stopped';

/**
 * The embedded, in-process bus over the event log. One delivery loop per group, one event at a
 * time in log order. A group has at most one subscriber: subscribing to a group that is already
 * active rejects; subscribe again once the previous subscription's stop() has resolved.
 */
export function makeLogBus(log: AppendLog, options: LogBusOptions = {}): LogBus {
  const batchSize = options.batchSize ?? 256;
  const baseDelayMs = options.baseDelayMs ?? 5;
  const maxDelayMs = options.maxDelayMs ?? 1000;
  const groups = new Map<string, GroupState>();
  const waiters = new Set<Waiter>();

  const warn = (message: string, error: unknown): void => {
    try {
      options.onWarning?.(message, error);
    } catch {
      // A broken warning sink must not stop delivery.
    }
  };

  const reached = (position: number): boolean => {
    for (const group of groups.values()) if (group.active && group.acked < position) return false;
    return true;
  };

  const settleWaiters = (): void => {
    for (const waiter of waiters) if (reached(waiter.position)) waiter.settle(true);
  };

  const backoff = (attempt: number): number => backoffMs(attempt, baseDelayMs, maxDelayMs);
  // Redelivery waits the plain (unjittered) backoff: one in-process consumer has no one to stampede with.
  const retries = { baseMs: baseDelayMs, capMs: maxDelayMs, delayMs: (_error: unknown, attempt: number) => backoff(attempt) };

  const startDelivery = (name: string, group: GroupState, handler: BatchHandler, consumer: BatchConsumerOptions): Subscription => {
    const maxAttempts = consumer.maxAttempts ?? 5;
    const limit = Math.min(batchSize, consumer.maxBatch ?? batchSize);
    let stopping = false;
    // Ends the redelivery waits of `retrying` (stop() aborts it).
    const stopped = new AbortController();
    let appended = false;
    let interrupt: (() => void) | null = null;
    let interruptOnAppend = false;

    // Idle waits end on the next append; backoff waits only on their timer. stop() ends either.
    const pause = (ms: number | null): Promise<void> =>
      new Promise((resolve) => {
        const timer = ms === null ? undefined : setTimeout(done, ms);
        function done(): void {
          clearTimeout(timer);
          interrupt = null;
          resolve();
        }
        interrupt = done;
        interruptOnAppend = ms === null;
      });

    const unlisten = log.onAppend(() => {
      appended = true;
      if (interruptOnAppend) interrupt?.();
    });

    const deadLetter = async (record: StoredEvent<CloudEvent>, error: unknown): Promise<Outcome> => {
      const onDeadLetter = consumer.onDeadLetter;
      if (!onDeadLetter) {
        warn(`group ${name}: dropped event at position ${record.position} after ${maxAttempts} attempts (no onDeadLetter)`, error);
        return 'dead-lettered';
      }
      // Moving on before the dead letter is recorded would lose the event silently, so keep trying
      // (until stop()).
      try {
        await retrying(async () => {
          try {
            await onDeadLetter(record, error);
          } catch (deadLetterError) {
            warn(`group ${name}: onDeadLetter failed for position ${record.position}`, deadLetterError);
            throw deadLetterError;
          }
        }, { ...retries, signal: stopped.signal });
        return 'dead-lettered';
      } catch {
        return 'stopped';
      }
    };

    /** The handler on `batch`, up to maxAttempts times; the last error once they all failed. */
    const attempt = async (batch: EventBatch): Promise<'acked' | 'stopped' | { failed: unknown }> => {
      let tried = 0;
      try {
        await retrying(async (n) => {
          tried = n;
          await handler(batch);
        }, { ...retries, attempts: maxAttempts, signal: stopped.signal });
        return 'acked';
      } catch (error) {
        // The last attempt's failure counts even while stopping; an earlier one only if not stopping.
        return tried < maxAttempts && stopping ? 'stopped' : { failed: error };
      }
    };

    /** A batch; when it keeps failing, its events one at a time, so only one that fails alone is dead-lettered. */
    const deliver = async (records: StoredEvent<CloudEvent>[]): Promise<Outcome> => {
      const through = records.at(-1)?.position ?? 0;
      const whole = await attempt({ partition: 0, records, through });
      if (whole === 'acked' || whole === 'stopped') return whole;
      if (records.length === 1) return deadLetter(records[0]!, whole.failed);
      for (const record of records) {
        const one = await attempt({ partition: 0, records: [record], through: record.position });
        if (one === 'stopped') return one;
        if (one !== 'acked' && (await deadLetter(record, one.failed)) === 'stopped') return 'stopped';
        group.acked = record.position;
        settleWaiters();
      }
      return 'acked';
    };

    const run = async (): Promise<void> => {
      let readFailures = 0;
      while (!stopping) {
        appended = false;
        let batch: StoredEvent<CloudEvent>[];
        try {
          batch = await log.readAll(group.acked, limit);
          readFailures = 0;
        } catch (error) {
          warn(`group ${name}: reading the log failed`, error);
          await pause(backoff(++readFailures));
          continue;
        }
        if (batch.length === 0) {
          if (!appended && !stopping) await pause(null);
          continue;
        }
        if (stopping || (await deliver(batch)) === 'stopped') return;
        group.acked = batch.at(-1)!.position;
        settleWaiters();
        // Replaying a long log must not starve I/O: every delivery so far may have been microtasks only.
        await new Promise((resolve) => setImmediate(resolve));
      }
    };

    const running = run()
      .catch((error: unknown) => warn(`group ${name}: delivery loop crashed`, error))
      .finally(() => {
        unlisten();
        group.active = false;
        settleWaiters();
      });

    return {
      stop() {
        stopping = true;
        stopped.abort();
        interrupt?.();
        return running;
      },
    };
  };

  const subscribeBatches = async (name: string, handler: BatchHandler, consumer: BatchConsumerOptions = {}): Promise<Subscription> => {
    if (typeof name !== 'string' || name === '') throw new Error('subscribe needs a non-empty group name');
    const maxAttempts = consumer.maxAttempts ?? 5;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new Error(`maxAttempts must be a positive integer, got ${maxAttempts}`);
    let group = groups.get(name);
    if (!group) groups.set(name, (group = { acked: 0, active: false }));
    const maxBatch = consumer.maxBatch ?? batchSize;
    if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new Error(`maxBatch must be a positive integer, got ${maxBatch}`);
    if (group.active) throw new Error(`consumer group ${name} already has an active subscriber; stop it first`);
    group.active = true;
    return startDelivery(name, group, handler, consumer);
  };

  return {
    subscribe: (name, handler, consumer = {}) => subscribeBatches(name, oneAtATime(handler), { ...consumer, maxBatch: 1 }),
    subscribeBatches,

    async lag(name) {
      const last = await log.lastPosition();
      return [{ partition: 0, lag: Math.max(0, last - (groups.get(name)?.acked ?? 0)) }];
    },

    waitForGroups(position, timeoutMs) {
      if (reached(position)) return Promise.resolve(true);
      return new Promise((resolve) => {
        const waiter: Waiter = {
          position,
          settle(result) {
            clearTimeout(timer);
            waiters.delete(waiter);
            resolve(result);
          },
        };
        const timer = setTimeout(() => waiter.settle(false), timeoutMs);
        waiters.add(waiter);
      });
    },
  };
}
