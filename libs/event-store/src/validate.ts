import type { CloudEvent } from '@docshare/contracts';

/**
 * Refuses an append the EventStore port forbids, whatever the adapter: a missing stream id, a bad
 * expected version, no events, or events whose `subject` is not the stream or whose
 * `streamversion`s do not run on from `expectedVersion + 1`.
 */
export function validateAppend(streamId: string, expectedVersion: number, events: readonly CloudEvent[]): void {
  if (typeof streamId !== 'string' || streamId === '') throw new Error('append needs a non-empty streamId');
  if (!Number.isInteger(expectedVersion) || expectedVersion < 0) {
    throw new Error(`append to ${streamId}: expectedVersion must be a non-negative integer, got ${expectedVersion}`);
  }
  if (!Array.isArray(events) || events.length === 0) throw new Error(`append to ${streamId}: no events given`);
  events.forEach((event, i) => {
    if (event?.subject !== streamId) {
      throw new Error(`append to ${streamId}: event ${i} has subject ${String(event?.subject)}`);
    }
    if (event.streamversion !== expectedVersion + i + 1) {
      throw new Error(`append to ${streamId}: event ${i} has streamversion ${event.streamversion}, expected ${expectedVersion + i + 1}`);
    }
  });
}

/**
 * Refuses an unversioned append the EventStore port forbids, whatever the adapter: no events, or
 * an event without a non-empty `subject` or whose `streamversion` is not 0.
 */
export function validateUnversioned(events: readonly CloudEvent[]): void {
  if (!Array.isArray(events) || events.length === 0) throw new Error('appendUnversioned: no events given');
  events.forEach((event, i) => {
    if (typeof event?.subject !== 'string' || event.subject === '') {
      throw new Error(`appendUnversioned: event ${i} has subject ${String(event?.subject)}, expected a non-empty string`);
    }
    if (event.streamversion !== 0) {
      throw new Error(`appendUnversioned: event ${i} of ${event.subject} has streamversion ${String(event.streamversion)}, expected 0`);
    }
  });
}
