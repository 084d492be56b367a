import { randomUUID } from 'node:crypto';
import type { CloudEvent } from './events.ts';

/**
 * A CloudEvent of stream `subject` at `streamversion`, for tests of the stores, buses and relay:
 * a fresh id, correlation and causation id each time; `data` defaults to `{ n: streamversion }`.
 */
export const testEvent = (subject: string, streamversion: number, data: unknown = { n: streamversion }): CloudEvent => ({
  specversion: '1.0',
  id: randomUUID(),
  source: '/docshare/test',
  type: 'docs.test.happened.v1',
  time: new Date().toISOString(),
  subject,
  datacontenttype: 'application/json',
  data,
  correlationid: randomUUID(),
  causationid: randomUUID(),
  streamversion,
});

/** `count` test events of `subject`, with streamversions running on from `fromVersion`. */
export const testEvents = (subject: string, fromVersion: number, count: number): CloudEvent[] =>
  Array.from({ length: count }, (_, i) => testEvent(subject, fromVersion + i));
