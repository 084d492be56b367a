import type { CloudEvent, DocshareEvent, EventType, StoredEvent } from '@docshare/contracts';
import type { EventConsumer, Subscription } from '@docshare/event-bus';
import type { ReadStore, Update } from '@docshare/read-store';
import type { Logger } from '@docshare/http';

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

/** Subscribes `handle` as consumer group `group`: every event, at least once, acknowledged after `handle` resolves. */
export const runProjector = async (
  consumer: EventConsumer, group: string, handle: (record: StoredEvent<CloudEvent>) => Promise<void>, logger: Logger,
): Promise<RunningProjector> => {
  const subscription = await consumer.subscribe(group, handle, {
    onDeadLetter: (record, error) => {
      logger.error({ err: error, group, eventId: record.event.id, type: record.event.type, subject: record.event.subject,
        correlationId: record.event.correlationid }, 'event dead-lettered after repeated failures');
    },
  });
  return { subscription, stop: () => subscription.stop() };
};
