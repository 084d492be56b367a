import { jitteredBackoffMs, type CloudEvent, type DocshareEvent, type EventType, type StoredEvent } from '@docshare/contracts';
import type { EventBatch, EventConsumer, Subscription } from '@docshare/event-bus';
import type { GuardedUpdate, Update } from '@docshare/read-store';
import type { Checkpoints } from './consistency.ts';
import { isTransient, type Logger } from '@docshare/http';

export { isTransient };

/** One change to one read-model document; applied under the position of the event it comes from. */
export interface ReadOp {
  collection: string;
  id: string;
  update: Update;
}

/** A pure projection: the document changes one event implies (at most one per document). */
export type Projection = (event: DocshareEvent) => ReadOp[];

const KNOWN: ReadonlySet<string> = new Set<EventType>([
  'docs.user.registered.v1', 'docs.category.created.v1', 'docs.file.uploaded.v1', 'docs.file.updated.v1',
  'docs.file.deleted.v1', 'docs.file.downloaded.v1', 'docs.file.viewed.v1', 'docs.file.purchased.v1',
  'docs.comment.posted.v1', 'docs.file.content-extracted.v1', 'docs.file.content-extraction-failed.v1',
]);

/** The event as a known docshare event, or null for types this version does not know (skipped, never fatal). */
export const known = (event: CloudEvent): DocshareEvent | null =>
  KNOWN.has(event.type) && typeof event.subject === 'string' && Number.isSafeInteger(event.streamversion)
    ? (event as DocshareEvent)
    : null;

/** A read model's handler: applies a batch of events (idempotently: a batch may come again). */
export type BatchApply = (records: readonly StoredEvent<CloudEvent>[]) => Promise<void>;

/** The ops of `record` under its position (the store's per-document guard). */
export const guarded = (record: StoredEvent<CloudEvent>, ops: readonly ReadOp[]): GuardedUpdate[] =>
  ops.map((op) => ({ ...op, position: record.position }));

/**
 * The batch handler of a projector group: applies the batch to the read model, then records the
 * group's checkpoint for the batch's partition (what consistency tokens wait on).
 *
 * The checkpoint is recorded after the apply and not waited for: the store writes the records of
 * every partition and group of the process together (makeMongoCheckpoints), which it could not if
 * each batch held its partition until its own write. The bus's offsets, not the checkpoints, say
 * where a restarted projector resumes, so a checkpoint lost in a crash costs no event: it only
 * holds a consistency token until the partition's next batch or watermark records a later one.
 */
export const projectBatches = (apply: BatchApply, checkpoints: Checkpoints, group: string) =>
  async (batch: EventBatch): Promise<void> => {
    if (batch.records.length > 0) await apply(batch.records);
    // A failed write is retried by the store with what comes after it.
    checkpoints.record(group, batch.partition, batch.through).catch(() => {});
  };

export interface RunningProjector {
  subscription: Subscription;
  stop(): Promise<void>;
}

/**
 * `handle`, retried in place while it fails transiently (capped backoff, forever): a dependency
 * that is down for a while must delay the projection, not send its events to the dead-letter topic.
 * Other failures go to the bus, which redelivers and finally dead-letters.
 */
export const retryTransient = (
  handle: (batch: EventBatch) => Promise<void>, logger: Logger, maxDelayMs = 5_000,
) => async (batch: EventBatch): Promise<void> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await handle(batch);
    } catch (error) {
      if (!isTransient(error)) throw error;
      const delay = jitteredBackoffMs(attempt + 1, 100, maxDelayMs);
      logger.warn({ err: error, attempt, partition: batch.partition, events: batch.records.length, first: batch.records[0]?.position }, 'dependency unavailable; retrying');
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
};

/**
 * Subscribes `handle` as consumer group `group`: every event, at least once, in batches
 * acknowledged after `handle` resolves. `onDeadLetter` is told about each event given up on (metrics).
 */
export const runProjector = async (
  consumer: EventConsumer, group: string, handle: (batch: EventBatch) => Promise<void>, logger: Logger,
  onDeadLetter?: (record: StoredEvent<CloudEvent>) => void,
): Promise<RunningProjector> => {
  const subscription = await consumer.subscribeBatches(group, retryTransient(handle, logger), {
    onDeadLetter: (record, error) => {
      logger.error({ err: error, group, eventId: record.event.id, type: record.event.type, subject: record.event.subject,
        correlationId: record.event.correlationid }, 'event dead-lettered after repeated failures');
      onDeadLetter?.(record);
    },
  });
  return { subscription, stop: () => subscription.stop() };
};
