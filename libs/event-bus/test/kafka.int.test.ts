/**
 * The Kafka bus against a real broker: KAFKA_BROKERS (e.g. from /root/.cache/docshare/data/stack.env).
 * Every harness gets fresh topics (3 partitions + a DLQ) and deletes them, and its groups, afterwards.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { Kafka, logLevel } from 'kafkajs';
import type { Admin, IHeaders, KafkaMessage } from 'kafkajs';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { testEvent, testEvents } from '@docshare/contracts/testing';
import { eventConsumerContract } from '../src/contract.ts';
import type { ConsumerHarness } from '../src/contract.ts';
import { decodeKafkaRecord, ensureTopics, makeKafkaBus, parseBrokers, toKafkaMessage } from '../src/kafka.ts';
import type { KafkaBus, KafkaBusLogger, KafkaConsumerTuning } from '../src/kafka.ts';
import type { BatchConsumerOptions, BatchHandler, ConsumerOptions, EventHandler, Subscription } from '../src/port.ts';

const brokers = parseBrokers(process.env.KAFKA_BROKERS);
if (brokers.length === 0) {
  throw new Error(
    'KAFKA_BROKERS is not set: this integration test needs a running Kafka broker. ' +
      'Run: set -a; . /root/.cache/docshare/data/stack.env; set +a; node --test libs/event-bus/test/kafka.int.test.ts',
  );
}

// Group joins dominate the run time: short timeouts and fetch waits keep joins, rebalances and stops quick.
const tuning: KafkaConsumerTuning = { sessionTimeout: 6000, rebalanceTimeout: 3000, heartbeatInterval: 500, maxWaitTimeInMs: 100 };

/** Collects what the bus logs; DEBUG_KAFKA_TEST=1 also prints it. */
const logs: { level: 'info' | 'warn' | 'error'; msg: string; obj: object }[] = [];
const record = (level: 'info' | 'warn' | 'error') => (obj: object, msg: string): void => {
  logs.push({ level, msg, obj });
  if (process.env.DEBUG_KAFKA_TEST) console.error(level, msg, obj);
};
const logger: KafkaBusLogger = { info: record('info'), warn: record('warn'), error: record('error') };

const client = new Kafka({ clientId: 'docshare-kafka-test', brokers, logLevel: logLevel.NOTHING });
let adminConnection: Promise<Admin> | null = null;
const admin = (): Promise<Admin> =>
  (adminConnection ??= (async () => {
    const connected = client.admin();
    await connected.connect();
    return connected;
  })());
after(async () => {
  if (adminConnection) await (await adminConnection).disconnect();
});

async function waitFor(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface KafkaHarness extends ConsumerHarness {
  bus: KafkaBus;
  topic: string;
  deadLetterTopic: string;
  /** Publishes with store positions 1, 2, 3… in call order; returns the records. */
  publishRecords(events: CloudEvent[]): Promise<StoredEvent<CloudEvent>[]>;
  /** Subscribes and remembers the subscription, so close() stops it. */
  subscribe(group: string, handler: EventHandler, options?: ConsumerOptions): Promise<Subscription>;
}

/** Fresh topics and a bus over them; close() stops everything and deletes the topics and groups. */
async function makeHarness(): Promise<KafkaHarness> {
  const topic = `docshare-test-${randomUUID()}`;
  const deadLetterTopic = `${topic}.dlq`;
  await ensureTopics(brokers, [
    { topic, numPartitions: 3 },
    { topic: deadLetterTopic, numPartitions: 1 },
  ]);
  const bus = makeKafkaBus({ brokers, clientId: 'docshare-kafka-test', topic, deadLetterTopic, logger, consumer: tuning });
  const groups = new Set<string>();
  const subscriptions: Subscription[] = [];
  let position = 0;
  const publishRecords = async (events: CloudEvent[]): Promise<StoredEvent<CloudEvent>[]> => {
    const records = events.map((event) => ({ position: ++position, event }));
    await bus.publisher.publish(records);
    return records;
  };
  const subscribe = async (group: string, handler: EventHandler, options?: ConsumerOptions): Promise<Subscription> => {
    groups.add(group);
    const subscription = await bus.consumer.subscribe(group, handler, options);
    subscriptions.push(subscription);
    return subscription;
  };
  const subscribeBatches = async (group: string, handler: BatchHandler, options?: BatchConsumerOptions): Promise<Subscription> => {
    groups.add(group);
    const subscription = await bus.consumer.subscribeBatches(group, handler, options);
    subscriptions.push(subscription);
    return subscription;
  };
  return {
    bus,
    topic,
    deadLetterTopic,
    consumer: { subscribe, subscribeBatches },
    subscribe,
    publishRecords,
    publish: async (events) => void (await publishRecords(events)),
    async close() {
      await Promise.all(subscriptions.map((subscription) => subscription.stop()));
      await bus.close();
      const connected = await admin();
      await connected.deleteGroups([...groups]).catch(() => {});
      await connected.deleteTopics({ topics: [topic, deadLetterTopic] }).catch(() => {});
    },
  };
}

async function withHarness(test: (harness: KafkaHarness) => Promise<void>): Promise<void> {
  const harness = await makeHarness();
  try {
    await test(harness);
  } finally {
    await harness.close();
  }
}

/** Reads `topic` from the beginning with a plain kafkajs consumer (no project code) until `enough`. */
async function readRaw(topic: string, enough: (messages: KafkaMessage[]) => boolean): Promise<(KafkaMessage & { partition: number })[]> {
  const groupId = `raw-reader-${randomUUID()}`;
  const consumer = client.consumer({ groupId, ...tuning });
  const messages: (KafkaMessage & { partition: number })[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ partition, message }) => void messages.push({ ...message, partition }) });
    await waitFor(() => enough(messages), `records on ${topic}`);
  } finally {
    await consumer.disconnect();
    await (await admin()).deleteGroups([groupId]).catch(() => {});
  }
  return messages;
}

