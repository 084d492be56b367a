/**
 * node infra/mongo-plans.ts: the query plan of every read path of the distributed mode, as the
 * server at MONGO_URL chooses it (docs/mongodb.md, "Read paths and their plans").
 *
 * Fills a scratch database (dropped afterwards) through the read store itself (so the indexes are
 * the ones the projectors create): PLANS_FILES files of 50 owners, a comment per file, 20
 * categories; then explains each query the services send, with the parameters they send. On
 * MongoDB it prints the winning plan's stages and how many keys and documents it examined; on
 * FerretDB, what it pushed down to its backend.
 *
 * Env: MONGO_URL, PLANS_FILES (2000).
 */
import { randomBytes } from 'node:crypto';
import { MongoClient, type Document } from 'mongodb';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeMongoCheckpoints } from '@docshare/projection';
import { FILES_INDEXES } from '@docshare/files-projector';

const url = process.env.MONGO_URL;
if (!url) {
  console.error('MONGO_URL is not set');
  process.exit(2);
}
const files = Number(process.env.PLANS_FILES ?? 2_000);
const client = new MongoClient(url);
await client.connect();
const dbName = `docshare_plans_${randomBytes(4).toString('hex')}`;
const db = client.db(dbName);

/** The stages of a MongoDB plan, outermost first, with the index each scan uses. */
const stages = (plan: Document | undefined): string => {
  const out: string[] = [];
  for (let node = plan; node; node = (node.inputStage ?? node.inputStages?.[0]) as Document | undefined) {
    out.push(node.indexName ? `${node.stage as string}(${node.indexName as string})` : node.stage as string);
  }
  return out.join(' ← ');
};

const describe = (explained: Document): string => {
  if (explained.queryPlanner?.winningPlan) {
    const stats = explained.executionStats as Document | undefined;
    const plan = explained.queryPlanner.winningPlan as Document;
    return `${stages(plan.queryPlan as Document | undefined ?? plan)}; keys ${stats?.totalKeysExamined ?? '?'}, docs ${stats?.totalDocsExamined ?? '?'}, returned ${stats?.nReturned ?? '?'}`;
  }
  // FerretDB 1.x: what it could hand to its backend.
  const flags = ['pushdown', 'sortingPushdown', 'limitPushdown', 'unsafeSortPushdown'].filter((k) => k in explained)
    .map((k) => `${k} ${String(explained[k])}`);
  const backend = JSON.stringify(explained.queryPlanner ?? {}).slice(0, 160);
  return `${flags.join(', ')}; backend plan ${backend}`;
};

try {
  const started = performance.now();
  const stats = makeMongoReadStore(db, { prefix: 'stats_', indexes: {} });
  const model = makeMongoReadStore(db, { prefix: 'files_', indexes: FILES_INDEXES });
  const updates = [];
  let position = 0;
  for (let u = 1; u <= 50; u++) {
    updates.push({ collection: 'users', id: String(u), update: { set: { user_id: u, name: `user ${u}` } }, position: ++position });
  }
  for (let c = 1; c <= 20; c++) {
    updates.push({ collection: 'categories', id: String(c), update: { set: { category_id: c, name: `cat ${c}` } }, position: ++position });
  }
  for (let f = 1; f <= files; f++) {
    const owner = (f % 50) + 1;
    const at = new Date(Date.UTC(2026, 0, 1) + f * 60_000).toISOString();
    updates.push({
      collection: 'files', id: String(f), position: ++position,
      update: { set: { file_id: f, owner_id: owner, title: `file ${f}`, uploaded_at: at, enabled: f % 7 !== 0, for_sale: false, deleted: f % 11 === 0 } },
    });
    updates.push({
      collection: 'comments', id: String(f), position: ++position,
      update: { set: { comment_id: f, file_id: f, file_owner_id: owner, author_id: ((f + 1) % 50) + 1, comment: 'hi', posted_at: at, ...(f % 11 === 0 ? { file_deleted: true } : {}) } },
    });
  }
  for (let i = 0; i < updates.length; i += 500) await model.applyBatch(updates.slice(i, i + 500));
  await stats.applyBatch([{ collection: 'stats', id: '7', update: { inc: { total_files: 1 } }, position: ++position }]);
  await makeMongoCheckpoints(db).record('files-projector', 0, position);
  console.log(`seeded ${files} files, ${files} comments into ${dbName} in ${Math.round(performance.now() - started)} ms\n`);

  const page = { limit: 20 }; // the first page: the services send no skip for it
  const hide = { projection: { _pos: 0, _seen: 0 } };
  const paths: [string, () => Promise<Document>][] = [
    ['api-files, the owner (page)', () => db.collection('files_files').find({ owner_id: 7, deleted: false }, hide).sort({ uploaded_at: -1, file_id: -1 }).limit(page.limit).explain('executionStats')],
    ['api-files, the owner (total)', () => db.collection('files_files').find({ owner_id: 7, deleted: false }).explain('executionStats')],
    ['api-files, someone else (page)', () => db.collection('files_files').find({ owner_id: 7, deleted: false, enabled: true }, hide).sort({ uploaded_at: -1, file_id: -1 }).limit(page.limit).explain('executionStats')],
    ['api-comments (page)', () => db.collection('files_comments').find({ file_owner_id: 7, file_deleted: { $in: [false, null] } }, hide).sort({ posted_at: -1, comment_id: -1 }).limit(page.limit).explain('executionStats')],
    ['api-comments, titles of the page', () => db.collection('files_files').find({ file_id: { $in: [7, 57, 107] } }, hide).explain('executionStats')],
    ['api-categories (page)', () => db.collection('files_categories').find({}, hide).sort({ category_id: 1 }).limit(100).explain('executionStats')],
    ['a user (api-files, api-comments)', () => db.collection<{ _id: string }>('files_users').find({ _id: '7' }, hide).explain('executionStats')],
    ['api-stats, the quota', () => db.collection<{ _id: string }>('stats_stats').find({ _id: '7' }, hide).explain('executionStats')],
    ['a deletion marks its comments', () => db.collection('files_comments').find({ file_id: 7 }, hide).explain('executionStats')],
    ['a projector write (guard)', () => db.collection<{ _id: string }>('files_files').find({ _id: '7', _pos: { $not: { $gte: position + 1 } } }).explain('executionStats')],
    ['a read waiting for its token', () => db.collection<{ _id: string }>('projection_checkpoints').find({ _id: { $in: ['files-projector/0', 'files-projector/1', 'files-projector/2'] } }).explain('executionStats')],
  ];
  for (const [name, explain] of paths) {
    try {
      console.log(`${name.padEnd(36)} ${describe(await explain())}`);
    } catch (error) {
      console.log(`${name.padEnd(36)} explain failed: ${(error as Error).message}`);
    }
  }
  await stats.close();
  await model.close();
} finally {
  await db.dropDatabase().catch(() => {});
  await client.close();
}
