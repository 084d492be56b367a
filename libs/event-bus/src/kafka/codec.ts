/** How a stored event becomes a Kafka record and back. Pure: no client, no connection. */
import type { IHeaders, KafkaMessage, Message } from 'kafkajs';
import { partitionKeyOf, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { errorMessage } from './log.ts';

/** Kafka record headers the bus writes next to the structured-mode CloudEvent value. */
export const kafkaHeaders = {
  contentType: 'content-type',
  id: 'ce_id',
  type: 'ce_type',
  specversion: 'ce_specversion',
  position: 'docshare_position',
  /** On a record with no value: every event of this partition up to this position precedes it. */
  watermark: 'docshare_watermark',
  correlationId: 'correlation_id',
  dlqError: 'dlq_error',
  dlqGroup: 'dlq_group',
  dlqAttempts: 'dlq_attempts',
  dlqTopic: 'dlq_topic',
  dlqPartition: 'dlq_partition',
  dlqOffset: 'dlq_offset',
} as const;

export const CLOUDEVENTS_JSON = 'application/cloudevents+json';

const headerText = (headers: IHeaders | undefined, name: string): string | undefined => {
  const value = headers?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
};

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

const isCloudEvent = (value: unknown): value is CloudEvent => {
  if (!isObject(value)) return false;
  const event = value;
  const text = (key: string): boolean => typeof event[key] === 'string' && event[key] !== '';
  return (
    event.specversion === '1.0' &&
    text('id') &&
    text('source') &&
    text('type') &&
    text('subject') &&
    typeof event.streamversion === 'number' &&
    Number.isSafeInteger(event.streamversion) &&
    // 0: an event of no stream (EventStore.appendUnversioned: views, downloads).
    event.streamversion >= 0
  );
};

/** What a record decodes to: an event, a watermark, or poison (with the reason). */
export type DecodedKafkaRecord =
  | { ok: true; record: StoredEvent<CloudEvent> }
  | { ok: true; watermark: number }
  | { ok: false; reason: string };

/** A Kafka record as the handler sees it: an event, a watermark, or poison (anything else). */
export function decodeKafkaRecord(message: Pick<KafkaMessage, 'value' | 'headers' | 'offset'>): DecodedKafkaRecord {
  const mark = headerText(message.headers, kafkaHeaders.watermark);
  if (mark !== undefined && (message.value === null || message.value.length === 0)) {
    const watermark = Number(mark);
    return Number.isSafeInteger(watermark) && watermark >= 0 ? { ok: true, watermark } : { ok: false, reason: `bad watermark ${mark}` };
  }
  if (message.value === null || message.value.length === 0) return { ok: false, reason: 'record has no value' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.value.toString('utf8'));
  } catch (error) {
    return { ok: false, reason: `value is not JSON: ${errorMessage(error)}` };
  }
  if (!isCloudEvent(parsed)) {
    return { ok: false, reason: 'value is not a docshare CloudEvent (needs specversion 1.0, id, source, type, subject, streamversion)' };
  }
  const header = headerText(message.headers, kafkaHeaders.position);
  const fromHeader = header === undefined ? Number.NaN : Number(header);
  const position = Number.isSafeInteger(fromHeader) && fromHeader >= 1 ? fromHeader : Number(message.offset);
  return { ok: true, record: { position, event: parsed } };
}

/** The Kafka record for one stored event: structured-mode CloudEvent, keyed by `partitionKeyOf`. */
export function toKafkaMessage(record: StoredEvent<CloudEvent>): Message {
  const { event } = record;
  if (typeof event.subject !== 'string' || event.subject === '') {
    throw new TypeError(`event ${String(event.id)} has no subject to key it by`);
  }
  const headers: IHeaders = {
    [kafkaHeaders.id]: event.id,
    [kafkaHeaders.type]: event.type,
    [kafkaHeaders.specversion]: event.specversion,
    [kafkaHeaders.contentType]: CLOUDEVENTS_JSON,
    [kafkaHeaders.position]: String(record.position),
  };
  if (typeof event.correlationid === 'string') headers[kafkaHeaders.correlationId] = event.correlationid;
  return { key: partitionKeyOf(event), value: JSON.stringify(event), headers };
}

/**
 * The watermark records that follow a published batch, one per partition: a consumer that reads
 * one knows it has seen every event of its partition up to `position`, even a partition the
 * batch put nothing on. That is how a projector's progress can be one number per partition that
 * every partition advances, which consistency tokens (global positions) are compared with.
 */
export const watermarkMessages = (position: number, partitions: number): Message[] =>
  Array.from({ length: partitions }, (_, partition) => ({
    partition, key: null, value: null, headers: { [kafkaHeaders.watermark]: String(position) },
  }));

/** The dead-letter record's headers: the original ones plus where it came from and why it was given up on. */
export function deadLetterHeaders(
  message: Pick<KafkaMessage, 'headers' | 'offset'>,
  from: { topic: string; partition: number; group: string },
  reason: string,
  attempts: number,
): IHeaders {
  const headers: IHeaders = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) if (value !== undefined) headers[name] = value;
  headers[kafkaHeaders.dlqError] = reason.slice(0, 4000);
  headers[kafkaHeaders.dlqGroup] = from.group;
  headers[kafkaHeaders.dlqAttempts] = String(attempts);
  headers[kafkaHeaders.dlqTopic] = from.topic;
  headers[kafkaHeaders.dlqPartition] = String(from.partition);
  headers[kafkaHeaders.dlqOffset] = message.offset;
  return headers;
}
