import { Kafka, logLevel, type Admin } from 'kafkajs';
import { MongoServerError, type AnyBulkWriteOperation, type Collection, type Db } from 'mongodb';
import type { CloudEvent } from '@docshare/contracts';
import { makeKafkaBus, topicPlan } from '@docshare/event-bus/kafka';
import { openMongoEventStore } from '@docshare/event-store/mongo';
import { makePersonalData, parseKek } from '@docshare/personal-data';
import { openMongoKeyStore } from '@docshare/personal-data/mongo';
import { connectMongo } from '@docshare/runtime/distributed';
import { kafka, loadConfigOrExit, mongo, personalData } from '@docshare/runtime/config';
import { ACCOUNT_SCOPE, sealedAccount } from './rekey-claims.ts';
import { sealEventRecords } from './seal-events.ts';
import type { Sealer } from './sealer.ts';

/*
 * `npm run migrate -- encrypt-personal-data` against the distributed stores (design §9), with
 * every service stopped:
 *
 *   1. MongoDB `events` (libs/event-store/src/mongo-event-store.ts: one document per append, the
 *      events as documents or as JSON text): each append with plain events gets them sealed, in
 *      the form it had, with one bulk write per page of appends; and the `stream_index` copies of
 *      those events (one document per event of a stream) the same;
 *   2. `claims`: each account claim keyed by a plain e-mail gets a twin under the e-mail's blind
 *      index, its name sealed, then the plain one is deleted (a crash in between leaves both: the
 *      next run deletes the plain one);
 *   3. Kafka: the topic cannot be rewritten (a key's past records cannot be erased), so every
 *      event is copied, in order, sealed, into a new topic generation `<base>.g<N>` (N the next
 *      free; same partition count, same keys: partitionKeyOf, same positions) that every service
 *      then reads (KAFKA_EVENTS_TOPIC); the old topic is deleted with `--delete-topic` once they do.
 *
 * Progress is kept in the command DB's `migrations` collection (one document): a rerun after a
 * crash resumes the copy into the same generation (a record copied twice is applied once: read
 * models guard by position); a run after a finished one changes nothing.
 *
 * Consumer groups (handOverGroups): a group that had read the whole old topic (no lag), when the
 * old topic held every event (the outbox relay's checkpoint at the store's end), gets its offsets
 * on the new generation set to its end, so it goes on from there instead of reading every event
 * again (an export requested long ago would be built again). Any other group has no offsets there
 * and starts the new generation from its beginning (fromBeginning): it misses nothing.
 */

/** Appends per page: one seal call and one bulk write each. */
const PAGE = 500;
/** Events per publish (one Kafka send, then a watermark per partition). */
const PUBLISH = 1_000;
const MIGRATIONS = 'migrations';
/** Where the outbox relay keeps the position of the last event the topic accepted (libs/outbox/src/relay.ts), under its name. */
const RELAY_CHECKPOINTS = 'outbox_checkpoints';
const RELAY_NAME = 'outbox';
const MIGRATION_ID = 'encrypt-personal-data';

interface AppendDoc { _id: string; position: number; stream: string; firstVersion: number; events: CloudEvent[] | string }
interface StreamIndexDoc { _id: string; event: CloudEvent | string }
interface ClaimDoc { _id: string; scope: string; key: string; value: string; claimedAt: Date }
interface MigrationDoc { _id: string; topic: string; from: string; partitions: number; copiedUpTo: number; upTo: number; done: boolean }

/** Seals the plain events of every append document; returns how many appends it rewrote. */
export async function sealMongoEvents(db: Db, pd: Sealer): Promise<{ appends: number; rewritten: number }> {
  const events = db.collection<AppendDoc>('events');
  const index = db.collection<StreamIndexDoc>('stream_index');
  const rewrite = sealEventRecords(pd);
  let after = 0;
  let appends = 0;
  let rewritten = 0;
  for (;;) {
    const page = await events.find({ position: { $gt: after } }, { sort: { position: 1 }, limit: PAGE }).toArray();
    if (page.length === 0) return { appends, rewritten };
    appends += page.length;
    after = page.at(-1)!.position;
    const asText = page.map((doc) => typeof doc.events === 'string');
    const next = await rewrite(page.map((doc) => ({ type: 'append', events: typeof doc.events === 'string' ? JSON.parse(doc.events) as CloudEvent[] : doc.events })));
    const eventOps: AnyBulkWriteOperation<AppendDoc>[] = [];
    const indexOps: AnyBulkWriteOperation<StreamIndexDoc>[] = [];
    next.forEach((record, i) => {
      if (record === undefined) return;
      const doc = page[i]!;
      const sealed = (record as { events: CloudEvent[] }).events;
      eventOps.push({ updateOne: { filter: { _id: doc._id }, update: { $set: { events: asText[i] ? JSON.stringify(sealed) : sealed } } } });
      // An unversioned append ('' stream) has no stream-index entries.
      if (doc.stream !== '') {
        sealed.forEach((event, k) => indexOps.push({
          updateOne: { filter: { _id: `${doc.stream}:${doc.firstVersion + k}` }, update: { $set: { event: asText[i] ? JSON.stringify(event) : event } } },
        }));
      }
    });
    // The index first: an event is never sealed in `events` while still plain in the index of a
    // finished run (a rerun finds the append plain and writes both again).
    if (indexOps.length > 0) await index.bulkWrite(indexOps, { ordered: false });
    if (eventOps.length > 0) await events.bulkWrite(eventOps, { ordered: false });
    rewritten += eventOps.length;
  }
}

