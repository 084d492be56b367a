import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { sleep, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { testEvent } from '@docshare/contracts/testing';
import type { BatchConsumerOptions, BatchHandler, ConsumerOptions, EventBatch, EventConsumer, EventHandler, Subscription } from './port.ts';

/** An EventConsumer under test plus a way to record events it should then deliver. */
export interface ConsumerHarness {
  consumer: EventConsumer;
  /** Records `events` in order; each event's `subject` is its stream and its `streamversion` runs on per subject. */
  publish(events: CloudEvent[]): Promise<void>;
  close(): Promise<void>;
}

interface Delivery {
  subject: string;
  version: number;
  id: string;
  outcome: 'ok' | 'failed' | 'dead-lettered';
}

const DELIVERY_TIMEOUT_MS = 10_000;

async function waitFor(predicate: () => boolean, what: string, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}

/** Makes events for subjects unique to one test, numbering each subject's streamversions from 1. */
function eventSource() {
  const prefix = `bus-contract-${randomUUID()}`;
  const versions = new Map<string, number>();
  return {
    prefix,
    subject: (label: string): string => `${prefix}-${label}`,
    /** `count` events per subject, interleaved across subjects. */
    events(subjects: string[], count: number): CloudEvent[] {
      const events: CloudEvent[] = [];
      for (let i = 0; i < count; i++) {
        for (const subject of subjects) {
          const streamversion = (versions.get(subject) ?? 0) + 1;
          versions.set(subject, streamversion);
          events.push(testEvent(subject, streamversion));
        }
      }
      return events;
    },
  };
}

/** A handler recording each delivery of this test's events (others, e.g. on a shared topic, are acknowledged unseen). */
function recorder(prefix: string, fail: (record: StoredEvent<CloudEvent>, attempt: number) => boolean = () => false) {
  const deliveries: Delivery[] = [];
  const attempts = new Map<string, number>();
  const handler: EventHandler = async (record) => {
    const { subject, streamversion: version, id } = record.event;
    if (!subject.startsWith(prefix)) return;
    const attempt = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, attempt);
    if (fail(record, attempt)) {
      deliveries.push({ subject, version, id, outcome: 'failed' });
      throw new Error(`planned failure of ${subject} v${version} attempt ${attempt}`);
    }
    deliveries.push({ subject, version, id, outcome: 'ok' });
  };
  return {
    handler,
    deliveries,
    attempts,
    handled: (events: CloudEvent[]): boolean =>
      events.every((event) => deliveries.some((d) => d.id === event.id && d.outcome === 'ok')),
  };
}

