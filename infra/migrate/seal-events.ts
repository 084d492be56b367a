import type { CloudEvent } from '@docshare/contracts';
import type { Sealer } from './sealer.ts';

/*
 * The event log's records (libs/event-store/src/file-log.ts): `append` and `unversioned` records
 * carry events, `ids` records (id reservations) and anything else pass unchanged. Events already
 * sealed (`personaldata: 'v1'`) are left as they are; the others are sealed, keeping their id,
 * type, subject and stream version (the sealed fields are bound to the event id), so positions,
 * streams and every reference to an event stay what they were.
 */

type EventsRecord = { type: 'append' | 'unversioned'; events: CloudEvent[] } & Record<string, unknown>;

const isEventsRecord = (value: unknown): value is EventsRecord =>
  typeof value === 'object' && value !== null && ((value as { type?: unknown }).type === 'append' || (value as { type?: unknown }).type === 'unversioned')
  && Array.isArray((value as { events?: unknown }).events);

const plain = (event: CloudEvent): boolean => event.personaldata !== 'v1';

/** What a sealed event must keep of the plain one. */
const IDENTITY = ['id', 'type', 'subject', 'streamversion', 'source', 'time'] as const;

/** The sealed copy of `event`, after checking it is the same event. */
const sameEvent = (event: CloudEvent, sealed: CloudEvent | undefined): CloudEvent => {
  if (sealed === undefined) throw new Error(`sealing dropped event ${event.id}`);
  for (const field of IDENTITY) {
    if (sealed[field] !== event[field]) throw new Error(`sealing changed the ${field} of event ${event.id}`);
  }
  return sealed;
};

/**
 * A `rewrite` for rewriteLog over events.log: the plain events of the records handed in are sealed
 * with one `seal` call (one key fetch for the range); a record that comes out the same is left as it is.
 */
export const sealEventRecords = (pd: Pick<Sealer, 'seal'>) => async (payloads: readonly unknown[]): Promise<unknown[]> => {
  const wanted = payloads.flatMap((payload) => (isEventsRecord(payload) ? payload.events.filter(plain) : []));
  if (wanted.length === 0) return payloads.map(() => undefined);
  const sealed = await pd.seal(wanted);
  if (sealed.length !== wanted.length) throw new Error(`sealing gave ${sealed.length} events for ${wanted.length}`);
  let next = 0;
  return payloads.map((payload) => {
    if (!isEventsRecord(payload) || !payload.events.some(plain)) return undefined;
    const events = payload.events.map((event) => (plain(event) ? sameEvent(event, sealed[next++]) : event));
    const record = { ...payload, events };
    return JSON.stringify(record) === JSON.stringify(payload) ? undefined : record;
  });
};
