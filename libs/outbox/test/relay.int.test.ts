import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { testEvent } from '@docshare/contracts/testing';
import type { EventPublisher } from '@docshare/event-bus';
import { openMongoEventStore } from '@docshare/event-store/mongo';
import type { MongoEventStore } from '@docshare/event-store/mongo';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer } from '../../event-store/test/mongo-server.ts';
import { makeLease } from '../src/lease.ts';
import { startOutboxRelay } from '../src/relay.ts';
import type { OutboxRelay, OutboxRelayOptions, RelayLogger } from '../src/relay.ts';

// pino's Logger is what services pass; the relay's logger type must accept it.
const pinoFits: (logger: Logger) => RelayLogger = (logger) => logger;
void pinoFits;

const server = await connectTestServer();
after(() => server.cleanup());

/** Counts over every publisher sharing it: publishes in flight (and the most at once), events received. */
class Tracker {
  inFlight = 0;
  maxInFlight = 0;
  total = 0;
  private waiters: { count: number; resolve: () => void }[] = [];

  received(count: number): void {
    this.total += count;
    this.waiters = this.waiters.filter((w) => (this.total >= w.count ? (w.resolve(), false) : true));
  }

  /** Resolves once `count` events have been received in total. */
  until(count: number): Promise<void> {
    if (this.total >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }
}

/** Publishes into memory; can be told to fail, or to hold a publish until released. */
class FakePublisher implements EventPublisher {
  readonly received: StoredEvent<CloudEvent>[] = [];
  failures = 0;
  calls = 0;
  private readonly own = new Tracker();
  private readonly tracker: Tracker;
  private gate: Promise<void> | null = null;
  private openGate: (() => void) | null = null;
  private called: (() => void) | null = null;

  constructor(tracker?: Tracker) {
    this.tracker = tracker ?? this.own;
  }

  async publish(records: readonly StoredEvent<CloudEvent>[]): Promise<void> {
    this.calls++;
    this.called?.();
    this.tracker.inFlight++;
    this.tracker.maxInFlight = Math.max(this.tracker.maxInFlight, this.tracker.inFlight);
    try {
      if (this.gate) await this.gate;
      if (this.failures > 0) {
        this.failures--;
        throw new Error('broker unavailable');
      }
      // Give another relay the chance to publish meanwhile, were it (wrongly) publishing too.
      await new Promise((resolve) => setImmediate(resolve));
      this.received.push(...records);
      this.own.received(records.length);
      if (this.tracker !== this.own) this.tracker.received(records.length);
    } finally {
      this.tracker.inFlight--;
    }
  }

  async close(): Promise<void> {}

  /** Resolves once this publisher has received `count` events. */
  until(count: number): Promise<void> {
    return this.own.until(count);
  }

  /** Resolves at the next publish call (at once if one was made). */
  publishCalled(): Promise<void> {
    if (this.calls > 0) return Promise.resolve();
    return new Promise((resolve) => (this.called = resolve));
  }

  /** Holds every publish until `release`. */
  hold(): void {
    this.gate = new Promise((resolve) => (this.openGate = resolve));
  }

