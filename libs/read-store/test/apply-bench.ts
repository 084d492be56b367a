/*
 * Micro-benchmark of the Mongo read store's writes (not a test):
 *   MONGO_URL=mongodb://... node libs/read-store/test/apply-bench.ts
 * Applies BENCH_UPDATES (default 20,000) stats-like updates ($inc on one of 200 user documents,
 * positions increasing) with applyBatch in batches of BENCH_BATCH (default 500), then the same
 * batches again (a full redelivery: every document settles, nothing applies), beside the same
 * number of plain `updateOne({ _id }, { $inc }, { upsert: true })`, sent one at a time and as one
 * unordered bulkWrite: the store's own primitives, its ceiling. Uses a fresh database, dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import type { AnyBulkWriteOperation, Document } from 'mongodb';
import { makeMongoReadStore } from '../src/mongo-read-store.ts';
import type { GuardedUpdate } from '../src/port.ts';

const url = process.env['MONGO_URL'];
if (!url) throw new Error('MONGO_URL is not set');
const total = Number(process.env['BENCH_UPDATES'] ?? 20_000);
const batchSize = Number(process.env['BENCH_BATCH'] ?? 500);
const users = 200;

const client = new MongoClient(url);
await client.connect();
const info = await client.db('admin').command({ buildInfo: 1 });
const ferret = (info['ferretdb'] as { version?: unknown } | undefined)?.version;
const db = client.db(`bench_apply_${randomBytes(4).toString('hex')}`);

// The same pseudo-random user per update in every run: user = f(i).
const userOf = (i: number): string => `u${(i * 7919) % users}`;
const kinds = ['total_views', 'total_downloads', 'total_comments'];
const updates: GuardedUpdate[] = Array.from({ length: total }, (_, i) => ({
  collection: 'stats', id: userOf(i), update: { inc: { [kinds[i % 3] as string]: 1 } }, position: i + 1,
}));

const rate = (count: number, ms: number): string => `${Math.round(count / (ms / 1000)).toLocaleString('en-US')}/s`;
const time = async (label: string, count: number, run: () => Promise<unknown>): Promise<void> => {
  const start = performance.now();
  await run();
  const ms = performance.now() - start;
  console.log(`${label.padEnd(58)} ${String(count).padStart(6)} updates in ${(ms / 1000).toFixed(2).padStart(6)} s  ${rate(count, ms)}`);
};

try {
  console.log(`server: ${typeof ferret === 'string' ? `FerretDB ${ferret}` : `MongoDB ${String(info['version'])}`}; ${total} updates on ${users} documents`);
  const store = makeMongoReadStore(db, { prefix: 'store_', indexes: {} });
  let applied = 0;
  await time(`applyBatch, batches of ${batchSize}`, total, async () => {
    for (let i = 0; i < total; i += batchSize) applied += await store.applyBatch(updates.slice(i, i + batchSize));
  });
  if (applied !== total) throw new Error(`applied ${applied} of ${total}`);
  await time(`applyBatch again (redelivery: nothing applies)`, total, async () => {
    for (let i = 0; i < total; i += batchSize) applied += await store.applyBatch(updates.slice(i, i + batchSize));
  });
  if (applied !== total) throw new Error(`the redelivery applied ${applied - total}`);

  const oneByOne = db.collection<Document & { _id: string }>('plain_one');
  await time('plain updateOne($inc), one at a time', total, async () => {
    for (const { id, update } of updates) await oneByOne.updateOne({ _id: id }, { $inc: update.inc ?? {} }, { upsert: true });
  });

  const bulk = db.collection<Document & { _id: string }>('plain_bulk');
  const ops: AnyBulkWriteOperation<Document & { _id: string }>[] = updates.map(({ id, update }) => ({
    updateOne: { filter: { _id: id }, update: { $inc: update.inc ?? {} }, upsert: true },
  }));
  await time('plain updateOne($inc), one unordered bulkWrite', total, async () => {
    await bulk.bulkWrite(ops, { ordered: false });
  });

  // Sorted: the stand-in's unsorted multi-batch finds can repeat documents (mongo-read-store.ts).
  const sums = async (name: string): Promise<number> => (await db.collection(name).find().sort({ _id: 1 }).toArray())
    .reduce((sum, doc) => sum + kinds.reduce((s, kind) => s + Number(doc[kind] ?? 0), 0), 0);
  const counted = [await sums('store_stats'), await sums('plain_one'), await sums('plain_bulk')];
  if (counted.some((n) => n !== total)) throw new Error(`sums ${counted.join(', ')}, expected ${total}`);
} finally {
  await db.dropDatabase();
  await client.close();
}
