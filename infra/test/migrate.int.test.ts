// `npm run migrate -- encrypt-personal-data` against real MongoDB and Kafka (npm run test:real:
// KAFKA_BROKERS, MONGO_URL): a command DB and topic written as v0.2.0 wrote them (plain events,
// plain account claims, the events published by the relay) are migrated; then no personal value
// is left in clear in any MongoDB collection or in the new topic generation, the events open back
// to what they were in the same order, positions and keys, the account is found by the e-mail's
// blind index, a second run changes nothing, and the old topic is deleted once switched.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { MongoClient, type Db } from 'mongodb';
import { openMongoClaimStore } from '@docshare/claim-store/mongo';
import { partitionKeyOf, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { decodeKafkaRecord, ensureTopics, makeKafkaBus, topicPlan } from '@docshare/event-bus/kafka';
import { openMongoEventStore } from '@docshare/event-store/mongo';
import { generateKekText, makePersonalData, parseKek } from '@docshare/personal-data';
import { openMongoKeyStore } from '@docshare/personal-data/mongo';
import { ACCOUNT_NAME_AAD } from '../migrate/sealer.ts';
import { writeV020Data, type V020Data } from '../migrate/v020-fixture.ts';

const need = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this suite under infra/with-stack.ts (npm run test:real)`);
  return value;
};

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '..', 'migrate.ts');
const PASSWORD = 'correct horse battery';
const PARTITIONS = 3;

describe('npm run migrate -- encrypt-personal-data (distributed)', () => {
  const suffix = randomBytes(4).toString('hex');
  const dbName = `docshare_migrate_${suffix}`;
  const topic = `docshare-migrate-${suffix}.events`;
  const kekText = generateKekText();
  const caughtUp = `migrate-test-caught-up-${suffix}`;
  const behind = `migrate-test-behind-${suffix}`;
  let mongo: MongoClient;
  let db: Db;
  let kafka: Kafka;
  let written: V020Data;
  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    ...process.env, MONGO_COMMAND_DB: dbName, KAFKA_EVENTS_TOPIC: topic, KAFKA_DLQ_TOPIC: `${topic}.dlq`, DATA_KEK: kekText, ...extra,
  });

  before(async () => {
    mongo = new MongoClient(need('MONGO_URL'));
    await mongo.connect();
    db = mongo.db(dbName);
    kafka = new Kafka({ clientId: 'migrate-test', brokers: need('KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING });
    // As 0.2.0 left it: the plain events in the store and, published by the relay, in the topic.
    const store = await openMongoEventStore(db);
    const claims = await openMongoClaimStore(db);
    written = await writeV020Data(store, claims, PASSWORD);
    await ensureTopics(need('KAFKA_BROKERS').split(','), topicPlan({ eventsTopic: topic, deadLetterTopic: `${topic}.dlq`, eventsPartitions: PARTITIONS }));
    const bus = makeKafkaBus({ brokers: need('KAFKA_BROKERS').split(','), clientId: 'migrate-test', topic, deadLetterTopic: `${topic}.dlq` });
    await bus.publisher.publish(written.events);
    await bus.close();
    // The relay had published everything; one group had read it all, another (stopped early) had not.
    await db.collection<{ _id: string; position: number }>('outbox_checkpoints').insertOne({ _id: 'outbox', position: written.events.at(-1)!.position });
    const admin = kafka.admin();
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(topic);
    await admin.setOffsets({ groupId: caughtUp, topic, partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })) });
    await admin.setOffsets({ groupId: behind, topic, partitions: ends.map((p) => ({ partition: p.partition, offset: '0' })) });
    await admin.disconnect();
    await store.close();
    await claims.close();
  });
  after(async () => {
    const admin = kafka.admin();
    await admin.connect();
    const mine = (await admin.listTopics()).filter((name) => name.startsWith(`docshare-migrate-${suffix}`));
    if (mine.length > 0) await admin.deleteTopics({ topics: mine });
    await admin.disconnect();
    await db?.dropDatabase();
    await mongo?.close();
  });

  /** Every document of every collection of the command DB, as JSON. */
  const dump = async (): Promise<string> => {
    const out: unknown[] = [];
    for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) out.push(name, await db.collection(name).find({}).sort({ _id: 1 }).toArray());
    return JSON.stringify(out);
  };

  /** Every record of `name` (events and watermarks), read from the beginning by a fresh group. */
  const readTopic = async (name: string, events: number): Promise<Array<{ key: string | null; text: string; record: StoredEvent<CloudEvent> | null }>> => {
    const consumer = kafka.consumer({ groupId: `migrate-test-${randomBytes(4).toString('hex')}` });
    const seen: Array<{ key: string | null; text: string; record: StoredEvent<CloudEvent> | null }> = [];
    let done!: () => void;
    const all = new Promise<void>((resolve) => (done = resolve));
    await consumer.connect();
    await consumer.subscribe({ topics: [name], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const decoded = decodeKafkaRecord(message);
        seen.push({ key: message.key?.toString() ?? null, text: message.value?.toString() ?? '', record: decoded.ok && 'record' in decoded ? decoded.record : null });
        if (seen.filter((s) => s.record !== null).length >= events) done();
      },
    });
    await all;
    await consumer.disconnect();
    return seen;
  };

  it('seals the store and the claims, copies the events into <topic>.g1, and deletes the old topic once switched', { timeout: 120_000 }, async () => {
    assert.ok((await dump()).includes(written.marker), 'the plain store holds the marker');
    const first = await run(process.execPath, [CLI, 'encrypt-personal-data'], { env: env() });
    assert.match(first.stdout, /events: 4 of 5 appends rewritten sealed/);
    assert.match(first.stdout, /claims: 2 account claims re-keyed/);
    const next = `${topic}.g1`;
    assert.match(first.stdout, new RegExp(`set KAFKA_EVENTS_TOPIC=${next.replaceAll('.', '\\.')}`));
    assert.equal((await dump()).includes(written.marker), false, 'no collection holds the marker');

    // The store opens back to the same events, in the same places.
    const store = await openMongoEventStore(db);
    const sealed = await store.readAll(0, 1_000);
    assert.equal((await store.readStream(written.events[0]!.event.subject))[0]!.event.personaldata, 'v1', 'the stream index is sealed too');
    await store.close();
    const keys = await openMongoKeyStore(db);
    const pd = makePersonalData({ store: keys, kek: parseKek(kekText) });
    assert.deepEqual(await pd.open(sealed), written.events);
    const claims = await openMongoClaimStore(db);
    assert.equal(await claims.get('account', written.email), null);
    const account = await claims.get<{ userId: number; name: string; sealed?: true }>('account', await pd.emailIndex(written.email));
    assert.ok(account);
    assert.equal(account.userId, written.userId);
    assert.equal(account.sealed, true, 'marked sealed: login opens the name');
    assert.equal(await pd.openValue(written.userId, account.name, ACCOUNT_NAME_AAD), `Ann ${written.marker}`);
    await claims.close();

    // The new generation: every event once, in order per key, sealed, with the same partition count.
    const admin = kafka.admin();
    await admin.connect();
    try {
      const metadata = await admin.fetchTopicMetadata({ topics: [next] });
      assert.equal(metadata.topics[0]?.partitions.length, PARTITIONS);

      // The group that had read everything goes on at the end of the new generation; the other reads it from the beginning.
      const nextEnds = (await admin.fetchTopicOffsets(next)).map((p) => [p.partition, p.high]).sort();
      const offsetsOn = async (groupId: string) => ((await admin.fetchOffsets({ groupId, topics: [next] }))[0]?.partitions ?? [])
        .map((p) => [p.partition, p.offset]).sort();
      assert.deepEqual(await offsetsOn(caughtUp), nextEnds);
      assert.ok((await offsetsOn(behind)).every(([, offset]) => offset === '-1'), 'the group behind has no offsets on the new generation');
      assert.match(first.stdout, new RegExp(`group ${behind} had not read all of`));
      const records = await readTopic(next, written.events.length);
      assert.equal(records.some((r) => r.text.includes(written.marker)), false, 'no record of the new topic holds the marker');
      const copied = records.flatMap((r) => (r.record ? [r] : [])).sort((a, b) => a.record!.position - b.record!.position);
      assert.deepEqual(copied.map((r) => [r.record!.position, r.key]), sealed.map((r) => [r.position, partitionKeyOf(r.event)]));
      assert.deepEqual(await pd.open(copied.map((r) => r.record!)), written.events);
      await keys.close();

      // Twice changes nothing.
      const before = await dump();
      const second = await run(process.execPath, [CLI, 'encrypt-personal-data'], { env: env() });
      assert.match(second.stdout, /already migrated/);
      assert.equal(await dump(), before);
      assert.equal((await admin.listTopics()).includes(`${topic}.g2`), false);

      // The old topic goes only once the services read the new one.
      await assert.rejects(run(process.execPath, [CLI, 'encrypt-personal-data', '--delete-topic', topic], { env: env() }), /still/);
      await run(process.execPath, [CLI, 'encrypt-personal-data', '--delete-topic', topic], { env: env({ KAFKA_EVENTS_TOPIC: next }) });
      const left = await admin.listTopics();
      assert.equal(left.includes(topic), false);
      assert.equal(left.includes(next), true);
    } finally {
      await admin.disconnect();
    }
  });
});
