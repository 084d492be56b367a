import type { CloudEvent } from '@docshare/contracts';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/**
 * Whether `value` (JSON the store itself wrote) is an event as far as the store relies on it: an
 * object with its id, type, subject and stream version. The rest is the writer's, checked when it
 * was appended; logs written by older versions must still open, so nothing newer is required.
 */
export function isCloudEvent(value: unknown): value is CloudEvent {
  return isObject(value) && typeof value['id'] === 'string' && typeof value['type'] === 'string'
    && typeof value['subject'] === 'string' && Number.isInteger(value['streamversion']);
}

/** The event in `json` (one the store wrote); throws when it is not one. */
export function parseEvent(json: string): CloudEvent {
  const value: unknown = JSON.parse(json);
  if (!isCloudEvent(value)) throw new Error('stored event is not a CloudEvent');
  return value;
}

/** The events in `json` (an array the store wrote); throws when it is not one. */
export function parseEvents(json: string): CloudEvent[] {
  const value: unknown = JSON.parse(json);
  if (!Array.isArray(value) || !value.every(isCloudEvent)) throw new Error('stored events are not an array of CloudEvents');
  return value;
}