/** Re-keys the account claims keyed by a plain e-mail; returns how many. */
export async function rekeyMongoClaims(db: Db, pd: Sealer): Promise<number> {
  const claims = db.collection<ClaimDoc>('claims');
  const legacy = (await claims.find({ scope: ACCOUNT_SCOPE }, { projection: { _id: 1, key: 1, value: 1, claimedAt: 1 } }).toArray())
    .filter((doc) => doc.key.includes('@'));
  for (let i = 0; i < legacy.length; i += PAGE) {
    const page = legacy.slice(i, i + PAGE);
    const twins = await Promise.all(page.map(async (doc): Promise<ClaimDoc> => {
      const value = await sealedAccount(pd, JSON.parse(doc.value) as { userId: number; name: string });
      const key = await pd.emailIndex(doc.key);
      return { _id: `${ACCOUNT_SCOPE}/${key}`, scope: ACCOUNT_SCOPE, key, value: JSON.stringify(value), claimedAt: doc.claimedAt };
    }));
    try {
      await claims.insertMany(twins, { ordered: false });
    } catch (error) {
      // A twin already there: inserted by a run that died before deleting the plain claim.
      const duplicatesOnly = error instanceof MongoServerError && 'writeErrors' in error
        && [(error as unknown as { writeErrors: unknown }).writeErrors].flat().every((e) => (e as { code?: number }).code === 11000);
      if (!duplicatesOnly) throw error;
    }
    await claims.deleteMany({ _id: { $in: page.map((doc) => doc._id) } });
  }
  return legacy.length;
}

/** `<base>.g<N>` for the next free N, `base` the topic without its generation. */
export const nextGeneration = (current: string, existing: readonly string[]): string => {
  const base = current.replace(/\.g\d+$/, '');
  const taken = existing.map((name) => (name.startsWith(`${base}.g`) ? Number(name.slice(base.length + 2)) : Number.NaN))
    .filter((n) => Number.isSafeInteger(n) && n > 0);
  return `${base}.g${Math.max(0, ...taken) + 1}`;
};

export interface DistributedOptions {
  deleteTopic?: string | undefined;
  log: (line: string) => void;
}

/** The whole distributed migration (or, with `deleteTopic`, its last step). */
export async function migrateDistributed(env: NodeJS.ProcessEnv, options: DistributedOptions): Promise<void> {
  const config = loadConfigOrExit(env, { mongo: mongo(), kafka: kafka(), personalData: personalData() });
  const { log } = options;
  const { client, db } = await connectMongo(config.mongo.mongoUrl, config.mongo.commandDb, config.mongo);
  const admin = new Kafka({ clientId: 'docshare-migrate', brokers: config.kafka.kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const migrations = db.collection<MigrationDoc>(MIGRATIONS);
  try {
    if (options.deleteTopic !== undefined) {
      await deleteOldTopic(options.deleteTopic, config.kafka.eventsTopic, await migrations.findOne({ _id: MIGRATION_ID }), admin, log);
      return;
    }
    const done = await migrations.findOne({ _id: MIGRATION_ID });
    if (done?.done) {
      log(`already migrated: every event was copied into ${done.topic} (from ${done.from}); nothing to do`);
      if (config.kafka.eventsTopic !== done.topic) printNextSteps(done, log);
      return;
    }
    const store = await openMongoKeyStore(db);
    const pd = makePersonalData({ store, kek: parseKek(config.personalData.kek) });
    try {
      const sealed = await sealMongoEvents(db, pd);
      log(`events: ${sealed.rewritten} of ${sealed.appends} appends rewritten sealed`);
      log(`claims: ${await rekeyMongoClaims(db, pd)} account claims re-keyed by the e-mail index`);
    } finally {
      await store.close();
    }

    const from = config.kafka.eventsTopic;
    let migration = done;
    if (!migration) {
      const existing = await admin.listTopics();
      const partitions = existing.includes(from)
        ? (await admin.fetchTopicMetadata({ topics: [from] })).topics[0]?.partitions.length ?? config.kafka.eventsPartitions
        : config.kafka.eventsPartitions;
      migration = { _id: MIGRATION_ID, topic: nextGeneration(from, existing), from, partitions, copiedUpTo: 0, upTo: 0, done: false };
      await migrations.insertOne(migration);
    }
    const [plan] = topicPlan({ eventsTopic: migration.topic, eventsPartitions: migration.partitions });
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic: plan!.topic, numPartitions: plan!.numPartitions, configEntries: Object.entries(plan!.configs ?? {}).map(([name, value]) => ({ name, value })) }],
    });
    const upTo = await copyIntoTopic(db, config.kafka, migration, migrations, log);
    const relayed = (await db.collection<{ _id: string; position: number }>(RELAY_CHECKPOINTS).findOne({ _id: RELAY_NAME }))?.position ?? 0;
    await handOverGroups(admin, migration.from, migration.topic, relayed >= upTo, log);
    // Done only now: a crash before this resumes the copy (nothing left) and hands the groups over then.
    await migrations.updateOne({ _id: MIGRATION_ID }, { $set: { done: true } });
    printNextSteps(migration, log);
  } finally {
    await admin.disconnect();
    await client.close();
  }
}