  release(): void {
    this.openGate?.();
    this.gate = null;
  }
}

const quietLogger = (): RelayLogger & { warnings: string[] } => {
  const warnings: string[] = [];
  return { warnings, info: () => {}, warn: (_fields, message) => warnings.push(message), error: (_fields, message) => warnings.push(message) };
};

const relays: OutboxRelay[] = [];
after(() => Promise.all(relays.map((relay) => relay.stop())));
const start = (options: OutboxRelayOptions): OutboxRelay => {
  const relay = startOutboxRelay(options);
  relays.push(relay);
  return relay;
};

/** Appends `count` events to each of `streams` streams, streams in parallel, each stream in order. */
async function appendMany(store: MongoEventStore, prefix: string, streams: number, count: number, from = 0): Promise<void> {
  await Promise.all(
    Array.from({ length: streams }, async (_, s) => {
      for (let v = from; v < from + count; v++) await store.append(`${prefix}-${s}`, v, [testEvent(`${prefix}-${s}`, v + 1)]);
    }),
  );
}

/** Asserts that every stream's events arrived as versions 1..n in order, each once. */
function assertPerStreamOrder(records: readonly StoredEvent<CloudEvent>[], expected: Map<string, number>): void {
  const versions = new Map<string, number[]>();
  for (const { event } of records) versions.set(event.subject, [...(versions.get(event.subject) ?? []), event.streamversion]);
  assert.deepEqual([...versions.keys()].sort(), [...expected.keys()].sort());
  for (const [stream, count] of expected) {
    assert.deepEqual(versions.get(stream), Array.from({ length: count }, (_, i) => i + 1), stream);
  }
}

it('reports which MongoDB wire server answered', (t) => {
  t.diagnostic(`MongoDB wire server: ${server.server}`);
  assert.ok(server.server.length > 0);
});

describe('outbox relay', () => {
  it('publishes every appended event once, in per-stream order, while appends go on', { timeout: 60_000 }, async () => {
    const db = server.freshDb('relay_order');
    const store = await openMongoEventStore(db);
    const publisher = new FakePublisher();
    const relay = start({ db, publisher, logger: quietLogger(), owner: 'a', batchSize: 7 });
    store.onAppend(() => relay.notify());

    await Promise.all([appendMany(store, 'order', 12, 10), store.append('multi', 0, [testEvent('multi', 1), testEvent('multi', 2), testEvent('multi', 3)])]);
    await publisher.until(123);

    assertPerStreamOrder(publisher.received, new Map([...Array.from({ length: 12 }, (_, s) => [`order-${s}`, 10] as const), ['multi', 3]]));
    const positions = publisher.received.map((r) => r.position);
    assert.deepEqual(positions, Array.from({ length: 123 }, (_, i) => i + 1));
    assert.deepEqual(publisher.received, await store.readAll(0, 1000));
    await relay.stop();
    assert.equal(await relay.lag(), 0);
    assert.equal(publisher.received.length, 123);
    await store.close();
  });

  it('retries a failing publish, skipping nothing', { timeout: 60_000 }, async () => {
    const db = server.freshDb('relay_retry');
    const store = await openMongoEventStore(db);
    const publisher = new FakePublisher();
    publisher.failures = 3;
    const logger = quietLogger();
    const relay = start({ db, publisher, logger, owner: 'a', retryMinMs: 5, retryMaxMs: 20 });
    await appendMany(store, 'retry', 4, 5);
    relay.notify();
    await publisher.until(20);

    assert.equal(logger.warnings.filter((w) => /could not publish/.test(w)).length, 3);
    assertPerStreamOrder(publisher.received, new Map(Array.from({ length: 4 }, (_, s) => [`retry-${s}`, 5])));
    await relay.stop();
    await store.close();
  });

  it('resumes after its checkpoint: a new relay publishes only what came later', { timeout: 60_000 }, async () => {
    const db = server.freshDb('relay_resume');
    const store = await openMongoEventStore(db);
    const first = new FakePublisher();
    const relay = start({ db, publisher: first, logger: quietLogger(), owner: 'a' });
    await appendMany(store, 'resume', 2, 3);
    relay.notify();
    await first.until(6);
    await relay.stop();

    await appendMany(store, 'resume', 2, 2, 3);
    const second = new FakePublisher();
    second.hold();
    const next = start({ db, publisher: second, logger: quietLogger(), owner: 'b' });
    next.notify();
    await second.publishCalled();
    assert.equal(await next.lag(), 4);
    second.release();
    await second.until(4);
    assert.deepEqual(second.received.map((r) => `${r.event.subject}@${r.event.streamversion}`).sort(), ['resume-0@4', 'resume-0@5', 'resume-1@4', 'resume-1@5']);
    await next.stop();
    assert.equal(second.received.length, 4);
    assert.equal(await next.lag(), 0);
    await store.close();
  });

  it('lets only one of two relays publish at a time; the other takes over when it stops', { timeout: 60_000 }, async () => {
    const db = server.freshDb('relay_two');
    const store = await openMongoEventStore(db);
    const tracker = new Tracker();
    const [pa, pb] = [new FakePublisher(tracker), new FakePublisher(tracker)];
    const a = start({ db, publisher: pa, logger: quietLogger(), owner: 'a', leaseMs: 400, batchSize: 5 });
    const b = start({ db, publisher: pb, logger: quietLogger(), owner: 'b', leaseMs: 400, batchSize: 5 });
    store.onAppend(() => {
      a.notify();
      b.notify();
    });

    await appendMany(store, 'two', 6, 10);
    await tracker.until(60);
    const [leader, standby, leaderPublisher, standbyPublisher] = pa.received.length > 0 ? [a, b, pa, pb] : [b, a, pb, pa];
    assert.equal(standbyPublisher.received.length, 0, 'the standby published while the leader held the lease');
    assert.equal(leaderPublisher.received.length, 60);
    assert.equal(tracker.maxInFlight, 1);

    await leader.stop();
    await appendMany(store, 'two', 6, 2, 10);
    standby.notify();
    await standbyPublisher.until(12);
    assert.ok(standby.isLeader());
    assert.equal(tracker.maxInFlight, 1);
    assertPerStreamOrder([...leaderPublisher.received, ...standbyPublisher.received], new Map(Array.from({ length: 6 }, (_, s) => [`two-${s}`, 12])));
    await store.close();
  });

  it('republishes after a relay is killed between publishing and checkpointing: none lost', { timeout: 60_000 }, async () => {
    const db = server.freshDb('relay_crash');
    const store = await openMongoEventStore(db);
    await appendMany(store, 'crash', 3, 4);

    const script = fileURLToPath(new URL('./fixtures/crash-relay.ts', import.meta.url));
    const child = spawn(process.execPath, [script, db.databaseName, 'doomed', '300'], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, sig) => resolve(sig)));
    assert.equal(signal, 'SIGKILL', `the crash relay did not die as planned: ${stderr}`);
    const publishedBeforeCrash = JSON.parse(stdout.trim()) as string[];
    assert.equal(publishedBeforeCrash.length, 12);

    // A successor (another replica) takes over once the dead relay's lease lapses, and publishes
    // the batch again: at least once, nothing lost.
    const publisher = new FakePublisher();
    const relay = start({ db, publisher, logger: quietLogger(), owner: 'successor', leaseMs: 300 });
    await publisher.until(12);
    assert.deepEqual(publisher.received.map((r) => r.event.id).sort(), [...publishedBeforeCrash].sort());
    await relay.stop();
    assert.equal(await relay.lag(), 0);
    await store.close();
  });

