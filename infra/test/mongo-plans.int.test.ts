// The plans the MongoDB server at MONGO_URL (in npm run test:real: the stand-in, FerretDB 2 on
// PostgreSQL + DocumentDB) chooses for every query docshare sends: none on a collection that grows
// with data may be a sequential scan (docs/mongodb.md, "Read paths and their plans"). The queries
// are recorded from docshare's own code as it runs (infra/mongo-plans.ts), so a new or changed
// query is checked without being listed here.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MongoClient, type Db } from 'mongodb';
import { FILES_INDEXES } from '@docshare/files-projector';
import { collectPlans, formatReport, planNodes, queriesOf, readsAll, showPlan } from '../mongo-plans.ts';

const url = process.env.MONGO_URL;
if (!url) throw new Error('MONGO_URL is not set: run this suite under infra/with-stack.ts (npm run test:real)');

/** Enough documents for a planner to prefer an index to reading everything (PLANS_FILES to change). */
const FILES = Number(process.env.PLANS_FILES ?? 2_000);

describe('read paths on the MongoDB server at MONGO_URL', () => {
  let client: MongoClient;
  let db: Db;
  before(async () => {
    client = new MongoClient(url);
    await client.connect();
    db = client.db(`docshare_plans_test_${randomBytes(4).toString('hex')}`);
  });
  after(async () => {
    await db?.dropDatabase().catch(() => {});
    await client?.close();
  });

  it('a filter no index serves reads the whole collection; with the index, it does not', async () => {
    const docs = db.collection<{ _id: string; owner_id: number }>('docs');
    const all = Array.from({ length: 20_000 }, (_, i) => ({ _id: String(i), owner_id: i % 500 }));
    for (let i = 0; i < all.length; i += 2_000) await docs.insertMany(all.slice(i, i + 2_000));
    const explain = async () => {
      const [query] = queriesOf({ commandName: 'find', databaseName: db.databaseName, command: { find: 'docs', filter: { owner_id: 7 } } });
      return planNodes(await db.command({ explain: query?.explain, verbosity: 'queryPlanner' }));
    };
    // A Seq Scan, or (on DocumentDB before its statistics) a scan of the _id index selecting every document.
    const before = await explain();
    assert.ok(readsAll(before), showPlan(before));
    await docs.createIndex({ owner_id: 1 }, { name: 'owner' });
    const indexed = await explain();
    assert.ok(!readsAll(indexed), showPlan(indexed));
    assert.ok(indexed.some((n) => n.index === 'owner'), showPlan(indexed));
  });

  it('a read model query whose index is missing fails the check', async () => {
    // The files projector without the comments' file_id index: a deletion's lookup of the file's comments scans.
    const { file_id: _dropped, ...comments } = Object.fromEntries((FILES_INDEXES.comments ?? []).map((i) => [i.name, i]));
    const report = await collectPlans(url, { files: 500, filesIndexes: { ...FILES_INDEXES, comments: Object.values(comments) } });
    const failed = report.failures.map((p) => p.command);
    assert.ok(failed.some((c) => c.startsWith('find files_comments {"file_id":')), formatReport(report));
  });

  it(`every query on a collection that grows is index-backed (${FILES} files)`, async (t) => {
    const report = await collectPlans(url, { files: FILES, log: (line) => t.diagnostic(line) });
    t.diagnostic(formatReport(report));
    assert.deepEqual(report.failures.map((p) => `${p.path}: ${p.command}: ${p.error ?? showPlan(p.plan)}`), []);
    // The paths were all run and planned (a path that sent nothing would prove nothing).
    const planned = new Set(report.paths.filter((p) => p.planned).map((p) => p.path));
    for (const path of ['api-files, the owner', 'api-files, someone else', 'api-comments', 'api-categories', 'api-stats',
      'docs-command: api-purchases', 'docs-command: a command loads its stream', 'docs-command: login (account claim)',
      'docs-command: idempotency key (begin, complete)', 'the projectors: a batch (comment, purchase, disabling, deletion)',
      'the relay: a batch', 'rebuild: the log from the middle', 'a read waiting for its token']) {
      assert.ok(planned.has(path), `${path} sent no query that has a plan`);
    }
  });
});