/** Versions of `subject` in the order they were first handled successfully. */
const firstHandledOrder = (deliveries: Delivery[], subject: string): number[] => {
  const seen = new Set<number>();
  for (const d of deliveries) if (d.subject === subject && d.outcome === 'ok') seen.add(d.version);
  return [...seen];
};

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** The at-least-once behaviour every EventConsumer adapter must show; `make` returns a fresh harness. */
export const eventConsumerContract = (name: string, make: () => Promise<ConsumerHarness>): void => {
  const withHarness = async (
    test: (
      harness: ConsumerHarness,
      subscribe: (group: string, handler: EventHandler, options?: ConsumerOptions) => Promise<Subscription>,
      subscribeBatches: (group: string, handler: BatchHandler, options?: BatchConsumerOptions) => Promise<Subscription>,
    ) => Promise<void>,
  ): Promise<void> => {
    const harness = await make();
    const stops: (() => Promise<void>)[] = [];
    const tracked = (subscription: Subscription): Subscription => {
      let stopped: Promise<void> | null = null;
      const stop = (): Promise<void> => (stopped ??= subscription.stop());
      stops.push(stop);
      return { stop };
    };
    const subscribe = async (group: string, handler: EventHandler, options?: ConsumerOptions): Promise<Subscription> =>
      tracked(await harness.consumer.subscribe(group, handler, options));
    const subscribeBatches = async (group: string, handler: BatchHandler, options?: BatchConsumerOptions): Promise<Subscription> =>
      tracked(await harness.consumer.subscribeBatches(group, handler, options));
    try {
      await test(harness, subscribe, subscribeBatches);
    } finally {
      await Promise.all(stops.map((stop) => stop()));
      await harness.close();
    }
  };
  const freshGroup = (label: string): string => `contract-${label}-${randomUUID()}`;

  describe(`EventConsumer contract: ${name}`, () => {
    it('delivers every published event to every group', () =>
      withHarness(async (harness, subscribe) => {
        const source = eventSource();
        const [one, two] = [recorder(source.prefix), recorder(source.prefix)];
        await subscribe(freshGroup('every-1'), one.handler);
        await subscribe(freshGroup('every-2'), two.handler);

        const events = source.events(['a', 'b', 'c'].map(source.subject), 5);
        await harness.publish(events);

        await waitFor(() => one.handled(events) && two.handled(events), 'both groups to handle every event');
      }));

    it('delivers each subject\'s events in order', () =>
      withHarness(async (harness, subscribe) => {
        const source = eventSource();
        const seen = recorder(source.prefix);
        await subscribe(freshGroup('order'), seen.handler);
        const subjects = ['a', 'b'].map(source.subject);

        const events = source.events(subjects, 10);
        await harness.publish(events.slice(0, 7));
        await harness.publish(events.slice(7));

        await waitFor(() => seen.handled(events), 'every event');
        for (const subject of subjects) assert.deepEqual(firstHandledOrder(seen.deliveries, subject), range(1, 10));
      }));

    it('redelivers a rejected event before any later event of its subject', () =>
      withHarness(async (harness, subscribe) => {
        const source = eventSource();
        const [flaky, steady] = [source.subject('flaky'), source.subject('steady')];
        const seen = recorder(source.prefix, (record, attempt) => record.event.subject === flaky && record.event.streamversion === 2 && attempt === 1);
        await subscribe(freshGroup('retry'), seen.handler);

        const events = source.events([flaky, steady], 4);
        await harness.publish(events);

        await waitFor(() => seen.handled(events), 'every event');
        const flakyDeliveries = seen.deliveries.filter((d) => d.subject === flaky);
        const failedAt = flakyDeliveries.findIndex((d) => d.outcome === 'failed');
        assert.ok(failedAt >= 0, 'the planned failure happened');
        assert.deepEqual(flakyDeliveries[failedAt + 1], { ...flakyDeliveries[failedAt], outcome: 'ok' });
        assert.deepEqual(firstHandledOrder(seen.deliveries, flaky), range(1, 4));
      }));

    it('a group that stops and subscribes again gets every event published meanwhile', () =>
      withHarness(async (harness, subscribe) => {
        const source = eventSource();
        const group = freshGroup('resume');
        const subject = source.subject('resume');
        const before = recorder(source.prefix);
        const first = await subscribe(group, before.handler);
        const early = source.events([subject], 5);
        await harness.publish(early);
        await waitFor(() => before.handled(early), 'the events published before the stop');
        await first.stop();

        const late = source.events([subject], 5);
        await harness.publish(late);
        const after = recorder(source.prefix);
        await subscribe(group, after.handler);

        await waitFor(() => after.handled(late), 'the events published while stopped');
        assert.ok(!before.deliveries.some((d) => late.some((event) => event.id === d.id)), 'a stopped subscription got an event');
        const order = firstHandledOrder(after.deliveries, subject).filter((version) => version > 5);
        assert.deepEqual(order, range(6, 10));
      }));

    it('stop waits for the in-flight handler to finish', () =>
      withHarness(async (harness, subscribe) => {
        const source = eventSource();
        let release = (): void => {};
        const gate = new Promise<void>((resolve) => (release = resolve));
        let entered = false;
        let finished = false;
        const subscription = await subscribe(freshGroup('stop'), async (record) => {
          if (!record.event.subject.startsWith(source.prefix)) return;
          entered = true;
          await gate;
          finished = true;
        });
        await harness.publish(source.events([source.subject('stop')], 1));
        await waitFor(() => entered, 'the handler to start');

        let stoppedEarly = false;
        const stopping = subscription.stop().then(() => (stoppedEarly = !finished));
        // A few turns of the event loop give a stop that does not wait the chance to resolve early.
        for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
        release();
        await stopping;
        assert.equal(stoppedEarly, false, 'stop resolved while the handler was still running');
        assert.equal(finished, true);
      }));

    it('dead-letters an event after maxAttempts and keeps delivering later events', () =>
      withHarness(async (harness, subscribe) => {
        const source = eventSource();
        const subject = source.subject('poison');
        const seen = recorder(source.prefix, (record) => record.event.streamversion === 2);
        const deadLetters: { record: StoredEvent<CloudEvent>; error: unknown }[] = [];
        await subscribe(freshGroup('dead'), seen.handler, {
          maxAttempts: 3,
          onDeadLetter: (record, error) => {
            if (!record.event.subject.startsWith(source.prefix)) return;
            deadLetters.push({ record, error });
            seen.deliveries.push({ subject, version: record.event.streamversion, id: record.event.id, outcome: 'dead-lettered' });
          },
        });

        const events = source.events([subject], 4);
        await harness.publish(events);

        const later = [events[2]!, events[3]!];
        await waitFor(() => seen.handled(later), 'the events after the poison one');
        assert.equal(deadLetters.length, 1);
        assert.equal(deadLetters[0]!.record.event.id, events[1]!.id);
        assert.match(String((deadLetters[0]!.error as Error).message), /planned failure/);
        assert.deepEqual(
          seen.deliveries.filter((d) => d.version === 2).map((d) => d.outcome),
          ['failed', 'failed', 'failed', 'dead-lettered'],
        );
        const deadAt = seen.deliveries.findIndex((d) => d.outcome === 'dead-lettered');
        const firstLater = seen.deliveries.findIndex((d) => d.version > 2);
        assert.ok(deadAt < firstLater, 'a later event of the subject was delivered before the dead letter');
      }));

    it('in batches: every event, each subject in order, and a batch\'s `through` covers each of its records', () =>
      withHarness(async (harness, _subscribe, subscribeBatches) => {
        const source = eventSource();
        const subjects = ['a', 'b', 'c', 'd'].map((label) => source.subject(label));
        const batches: EventBatch[] = [];
        await subscribeBatches(freshGroup('batches'), async (batch) => {
          batches.push({ ...batch, records: batch.records.filter((r) => r.event.subject.startsWith(source.prefix)) });
        }, { maxBatch: 7 });
        const events = source.events(subjects, 10);
        await harness.publish(events);
        const delivered = () => batches.flatMap((b) => b.records.map((r) => r.event.id));
        await waitFor(() => events.every((e) => delivered().includes(e.id)), 'every event in batches');
        for (const batch of batches) {
          assert.ok(batch.records.length <= 7, `a batch of ${batch.records.length} records, over maxBatch`);
          for (const record of batch.records) assert.ok(batch.through >= record.position, `through ${batch.through} < position ${record.position}`);
        }
        for (const subject of subjects) {
          const order = batches.flatMap((b) => b.records).filter((r) => r.event.subject === subject).map((r) => r.event.streamversion);
          assert.deepEqual([...new Set(order)], range(1, 10), `${subject} out of order`);
        }
      }));

    it('in batches: a batch that keeps failing is split, and only the event that fails alone is dead-lettered', () =>
      withHarness(async (harness, _subscribe, subscribeBatches) => {
        const source = eventSource();
        const subject = source.subject('split');
        const events = source.events([subject], 6);
        const poison = events[2]!.id;
        const ok = new Set<string>();
        const dead: string[] = [];
        await subscribeBatches(freshGroup('split'), async (batch) => {
          if (batch.records.some((r) => r.event.id === poison)) throw new Error('planned failure');
          for (const r of batch.records) if (r.event.subject === subject) ok.add(r.event.id);
        }, {
          maxAttempts: 2,
          onDeadLetter: (record) => {
            if (record.event.subject === subject) dead.push(record.event.id);
          },
        });
        await harness.publish(events);
        const others = events.filter((e) => e.id !== poison).map((e) => e.id);
        await waitFor(() => others.every((id) => ok.has(id)) && dead.length > 0, 'the other events handled and the poison dead-lettered');
        assert.deepEqual(dead, [poison]);
      }));
  });
};
