import { retrying, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import type { EventBatch, EventConsumer, Subscription } from '@docshare/event-bus';
import { isTransient, type Logger } from '@docshare/http';

export { isTransient };

/** A consumer group's subscription, as started by `consume`. */
export interface RunningConsumer {
  subscription: Subscription;
  stop(): Promise<void>;
}

/**
 * `handle`, retried in place while it fails transiently (capped backoff, forever): a dependency
 * that is down for a while must delay the consumer, not send its events to the dead-letter topic.
 * Other failures go to the bus, which redelivers and finally dead-letters.
 */
export const retryTransient = (
  handle: (batch: EventBatch) => Promise<void>, logger: Logger, maxDelayMs = 5_000,
) => (batch: EventBatch): Promise<void> => retrying(() => handle(batch), {
  baseMs: 200, capMs: maxDelayMs,
  retryIf: isTransient,
  onRetry: (error, attempt) => logger.warn({
    err: error, attempt, partition: batch.partition, events: batch.records.length, first: batch.records[0]?.position,
  }, 'dependency unavailable; retrying'),
});

/**
 * Subscribes `handle` as consumer group `group`: every event, at least once, in batches
 * acknowledged after `handle` resolves (transient failures retried in place). `onDeadLetter` is
 * told about each event given up on (metrics). What every consumer of the event topic runs on:
 * the projectors (through @docshare/projection's `runProjector`) and the text extractor.
 */
export const consume = async (
  consumer: EventConsumer, group: string, handle: (batch: EventBatch) => Promise<void>, logger: Logger,
  onDeadLetter?: (record: StoredEvent<CloudEvent>) => void,
): Promise<RunningConsumer> => {
  const subscription = await consumer.subscribeBatches(group, retryTransient(handle, logger), {
    onDeadLetter: (record, error) => {
      logger.error({ err: error, group, eventId: record.event.id, type: record.event.type, subject: record.event.subject,
        correlationId: record.event.correlationid }, 'event dead-lettered after repeated failures');
      onDeadLetter?.(record);
    },
  });
  return { subscription, stop: () => subscription.stop() };
};