  it('stop finishes the batch in hand, checkpoint included', { timeout: 60_000 }, async () => {
    const db = server.freshDb('relay_stop');
    const store = await openMongoEventStore(db);
    const publisher = new FakePublisher();
    publisher.hold();
    const relay = start({ db, publisher, logger: quietLogger(), owner: 'a' });
    await store.append('stop', 0, [testEvent('stop', 1)]);
    relay.notify();
    await publisher.publishCalled();
    assert.equal(await relay.lag(), 1);

    const stopped = relay.stop();
    publisher.release();
    await stopped;
    assert.equal(publisher.received.length, 1);
    assert.equal(await relay.lag(), 0);
    await store.close();
  });

  it('writes its checkpoint once per checkpointEveryMs while events flow, and polls a quiet log ever less often', { timeout: 60_000 }, async () => {
    const { db, commands } = await server.recordedDb('relay_store_commands');
    const store = await openMongoEventStore(db);
    const publisher = new FakePublisher();
    const relay = start({ db, publisher, logger: quietLogger(), owner: 'a', idleMs: 5, idleMaxMs: 100, checkpointEveryMs: 3_600_000 });
    store.onAppend(() => relay.notify());
    for (let v = 0; v < 5; v++) {
      await store.append('c', v, [testEvent('c', v + 1)]);
      await publisher.until(v + 1);
    }
    const saves = (): number => commands.filter((c) => c.commandName === 'update' && c.command['update'] === 'outbox_checkpoints').length;
    assert.equal(publisher.calls, 5, 'one publish per append');
    assert.equal(saves(), 1, 'the first publish saves; the next four are not due');
    // A quiet log: polls back off from 5 ms to 100 ms (500 ms would take 100 polls at 5 ms).
    const reads = (): number => commands.filter((c) => c.commandName === 'find' && c.command['find'] === 'events').length;
    const before = reads();
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.ok(reads() - before <= 30, `${reads() - before} polls of a quiet log in 500 ms`);
    assert.equal(await relay.lag(), 0, 'the leader counts what it published, saved or not');
    await relay.stop();
    assert.equal(saves(), 2, 'stop saves the last position');
    const durable = await db.collection<{ _id: string; position: number }>('outbox_checkpoints').findOne({ _id: 'outbox' });
    assert.equal(durable?.position, 5);
    await store.close();
  });

