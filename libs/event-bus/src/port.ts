import type { CloudEvent, StoredEvent } from '@docshare/contracts';

/**
 * Handles one delivery. The event is acknowledged only when the returned promise resolves;
 * a rejection means "not processed": the same event is delivered again (at-least-once).
 */
export type EventHandler = (record: StoredEvent<CloudEvent>) => Promise<void>;

export interface ConsumerOptions {
  /** Deliveries of one event before it is given up on and dead-lettered (default 5). */
  maxAttempts?: number;
  /** Called once an event has failed maxAttempts times; the consumer then moves past it. */
  onDeadLetter?: (record: StoredEvent<CloudEvent>, error: unknown) => Promise<void> | void;
}

/** Consecutive records of one partition of the bus, delivered together. */
export interface EventBatch {
  /** The partition the records come from (0 on a bus with one). */
  partition: number;
  /** In the partition's order; may be empty when the batch only moves `through`. */
  records: StoredEvent<CloudEvent>[];
  /**
   * Every event of this partition at this global position or earlier has been delivered to the
   * group, in this batch or an earlier one: the group's progress in the partition, which
   * read-your-writes compares consistency tokens with. Never lower than a record's position.
   */
  through: number;
}

/**
 * Handles one batch. Its records are acknowledged only when the returned promise resolves; a
 * rejection means "none processed": the batch is delivered again (so the handler must be
 * idempotent per event), and after `maxAttempts` failures its events are delivered one at a
 * time, each retried and dead-lettered on its own.
 */
export type BatchHandler = (batch: EventBatch) => Promise<void>;

export interface BatchConsumerOptions extends ConsumerOptions {
  /** Most records in one batch (default 500). */
  maxBatch?: number;
}

export interface Subscription {
  /** Stops delivering after the in-flight event finishes; unacknowledged events are redelivered to the next subscriber of the group. */
  stop(): Promise<void>;
}

/**
 * Delivers recorded events to consumer groups: each group sees every event at least once, one
 * entity's events (same `subject`) in order, and resumes after the last acknowledged event.
 */
export interface EventConsumer {
  subscribe(group: string, handler: EventHandler, options?: ConsumerOptions): Promise<Subscription>;
  /** As subscribe, in batches: what projectors use (one bulk write and one commit per batch). */
  subscribeBatches(group: string, handler: BatchHandler, options?: BatchConsumerOptions): Promise<Subscription>;
}

/**
 * Puts recorded events on the bus: keyed by the event's `partitionkey` (else its `subject`), so the
 * events of one key keep their order and one partition carries everything a key's read-model
 * documents are built from.
 * Resolves once the bus has durably accepted every event (Kafka: acks from all in-sync replicas).
 */
export interface EventPublisher {
  publish(records: readonly StoredEvent<CloudEvent>[]): Promise<void>;
  close(): Promise<void>;
}
