import { backoffMs, type CloudEvent, type DocshareEvent, type EventType, type StoredEvent } from '@docshare/contracts';
import type { EventConsumer, Subscription } from '@docshare/event-bus';
import type { ReadStore, Update } from '@docshare/read-store';
import { isTransient, type Logger } from '@docshare/http';

export { isTransient };

/** One idempotent change to one read-model document, guarded by the event it comes from. */
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
  'docs.comment.posted.v1',
]);

/** The event as a known docshare event, or null for types this version does not know (skipped, never fatal). */
export const known = (event: CloudEvent): DocshareEvent | null =>
  KNOWN.has(event.type) && typeof event.subject === 'string' && Number.isSafeInteger(event.streamversion)
    ? (event as DocshareEvent)
    : null;

/** Applies a projection's ops to the store, each guarded by (subject, streamversion). */
export const applyProjection = async (store: ReadStore, projection: Projection, record: StoredEvent<CloudEvent>): Promise<void> => {
  const event = known(record.event);
  if (!event) return;
  const guard = { stream: event.subject, version: event.streamversion };
  for (const op of projection(event)) await store.apply(op.collection, op.id, op.update, guard);
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
  handle: (record: StoredEvent<CloudEvent>) => Promise<void>, logger: Logger, maxDelayMs = 5_000,
) => async (record: StoredEvent<CloudEvent>): Promise<void> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await handle(record);
    } catch (error) {
      if (!isTransient(error)) throw error;
      const delay = backoffMs(attempt + 1, 100, maxDelayMs) * (0.5 + Math.random() / 2);
      logger.warn({ err: error, attempt, eventId: record.event.id, subject: record.event.subject }, 'dependency unavailable; retrying');
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
};

/** Subscribes `handle` as consumer group `group`: every event, at least once, acknowledged after `handle` resolves. */
export const runProjector = async (
  consumer: EventConsumer, group: string, handle: (record: StoredEvent<CloudEvent>) => Promise<void>, logger: Logger,
): Promise<RunningProjector> => {
  const subscription = await consumer.subscribe(group, retryTransient(handle, logger), {
    onDeadLetter: (record, error) => {
      logger.error({ err: error, group, eventId: record.event.id, type: record.event.type, subject: record.event.subject,
        correlationId: record.event.correlationid }, 'event dead-lettered after repeated failures');
    },
  });
  return { subscription, stop: () => subscription.stop() };
};
