import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import type { EventConsumer } from '@docshare/event-bus';
import type { EventStore } from '@docshare/event-store';
import type { PersonalData } from './personal-data.ts';

/**
 * The write side's event store with personal data sealed: appends seal each event's personal
 * fields under their people's keys; reads open them (deciders, `npm run rebuild`). What the inner
 * store holds, and what the relay publishes from it, is sealed.
 */
export const sealingEventStore = (inner: EventStore, pd: PersonalData): EventStore => ({
  async readStream(streamId, afterVersion) {
    return pd.open(await inner.readStream(streamId, afterVersion));
  },
  async append(streamId, expectedVersion, events) {
    return inner.append(streamId, expectedVersion, await pd.seal(events));
  },
  async appendUnversioned(events) {
    return inner.appendUnversioned(await pd.seal(events));
  },
  async readAll(afterPosition, limit) {
    return pd.open(await inner.readAll(afterPosition, limit));
  },
  lastPosition: () => inner.lastPosition(),
  nextId: (kind) => inner.nextId(kind),
  close: () => inner.close(),
});

/**
 * A consumer whose handlers get the events' personal fields opened (projectors, extractor,
 * dispatcher). With `only`, just the events of those types are opened (the others pass sealed): a
 * consumer that reads the personal fields of a few types pays for no more.
 */
export const openingConsumer = (inner: EventConsumer, pd: PersonalData, options: { only?: readonly string[] } = {}): EventConsumer => {
  const only = options.only === undefined ? null : new Set(options.only);
  const open = async (records: readonly StoredEvent<CloudEvent>[]): Promise<StoredEvent<CloudEvent>[]> => {
    if (only === null) return pd.open(records);
    if (!records.some((record) => only.has(record.event.type))) return [...records];
    const opened = await pd.open(records.filter((record) => only.has(record.event.type)));
    let next = 0;
    return records.map((record) => (only.has(record.event.type) ? opened[next++]! : record));
  };
  return {
    subscribe: (group, handler, consumerOptions) => inner.subscribe(group, async (record) => {
      const [opened] = await open([record]);
      await handler(opened!);
    }, consumerOptions),
    subscribeBatches: (group, handler, consumerOptions) => inner.subscribeBatches(group, async (batch) => {
      await handler({ ...batch, records: await open(batch.records) });
    }, consumerOptions),
  };
};