/** Copies every event from the store into the new generation, from where a previous run stopped; returns the last position copied. */
async function copyIntoTopic(
  db: Db, kafkaConfig: { kafkaBrokers: string[]; deadLetterTopic: string }, migration: MigrationDoc, migrations: Collection<MigrationDoc>,
  log: (line: string) => void,
): Promise<number> {
  const events = await openMongoEventStore(db);
  // Only its publisher is used: no subscription, so the dead-letter topic is never written.
  const bus = makeKafkaBus({ brokers: kafkaConfig.kafkaBrokers, clientId: 'docshare-migrate', topic: migration.topic, deadLetterTopic: kafkaConfig.deadLetterTopic });
  try {
    const upTo = await events.lastPosition();
    let after = migration.copiedUpTo;
    while (after < upTo) {
      const page = await events.readAll(after, PUBLISH);
      if (page.length === 0) break;
      await bus.publisher.publish(page);
      after = page.at(-1)!.position;
      await migrations.updateOne({ _id: migration._id }, { $set: { copiedUpTo: after, upTo } });
    }
    await migrations.updateOne({ _id: migration._id }, { $set: { copiedUpTo: after, upTo } });
    log(`kafka: ${after} events copied into ${migration.topic} (${migration.partitions} partitions)`);
    return after;
  } finally {
    await bus.close();
    await events.close();
  }
}

/**
 * Sets, on `to`, the offsets of every consumer group that had read all of `from` to the end of
 * `to` (when `complete`: `from` held every event copied); the others are named and left to read
 * `to` from its beginning. Kafka refuses to set the offsets of a group with live members: the
 * services must be stopped. Returns the groups handed over.
 */
export async function handOverGroups(admin: Admin, from: string, to: string, complete: boolean, log: (line: string) => void): Promise<string[]> {
  if (!(await admin.listTopics()).includes(from)) return [];
  const ends = new Map((await admin.fetchTopicOffsets(from)).map((p) => [p.partition, p.high]));
  const targets = (await admin.fetchTopicOffsets(to)).map((p) => ({ partition: p.partition, offset: p.high }));
  const handed: string[] = [];
  for (const { groupId } of (await admin.listGroups()).groups) {
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [from] });
    const committed = offsets?.partitions ?? [];
    if (!committed.some((p) => Number(p.offset) >= 0)) continue;
    const caughtUp = [...ends].every(([partition, high]) => {
      const at = committed.find((p) => p.partition === partition)?.offset;
      return Number(high) === 0 || (at !== undefined && Number(at) >= Number(high));
    });
    if (!complete || !caughtUp) {
      log(`kafka: group ${groupId} ${complete ? 'had not read all of' : 'cannot be handed over: the relay had not published every event to'} ${from}; it reads ${to} from its beginning`);
      continue;
    }
    await admin.setOffsets({ groupId, topic: to, partitions: targets });
    handed.push(groupId);
  }
  if (handed.length > 0) log(`kafka: ${handed.length} consumer groups go on at the end of ${to} (${handed.join(', ')})`);
  return handed;
}

function printNextSteps(migration: MigrationDoc, log: (line: string) => void): void {
  log('next:');
  log(`  1. set KAFKA_EVENTS_TOPIC=${migration.topic} for every service, and start them`);
  log('  2. npm run rebuild -- all');
  log(`  3. once every consumer group reads ${migration.topic}: npm run migrate -- encrypt-personal-data --delete-topic ${migration.from}`);
}

async function deleteOldTopic(
  old: string, current: string, migration: MigrationDoc | null, admin: Admin, log: (line: string) => void,
): Promise<void> {
  if (!migration?.done || migration.from !== old) throw new Error(`${old} is not the topic a finished migration copied from`);
  if (current === old) throw new Error(`KAFKA_EVENTS_TOPIC is still ${old}: switch every service to ${migration.topic} first`);
  if (!(await admin.listTopics()).includes(old)) {
    log(`${old}: already deleted`);
    return;
  }
  await admin.deleteTopics({ topics: [old] });
  log(`${old}: deleted (its plain records with it)`);
}
