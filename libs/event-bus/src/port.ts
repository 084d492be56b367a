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
}

/**
 * Puts recorded events on the bus: keyed by `subject`, so one entity's events keep their order.
 * Resolves once the bus has durably accepted every event (Kafka: acks from all in-sync replicas).
 */
export interface EventPublisher {
  publish(records: readonly StoredEvent<CloudEvent>[]): Promise<void>;
  close(): Promise<void>;
}
