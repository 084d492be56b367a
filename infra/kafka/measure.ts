/**
 * Measures the Kafka bus against KAFKA_BROKERS on a throw-away topic (deleted afterwards):
 *   set -a; . /root/.cache/docshare/data/stack.env; set +a
 *   node infra/kafka/measure.ts            # MEASURE_EVENTS=5000 MEASURE_LATENCY_SAMPLES=300
 * Prints publish throughput (one event per call, and batches of 100), subscribe (group join)
 * time, replay throughput of a new group (one offset commit per event) and end-to-end latency
 * (publish() called → handler entered) with a joined, idle subscriber.
 */
import { randomUUID } from 'node:crypto';
import { ensureTopics, makeKafkaBus, parseBrokers } from '@docshare/event-bus/kafka';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { Kafka, logLevel } from 'kafkajs';

const brokers = parseBrokers(process.env.KAFKA_BROKERS);
if (brokers.length === 0) {
  console.error('KAFKA_BROKERS is not set');
  process.exit(2);
}
const total = Number(process.env.MEASURE_EVENTS ?? 5000);
const samples = Number(process.env.MEASURE_LATENCY_SAMPLES ?? 300);
const partitions = Number(process.env.MEASURE_PARTITIONS ?? 6);

const topic = `docshare-measure-${randomUUID()}`;
const deadLetterTopic = `${topic}.dlq`;
await ensureTopics(brokers, [
  { topic, numPartitions: partitions },
  { topic: deadLetterTopic, numPartitions: 1 },
]);
const bus = makeKafkaBus({ brokers, clientId: 'docshare-measure', topic, deadLetterTopic, consumer: { maxWaitTimeInMs: 500 } });
const groups: string[] = [];

let position = 0;
const versions = new Map<string, number>();
const record = (subject: string): StoredEvent<CloudEvent> => {
  const streamversion = (versions.get(subject) ?? 0) + 1;
  versions.set(subject, streamversion);
  return {
    position: ++position,
    event: {
      specversion: '1.0',
      id: randomUUID(),
      source: '/docshare/measure',
      type: 'docs.file.viewed.v1',
      time: new Date().toISOString(),
      subject,
      datacontenttype: 'application/json',
      data: { fileId: 1, ownerId: 2, viewedAt: new Date().toISOString() },
      correlationid: randomUUID(),
      causationid: randomUUID(),
      streamversion,
    },
  };
};
const subjects = Array.from({ length: 200 }, (_, i) => `file-${i}`);
const nextRecord = (): StoredEvent<CloudEvent> => record(subjects[position % subjects.length]!);

const rate = (count: number, ms: number): string => `${Math.round((count / ms) * 1000)} events/s (${count} in ${Math.round(ms)} ms)`;
const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

try {
  await bus.publisher.publish([nextRecord()]); // connects the producer
  const single = Math.min(total, 2000);
  let started = performance.now();
  for (let i = 0; i < single; i++) await bus.publisher.publish([nextRecord()]);
  console.log(`publish, 1 event per call, sequential: ${rate(single, performance.now() - started)}`);

  started = performance.now();
  for (let i = 0; i < total; i += 100) await bus.publisher.publish(Array.from({ length: Math.min(100, total - i) }, nextRecord));
  console.log(`publish, 100 events per call:           ${rate(total, performance.now() - started)}`);
  const published = position;

  // Replay: a new group reads everything from the beginning; one event (and commit) at a time, then in batches.
  const replay = async (batches: boolean): Promise<void> => {
    const replayBus = makeKafkaBus({ brokers, clientId: 'docshare-measure', topic, deadLetterTopic, consumer: { maxWaitTimeInMs: 500 } });
    let seen = 0;
    let done = (): void => {};
    const replayed = new Promise<void>((resolve) => (done = resolve));
    const group = `measure-replay-${randomUUID()}`;
    groups.push(group);
    const began = performance.now();
    const subscription = batches
      ? await replayBus.consumer.subscribeBatches(group, async (batch) => {
        seen += batch.records.length;
        if (seen >= published) done();
      })
      : await replayBus.consumer.subscribe(group, async () => {
        if (++seen === published) done();
      });
    const joined = performance.now() - began;
    await replayed;
    const label = batches ? 'batches, commit per batch' : 'commit per event';
    console.log(`replay by a new group, ${label}: ${rate(published, performance.now() - began - joined)} (subscribe took ${Math.round(joined)} ms)`);
    await subscription.stop();
    await replayBus.close();
  };
  await replay(false);
  await replay(true);

  // Latency: one event at a time into an idle, joined subscriber.
  const latencyGroup = `measure-latency-${randomUUID()}`;
  groups.push(latencyGroup);
  const arrivals = new Map<string, () => void>();
  let caughtUp = (): void => {};
  const history = new Promise<void>((resolve) => (caughtUp = resolve));
  let replayedByLive = 0;
  const live = await bus.consumer.subscribe(latencyGroup, async (stored) => {
    if (++replayedByLive === published) caughtUp();
    arrivals.get(stored.event.id)?.();
  });
  await history; // a new group first replays the history
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const next = nextRecord();
    const arrived = new Promise<void>((resolve) => arrivals.set(next.event.id, resolve));
    const sent = performance.now();
    await bus.publisher.publish([next]);
    const acked = performance.now();
    await arrived;
    latencies.push(performance.now() - sent);
    if (i === 0) console.log(`first publish ack ${Math.round(acked - sent)} ms`);
    arrivals.delete(next.event.id);
  }
  latencies.sort((a, b) => a - b);
  const fmt = (ms: number): string => `${ms.toFixed(1)} ms`;
  console.log(
    `end-to-end latency (${samples} samples): p50 ${fmt(percentile(latencies, 50))}, p95 ${fmt(percentile(latencies, 95))}, ` +
      `p99 ${fmt(percentile(latencies, 99))}, max ${fmt(latencies[latencies.length - 1]!)}`,
  );
  await live.stop();
} finally {
  await bus.close();
  const admin = new Kafka({ clientId: 'docshare-measure', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.deleteGroups(groups).catch(() => {});
  await admin.deleteTopics({ topics: [topic, deadLetterTopic] }).catch(() => {});
  await admin.disconnect();
}