  it('wakes on notify rather than waiting out a long idle interval', { timeout: 20_000 }, async () => {
    const db = server.freshDb('relay_notify');
    const store = await openMongoEventStore(db);
    const publisher = new FakePublisher();
    const relay = start({ db, publisher, logger: quietLogger(), owner: 'a', idleMs: 3_600_000 });
    store.onAppend(() => relay.notify());
    await store.append('n', 0, [testEvent('n', 1)]);
    await publisher.until(1);
    await store.append('n', 1, [testEvent('n', 2)]);
    await publisher.until(2);
    await relay.stop();
    await store.close();
  });

  it('measures relay throughput (reported, not asserted)', { timeout: 120_000 }, async (t) => {
    const db = server.freshDb('relay_speed');
    const store = await openMongoEventStore(db);
    await appendMany(store, 'speed', 50, 40);
    const publisher = new FakePublisher();
    const began = performance.now();
    const relay = start({ db, publisher, logger: quietLogger(), owner: 'a' });
    await publisher.until(2000);
    const ms = performance.now() - began;
    await relay.stop();
    t.diagnostic(`${server.server}: relay published 2000 events in ${ms.toFixed(0)} ms (${(2000 / (ms / 1000)).toFixed(0)} events/s, batches of 256)`);
    await store.close();
  });
});

describe('lease', () => {
  it('goes to exactly one of many contenders, then to another once released', async () => {
    const db = server.freshDb('lease');
    const leases = Array.from({ length: 8 }, (_, i) => makeLease({ db, name: 'job', owner: `o${i}`, leaseMs: 60_000 }));
    const held = await Promise.all(leases.map((lease) => lease.hold()));
    assert.equal(held.filter(Boolean).length, 1);
    const holder = held.indexOf(true);
    assert.equal(await leases[holder]!.hold(), true, 'the holder keeps it');
    assert.deepEqual(await Promise.all(leases.map((lease, i) => (i === holder ? Promise.resolve(true) : lease.hold()))), leases.map((_, i) => i === holder));

    await leases[holder]!.release();
    const next = await Promise.all(leases.map((lease, i) => (i === holder ? Promise.resolve(false) : lease.hold())));
    assert.equal(next.filter(Boolean).length, 1);
    assert.equal(await leases[holder]!.hold(), false);
  });

  it('lapses when not renewed, and a restart under the same owner keeps it', async () => {
    const db = server.freshDb('lease_lapse');
    let clock = 1_000_000;
    const now = (): number => clock;
    const a = makeLease({ db, name: 'job', owner: 'a', leaseMs: 1_000, now });
    const b = makeLease({ db, name: 'job', owner: 'b', leaseMs: 1_000, now });
    assert.equal(await a.hold(), true);
    assert.equal(await b.hold(), false);
    clock += 999;
    assert.equal(await b.hold(), false);
    clock += 2;
    assert.equal(await b.hold(), true);
    assert.equal(await a.hold(), false);
    const bAgain = makeLease({ db, name: 'job', owner: 'b', leaseMs: 1_000, now });
    assert.equal(await bAgain.hold(), true);
  });
});
