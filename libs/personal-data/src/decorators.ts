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

/** A consumer whose handlers get the events' personal fields opened (projectors, extractor, dispatcher, process managers). */
export const openingConsumer = (inner: EventConsumer, pd: PersonalData): EventConsumer => ({
  subscribe: (group, handler, options) => inner.subscribe(group, async (record) => {
    const [opened] = await pd.open([record]);
    await handler(opened!);
  }, options),
  subscribeBatches: (group, handler, options) => inner.subscribeBatches(group, async (batch) => {
    await handler({ ...batch, records: await pd.open(batch.records) });
  }, options),
});