const text = (headers: IHeaders | undefined, name: string): string | undefined => headers?.[name]?.toString();

eventConsumerContract('kafka', makeHarness);

/** A failing assertion must fail the test, not leave it waiting on a broker forever. */
const limit = { timeout: 30_000 };

describe('Kafka bus', () => {
  it('writes each event as plain CloudEvent JSON keyed by its partition key, with the ce_ headers, then a watermark on every partition', limit, () =>
    withHarness(async (harness) => {
      const [a, b] = [`file-${randomUUID()}`, `user-${randomUUID()}`];
      const records = await harness.publishRecords([...testEvents(a, 1, 3), ...testEvents(b, 1, 3)]);

      const all = await readRaw(harness.topic, (messages) => messages.length >= records.length + 3);
      const raw = all.filter((m) => m.value !== null && m.value.length > 0);
      assert.equal(raw.length, records.length);
      const marks = all.filter((m) => m.value === null || m.value.length === 0);
      assert.deepEqual(marks.map((m) => m.partition).sort(), [0, 1, 2]);
      for (const mark of marks) assert.equal(text(mark.headers, 'docshare_watermark'), String(records.at(-1)!.position));
      // A file's events are keyed by their owner, so one partition holds everything a user's documents are built from.
      assert.equal(toKafkaMessage({ position: 1, event: { ...testEvent('file-1', 1), type: 'docs.file.viewed.v1', data: { fileId: 1, ownerId: 7 } } }).key, 'user-7');
      for (const message of raw) {
        const value: unknown = JSON.parse(message.value!.toString('utf8'));
        const record = records.find((r) => r.event.id === (value as CloudEvent).id);
        assert.ok(record, 'a record nobody published');
        assert.deepEqual(value, record.event);
        assert.equal(message.key?.toString(), record.event.subject);
        assert.equal(text(message.headers, 'content-type'), 'application/cloudevents+json');
        assert.equal(text(message.headers, 'ce_id'), record.event.id);
        assert.equal(text(message.headers, 'ce_type'), record.event.type);
        assert.equal(text(message.headers, 'ce_specversion'), '1.0');
        assert.equal(text(message.headers, 'docshare_position'), String(record.position));
        assert.equal(text(message.headers, 'correlation_id'), record.event.correlationid);
      }
      for (const subject of [a, b]) {
        const ofSubject = raw.filter((m) => m.key?.toString() === subject);
        assert.equal(new Set(ofSubject.map((m) => m.partition)).size, 1, 'one subject, one partition');
        const byOffset = ofSubject.sort((x, y) => Number(BigInt(x.offset) - BigInt(y.offset)));
        assert.deepEqual(byOffset.map((m) => (JSON.parse(m.value!.toString()) as CloudEvent).streamversion), [1, 2, 3]);
      }
    }));

  it('dead-letters poison records and exhausted events with their origin, and later events still flow', limit, () =>
    withHarness(async (harness) => {
      const subject = `file-${randomUUID()}`;
      const producer = client.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      try {
        // Same key as the events below, so the same partition, ahead of them.
        await producer.send({
          topic: harness.topic,
          messages: [
            { key: subject, value: '{not json' },
            { key: subject, value: JSON.stringify({ hello: 'world' }) },
          ],
        });
      } finally {
        await producer.disconnect();
      }
      const events = testEvents(subject, 1, 3);
      await harness.publish(events);

      const handled: number[] = [];
      const deadLettered: { record: StoredEvent<CloudEvent>; error: unknown }[] = [];
      await harness.subscribe(
        `dlq-${randomUUID()}`,
        async (record) => {
          if (record.event.streamversion === 2) throw new Error('planned failure of v2');
          handled.push(record.event.streamversion);
        },
        { maxAttempts: 2, onDeadLetter: (record, error) => void deadLettered.push({ record, error }) },
      );
      await waitFor(() => handled.includes(3), 'the event after the dead-lettered one');
      assert.deepEqual(handled, [1, 3]);
      assert.equal(deadLettered.length, 1, 'onDeadLetter is called for exhausted events, not for poison records');
      assert.equal(deadLettered[0]!.record.event.id, events[1]!.id);

      const dead = await readRaw(harness.deadLetterTopic, (messages) => messages.length >= 3);
      assert.equal(dead.length, 3);
      const [notJson, notEvent, exhausted] = dead;
      assert.equal(notJson!.value?.toString(), '{not json');
      assert.match(text(notJson!.headers, 'dlq_error') ?? '', /not JSON/);
      assert.equal(text(notJson!.headers, 'dlq_attempts'), '0');
      assert.match(text(notEvent!.headers, 'dlq_error') ?? '', /not a docshare CloudEvent/);
      assert.deepEqual(JSON.parse(exhausted!.value!.toString()), events[1]);
      assert.equal(exhausted!.key?.toString(), subject);
      assert.equal(text(exhausted!.headers, 'ce_id'), events[1]!.id);
      assert.equal(text(exhausted!.headers, 'dlq_error'), 'planned failure of v2');
      assert.equal(text(exhausted!.headers, 'dlq_attempts'), '2');
      assert.match(text(exhausted!.headers, 'dlq_group') ?? '', /^dlq-/);
      assert.equal(text(exhausted!.headers, 'dlq_topic'), harness.topic);
      assert.equal(text(exhausted!.headers, 'dlq_offset'), '3', 'after the two poison records and v1');
      assert.ok(logs.some((entry) => entry.msg.startsWith('poison record')));
    }));

  it('commits an offset only after its handler resolved: a hung handler\'s event goes to the next member', limit, () =>
    withHarness(async (harness) => {
      const group = `commit-${randomUUID()}`;
      const subject = `file-${randomUUID()}`;
      let release = (): void => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      const first: number[] = [];
      let firstFinished = false;
      const firstSubscription = await harness.subscribe(group, async (record) => {
        first.push(record.event.streamversion);
        if (record.event.streamversion === 3) {
          await gate;
          firstFinished = true;
        }
      });
      try {
        await harness.publish(testEvents(subject, 1, 5));
        await waitFor(() => first.includes(3), 'the handler of v3 to start');

        // One subject, so one partition: v1 and v2 (offsets 0, 1) are committed, v3 (offset 2) is not.
        // (The other partitions hold only the publish's watermark, at offset 0, committed.)
        const committed = async (): Promise<string> => {
          const [offsets] = await (await admin()).fetchOffsets({ groupId: group, topics: [harness.topic] });
          return String(Math.max(...(offsets?.partitions ?? []).map((p) => Number(p.offset))));
        };
        assert.equal(await committed(), '2');

        const stopping = firstSubscription.stop(); // waits for the hung handler…
        const second: number[] = [];
        await harness.subscribe(group, async (record) => void second.push(record.event.streamversion));
        // …which keeps the first member from rejoining, so the coordinator evicts it after its rebalance timeout.
        await waitFor(() => second.includes(5), 'the second member to handle the rest');
        assert.deepEqual(second, [3, 4, 5]);
        assert.deepEqual(first, [1, 2, 3]);

        release();
        await stopping;
        assert.equal(firstFinished, true);
        // The evicted member's late commit of v3 is fenced off; the group stays at the second member's position.
        // v5 at offset 4, then the watermark at 5.
        await waitFor(async () => (await committed()) === '6', 'the second member to commit v5 and the watermark');
      } finally {
        release(); // else a failed assertion would leave stop(), and the harness, waiting on the hung handler
      }
    }));

  it('in batches, commits each handled batch, watermarks included: every partition\'s `through` reaches the last position', limit, () =>
    withHarness(async (harness) => {
      const group = `batches-${randomUUID()}`;
      const subject = `file-${randomUUID()}`;
      const records = await harness.publishRecords(testEvents(subject, 1, 4));
      const through = new Map<number, number>();
      const subscription = await harness.consumer.subscribeBatches(group, async (batch) => {
        through.set(batch.partition, Math.max(through.get(batch.partition) ?? 0, batch.through));
      });
      const last = records.at(-1)!.position;
      // One publish: its events land on one partition, and a watermark on each of the three.
      await waitFor(() => [0, 1, 2].every((p) => (through.get(p) ?? 0) >= last), 'every partition through the last position');
      await subscription.stop();
      const [offsets] = await (await admin()).fetchOffsets({ groupId: group, topics: [harness.topic] });
      assert.deepEqual((offsets?.partitions ?? []).map((p) => p.offset).sort(), ['1', '1', '5']);
      await (await admin()).deleteGroups([group]).catch(() => {});
    }));

  it('tells a group\'s lag per partition from its committed offsets: every record before it consumes, 0 once it has committed', limit, () =>
    withHarness(async (harness) => {
      const group = `lag-${randomUUID()}`;
      await harness.publishRecords(testEvents(`file-${randomUUID()}`, 1, 4));
      // Four events on one partition plus a watermark on each of the three: seven records, none committed.
      const before = await harness.bus.lag(group);
      assert.deepEqual(before.map((p) => p.partition), [0, 1, 2]);
      assert.deepEqual(before.map((p) => p.lag).sort(), [1, 1, 5]);
      const subscription = await harness.consumer.subscribeBatches(group, async () => {});
      await waitFor(async () => (await harness.bus.lag(group)).every((p) => p.lag === 0), 'the group caught up');
      await subscription.stop();
      await harness.publishRecords(testEvents(`file-${randomUUID()}`, 1, 2));
      const after = await harness.bus.lag(group);
      assert.equal(after.reduce((sum, p) => sum + p.lag, 0), 2 + 3, 'a stopped group falls behind by what was published since');
      await (await admin()).deleteGroups([group]).catch(() => {});
    }));

  it('splits partitions between two subscribers of one group, which together see every event', limit, () =>
    withHarness(async (harness) => {
      const group = `split-${randomUUID()}`;
      const seen = [new Set<string>(), new Set<string>()] as const;
      await harness.subscribe(group, async (record) => void seen[0].add(record.event.id));
      await harness.subscribe(group, async (record) => void seen[1].add(record.event.id));
      // 30 subjects miss none of the 3 partitions (each misses one with probability (2/3)^30).
      const events = Array.from({ length: 30 }, () => testEvents(`file-${randomUUID()}`, 1, 2)).flat();
      await harness.publish(events);

      await waitFor(() => events.every((event) => seen[0].has(event.id) || seen[1].has(event.id)), 'every event');
      assert.ok(seen[0].size > 0 && seen[1].size > 0, `both members got partitions (${seen[0].size} / ${seen[1].size})`);
      const union = new Set([...seen[0], ...seen[1]]);
      for (const event of events) assert.ok(union.has(event.id));
    }));

  it('gives handlers the docshare_position header as position, else the Kafka offset', limit, () => {
    const event = testEvent('file-1', 1);
    const message = toKafkaMessage({ position: 42, event });
    const value = Buffer.from(message.value as string);
    assert.deepEqual(decodeKafkaRecord({ value, headers: message.headers!, offset: '7' }), { ok: true, record: { position: 42, event } });
    assert.deepEqual(decodeKafkaRecord({ value, headers: {}, offset: '7' }), { ok: true, record: { position: 7, event } });
    assert.equal(decodeKafkaRecord({ value: null, headers: {}, offset: '7' }).ok, false);
    assert.equal(decodeKafkaRecord({ value: Buffer.from(JSON.stringify({ ...event, streamversion: -1 })), headers: {}, offset: '7' }).ok, false);
  });

  it('refuses to publish an event without a subject, and publishes nothing for an empty list', limit, () =>
    withHarness(async (harness) => {
      await harness.bus.publisher.publish([]);
      await assert.rejects(harness.publish([{ ...testEvent('x', 1), subject: '' }]), /no subject/);
    }));

  it('ensureTopics leaves existing topics alone and reports a partition count that differs', limit, () =>
    withHarness(async (harness) => {
      const result = await ensureTopics(brokers, [{ topic: harness.topic, numPartitions: 6 }]);
      assert.deepEqual(result, { created: [], existing: [harness.topic], mismatched: [{ topic: harness.topic, planned: 6, actual: 3 }] });
    }));
});
