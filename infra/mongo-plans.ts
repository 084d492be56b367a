/**
 * node infra/mongo-plans.ts: the plan the server at MONGO_URL really chooses for every query
 * docshare sends on a path that grows with data (docs/mongodb.md, "Read paths and their plans").
 *
 * 1. Fills two scratch databases (command and read, dropped afterwards) through docshare's own
 *    code: PLANS_FILES files of PLANS_FILES/100 owners appended to the event store as the command
 *    side appends them (a file's upload, comment, purchase, update and deletion in its stream),
 *    every event then applied by the files and stats projectors' handlers (so the documents and
 *    indexes are the projectors'), the outbox relay publishing the log, account claims and
 *    idempotency keys.
 * 2. Runs each path through the code that serves it (the services' queries, the projectors'
 *    handlers, the event store, the relay, the lease, the claim and idempotency stores, the
 *    consistency checkpoints), recording every command the driver sends (command monitoring).
 *    The queries are never copied here, so a query changed in the code is the one explained.
 * 3. Explains each recorded query (find, aggregate, count; the filter of an update, delete,
 *    findAndModify or distinct as the find with that filter: FerretDB explains nothing else) and
 *    prints the plan: on FerretDB 2 + DocumentDB, PostgreSQL's plan nodes (Seq Scan, Index Scan,
 *    Bitmap Index Scan(<index>), Sort...); on MongoDB, the winning plan's stages (COLLSCAN, IXSCAN...).
 *
 * Exits 1 when a query on a collection that grows with data reads all of it: a sequential scan, or
 * an index scan that selects every document (DocumentDB's way of scanning a collection it has no
 * statistics for yet). A whole-collection read by design, an empty filter without a limit, is
 * reported, not failed.
 *
 * Env: MONGO_URL, PLANS_FILES (20000). Flags: --json (one JSON document on stdout), --keep (leave
 * the databases, named on stderr, for a second look, e.g. after PostgreSQL's autovacuum analyzed them).
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { MongoClient, type CommandStartedEvent, type Document } from 'mongodb';
import { EVENT_SOURCE, partitionKeyOf, streamIds, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { openMongoEventStore, mongoOutbox } from '@docshare/event-store/mongo';
import { openMongoClaimStore } from '@docshare/claim-store/mongo';
import { openMongoIdempotencyStore } from '@docshare/idempotency-store/mongo';
import { openMongoStorageLedger } from '@docshare/storage-ledger/mongo';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeMongoCheckpoints } from '@docshare/consistency';
import { readPointer } from '@docshare/projection';
import { makeLease, startOutboxRelay } from '@docshare/outbox';
import { FILES_INDEXES, filesHandler, makeFilesQueries } from '@docshare/files-projector';
import { makeStatsQueries, STATS_INDEXES, statsHandler } from '@docshare/stats-projector';

/** Collections whose size does not grow with users, files or events (a document per lease, relay, group and partition, model, read-model collection). */
export const FIXED_SIZE = new Set(['leases', 'outbox_checkpoints', 'projection_checkpoints', 'read_model_generations', 'read_store_collections']);

export interface PlanNode {
  node: string;
  index?: string;
  relation?: string;
  /** An index scan that selects every document: its condition is only DocumentDB's `shard_key_value` (the collection). */
  whole?: boolean;
}

export interface PathPlan {
  /** The read path, as docs/mongodb.md names it. */
  path: string;
  /** The command as sent: its name (find, aggregate, count, update...), collection, and filter's shape. */
  command: string;
  collection: string;
  growing: boolean;
  /** False for an insert: nothing to plan (it checks the unique indexes). */
  planned: boolean;
  /** The plan's nodes, outermost first. */
  plan: PlanNode[];
  /** Indexes the plan uses. */
  indexes: string[];
  /** The whole collection read: a sequential scan (PostgreSQL) or COLLSCAN (MongoDB), or an index scan that selects every document. */
  scans: boolean;
  /** Sorted after reading (PostgreSQL Sort node, MongoDB SORT stage), not read in index order. */
  sorts: boolean;
  /** The filter is empty and unlimited: the path reads the whole collection by design. */
  whole: boolean;
  /** Median ms of the explained query, run 5 times after the explain (a find with the same filter for writes). */
  ms: number | null;
  error?: string;
}

export interface PlansReport { server: string; seeded: string; paths: PathPlan[]; failures: PathPlan[] }

// ---- plans ---------------------------------------------------------------------------------

/** The nodes of a PostgreSQL JSON plan (FerretDB 2's `queryPlanner.Plan`), outermost first, depth first. */
export const postgresNodes = (plan: Document | undefined): PlanNode[] => {
  if (!plan) return [];
  const node: PlanNode = { node: String(plan['Node Type']) };
  if (typeof plan['Index Name'] === 'string') {
    node.index = plan['Index Name'];
    // DocumentDB's indexes lead with the collection's shard_key_value: a condition on that alone is
    // the whole collection read through the index (the planner's way of scanning before it has
    // statistics), not a lookup. A real one compares the document (`document OPERATOR(...)`) or `_id` (`object_id`).
    const cond = typeof plan['Index Cond'] === 'string' ? plan['Index Cond'] : '';
    if (!/document OPERATOR|object_id/.test(cond)) node.whole = true;
  }
  if (typeof plan['Relation Name'] === 'string') node.relation = plan['Relation Name'];
  return [node, ...((plan.Plans ?? []) as Document[]).flatMap(postgresNodes)];
};

/** The stages of a MongoDB winning plan, outermost first. */
export const mongoNodes = (plan: Document | undefined): PlanNode[] => {
  if (!plan) return [];
  const node: PlanNode = { node: String(plan.stage) };
  if (typeof plan.indexName === 'string') node.index = plan.indexName;
  const inputs = [plan.inputStage, ...(plan.inputStages ?? [])].filter(Boolean) as Document[];
  return [node, ...inputs.flatMap(mongoNodes)];
};

/** The nodes of an explain answer, whichever server gave it. */
export const planNodes = (explained: Document): PlanNode[] => {
  const planner = explained.queryPlanner as Document | undefined;
  if (planner?.Plan) return postgresNodes(planner.Plan as Document);
  if (planner?.winningPlan) {
    const winning = planner.winningPlan as Document;
    return mongoNodes((winning.queryPlan as Document | undefined) ?? winning);
  }
  // An aggregate on MongoDB: the $cursor stage's planner.
  const cursor = (explained.stages as Document[] | undefined)?.[0]?.$cursor as Document | undefined;
  if (cursor) return planNodes(cursor);
  return [];
};

const SEQUENTIAL = new Set(['Seq Scan', 'COLLSCAN']);
const SORTS = new Set(['Sort', 'Incremental Sort', 'SORT']);

export const showPlan = (nodes: readonly PlanNode[]): string =>
  nodes.map((n) => (n.index ? `${n.node}(${n.index}${n.whole ? ': every document' : ''})` : n.node)).join(' ← ');

/** Whether a plan reads the whole collection: a sequential scan, or an index scan that selects every document. */
export const readsAll = (nodes: readonly PlanNode[]): boolean => nodes.some((n) => SEQUENTIAL.has(n.node) || n.whole === true);

// ---- commands --------------------------------------------------------------------------------

/** A filter's shape: its values replaced by their types, so one path's lookups of different keys are one entry. */
const shapeOf = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.length === 0 ? [] : ['…'];
  if (value instanceof Date) return 'date';
  if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value) && (value as { _bsontype?: string })._bsontype === undefined) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shapeOf(v)]));
  }
  return value === null ? null : typeof value;
};

/** A sort as sent (the driver sends a Map), as a plain object. */
const plain = (value: unknown): unknown => (value instanceof Map ? Object.fromEntries(value) : value);

interface Query {
  db: string;
  collection: string;
  /** What to explain: a find, aggregate or count command. */
  explain: Document;
  command: string;
  whole: boolean;
}

/** The queries in one command the driver sent (an update or delete command carries one per statement). */
export const queriesOf = (event: Pick<CommandStartedEvent, 'commandName' | 'command' | 'databaseName'>): Query[] => {
  const c = event.command;
  const db = event.databaseName;
  const find = (collection: string, filter: Document, extra: Document = {}): Document => ({ find: collection, filter, ...extra });
  const entry = (collection: string, explain: Document, name: string, filter: Document, extra = '', whole = false): Query => ({
    db, collection, explain, command: `${name} ${collection} ${JSON.stringify(shapeOf(filter))}${extra}`, whole,
  });
  switch (event.commandName) {
    case 'find': {
      const filter = (c.filter ?? {}) as Document;
      const options: Document = {};
      for (const k of ['sort', 'limit', 'skip', 'projection'] as const) if (c[k] !== undefined) options[k] = plain(c[k]);
      const extra = `${c.sort ? ` sort ${JSON.stringify(plain(c.sort))}` : ''}${c.limit ? ` limit ${String(c.limit)}` : ''}${c.skip ? ' skip' : ''}`;
      return [entry(c.find as string, find(c.find as string, filter, options), 'find', filter, extra,
        Object.keys(filter).length === 0 && !c.limit)];
    }
    case 'aggregate': {
      const pipeline = c.pipeline as Document[];
      const match = (pipeline.find((s) => s.$match)?.$match ?? {}) as Document;
      const stages = pipeline.map((s) => Object.keys(s)[0]).join(',');
      return [entry(c.aggregate as string, { aggregate: c.aggregate, pipeline, cursor: {} }, 'aggregate', match, ` [${stages}]`, Object.keys(match).length === 0)];
    }
    case 'count':
      return [entry(c.count as string, { count: c.count, query: c.query ?? {} }, 'count', (c.query ?? {}) as Document, '', Object.keys(c.query ?? {}).length === 0)];
    case 'distinct': {
      const query = (c.query ?? {}) as Document;
      return [entry(c.distinct as string, find(c.distinct as string, query), 'distinct', query, ` key ${String(c.key)}`, Object.keys(query).length === 0)];
    }
    case 'update':
      return (c.updates as Document[]).map((u) => entry(c.update as string, find(c.update as string, u.q as Document, { limit: 1 }),
        u.upsert ? 'update(upsert)' : 'update', u.q as Document, ` ${Object.keys(u.u as Document).join(',')}`));
    case 'delete':
      return (c.deletes as Document[]).map((d) => entry(c.delete as string, find(c.delete as string, d.q as Document, d.limit ? { limit: 1 } : {}),
        'delete', d.q as Document, '', Object.keys(d.q as Document).length === 0));
    case 'findAndModify': {
      const query = (c.query ?? {}) as Document;
      return [entry(c.findAndModify as string, find(c.findAndModify as string, query, { limit: 1, ...(c.sort ? { sort: plain(c.sort) } : {}) }), 'findAndModify', query)];
    }
    case 'insert':
      // Nothing to plan: an insert checks the unique indexes (listed so that a path's commands are all shown).
      return [{ db, collection: c.insert as string, explain: {}, command: `insert ${String(c.insert)}`, whole: false }];
    default:
      return [];
  }
};

/** The read model collection without its prefix (`files_g123_comments` → `comments`), for the growth check. */
const baseName = (collection: string): string => collection.replace(/^(files|stats)_(g\d+_)?/, '');

// ---- the populated database -------------------------------------------------------------------

const at = (n: number): string => new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString();

const cloudEvent = (type: string, subject: string, streamversion: number, data: unknown, n: number): CloudEvent => ({
  specversion: '1.0', id: `plans-${subject}-${streamversion}`, source: EVENT_SOURCE, type, time: at(n), subject,
  datacontenttype: 'application/json', data, correlationid: `plans-${n}`, causationid: `plans-${n}`, streamversion,
});

interface Fixture { users: number; files: number; categories: number }

/** A file's stream as the command side appends it: upload, comment, and now and then a purchase, a disabling update, a deletion. */
const fileStream = (f: number, fx: Fixture, commentId: number): CloudEvent[] => {
  const owner = (f % fx.users) + 1;
  const other = ((f + 1) % fx.users) + 1;
  const subject = streamIds.file(f);
  const category = (f % fx.categories) + 1;
  const out: CloudEvent[] = [];
  const add = (type: string, data: unknown): void => { out.push(cloudEvent(type, subject, out.length + 1, data, f)); };
  add('docs.file.uploaded.v1', {
    fileId: f, ownerId: owner, ownerName: `user ${owner}`, title: `notes ${f}`, description: 'plans', tags: ['plans'],
    categoryId: category, categoryName: `category ${category}`, license: 'cc-by', videoUrl: null,
    originalFileName: `notes-${f}.txt`, contentType: 'text/plain', size: 4096, blobKey: `blobs/${f}`, uploadedAt: at(f),
  });
  add('docs.comment.posted.v1', { commentId, fileId: f, fileOwnerId: owner, fileTitle: `notes ${f}`, authorId: other, comment: 'useful', postedAt: at(f) });
  add('docs.file.viewed.v1', { fileId: f, ownerId: owner, viewedAt: at(f) });
  if (f % 5 === 0) {
    add('docs.file.updated.v1', { fileId: f, ownerId: owner, changes: { forSale: true, price: 3 }, updatedAt: at(f) });
    add('docs.file.purchased.v1', { fileId: f, ownerId: owner, saleId: f, buyerId: other, price: 3, purchasedAt: at(f) });
    add('docs.file.downloaded.v1', { fileId: f, ownerId: owner, downloadedBy: other, downloadedAt: at(f) });
  }
  if (f % 7 === 0) add('docs.file.updated.v1', { fileId: f, ownerId: owner, changes: { enabled: false }, updatedAt: at(f) });
  if (f % 11 === 0) add('docs.file.deleted.v1', { fileId: f, ownerId: owner, blobKey: `blobs/${f}`, deletedAt: at(f) });
  return out;
};

const inChunks = async <T>(items: readonly T[], size: number, each: (item: T) => Promise<unknown>): Promise<void> => {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(each));
};

const PARTITIONS = 6;

/** Applies the log after `after` to both read models in batches of `batch`, as the projectors do; returns the last position. */
const project = async (events: { readAll(after: number, limit: number): Promise<StoredEvent<CloudEvent>[]> },
  handlers: ((records: readonly StoredEvent<CloudEvent>[]) => Promise<void>)[], after: number, batch: number): Promise<number> => {
  let position = after;
  for (;;) {
    const records = await events.readAll(position, batch);
    if (records.length === 0) return position;
    // One partition's batch at a time, as the bus delivers them (a user's documents from one partition).
    const byPartition = new Map<number, StoredEvent<CloudEvent>[]>();
    for (const record of records) {
      const key = partitionKeyOf(record.event);
      const p = [...key].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) % PARTITIONS, 0);
      byPartition.set(p, [...(byPartition.get(p) ?? []), record]);
    }
    for (const part of byPartition.values()) for (const handle of handlers) await handle(part);
    position = (records.at(-1) as StoredEvent<CloudEvent>).position;
  }
};

const median = (values: number[]): number => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** Seeds, records and explains; `log` tells progress. */
export interface PlansOptions {
  /** Files to seed (default 20 000); users and categories are a hundredth of that. */
  files?: number;
  /** Leave the scratch databases. */
  keep?: boolean;
  /** The files read model's indexes (default: the projector's own, FILES_INDEXES). */
  filesIndexes?: typeof FILES_INDEXES;
  log?: (line: string) => void;
}

export async function collectPlans(url: string, options: PlansOptions = {}): Promise<PlansReport> {
  const log = options.log ?? (() => {});
  const files = options.files ?? 20_000;
  const fx: Fixture = { files, users: Math.max(20, Math.round(files / 100)), categories: Math.max(20, Math.round(files / 100)) };
  const client = new MongoClient(url, { monitorCommands: true });
  await client.connect();
  const tag = randomBytes(4).toString('hex');
  const commandDb = client.db(`docshare_plans_${tag}_command`);
  const readDb = client.db(`docshare_plans_${tag}_read`);
  const recorded: { path: string; event: CommandStartedEvent }[] = [];
  let recording: string | null = null;
  client.on('commandStarted', (event) => { if (recording !== null) recorded.push({ path: recording, event }); });
  const record = async <T>(path: string, run: () => Promise<T>): Promise<T> => {
    recording = path;
    try {
      return await run();
    } finally {
      recording = null;
    }
  };

  try {
    const build = await client.db('admin').command({ buildInfo: 1 });
    const ferret = (build.ferretdb as { version?: string } | undefined)?.version ?? (build.ferretdbVersion as string | undefined);
    const server = ferret ? `FerretDB ${ferret} (MongoDB ${String(build.version)} wire)` : `MongoDB ${String(build.version)}`;

    // ---- 1. fill --------------------------------------------------------------------------
    const started = performance.now();
    const events = await openMongoEventStore(commandDb);
    const claims = await openMongoClaimStore(commandDb);
    const keys = await openMongoIdempotencyStore(commandDb);
    // The storage quota's ledger (docs-command's own); nothing pending is ever stale here.
    const ledger = await openMongoStorageLedger(commandDb, { resolve: async () => 'recorded' });
    const filesStore = makeMongoReadStore(readDb, { prefix: 'files_', indexes: options.filesIndexes ?? FILES_INDEXES });
    const statsStore = makeMongoReadStore(readDb, { prefix: 'stats_', indexes: STATS_INDEXES });
    const checkpoints = makeMongoCheckpoints(readDb);
    const handlers = [filesHandler(filesStore), statsHandler(statsStore)];

    const userIds = Array.from({ length: fx.users }, (_, i) => i + 1);
    await inChunks(userIds, 64, async (u) => {
      await claims.claim('account', `user${u}@plans.test`, { userId: u });
      await events.append(streamIds.user(u), 0, [cloudEvent('docs.user.registered.v1', streamIds.user(u), 1,
        { userId: u, name: `user ${u}`, email: `user${u}@plans.test`, registeredAt: at(0) }, 0)]);
    });
    const categoryIds = Array.from({ length: fx.categories }, (_, i) => i + 1);
    await inChunks(categoryIds, 64, async (c) => {
      await claims.claim('category-name', `category ${c}`, { categoryId: c });
      await events.append(streamIds.category(c), 0, [cloudEvent('docs.category.created.v1', streamIds.category(c), 1,
        { categoryId: c, name: `category ${c}`, description: '', tags: [], createdBy: 1, createdAt: at(0) }, 0)]);
    });
    const fileIds = Array.from({ length: files }, (_, i) => i + 1);
    await inChunks(fileIds, 64, async (f) => {
      await events.nextId('file');
      const commentId = await events.nextId('comment');
      const stream = fileStream(f, fx, commentId);
      await events.append(streamIds.file(f), 0, stream);
    });
    const keyIds = Array.from({ length: Math.round(files / 4) }, (_, i) => i + 1);
    await inChunks(keyIds, 64, async (k) => {
      const begun = await keys.begin(`${(k % fx.users) + 1}/key-${k}`, Date.now(), 30_000);
      if (begun.state === 'started') {
        await keys.complete(`${(k % fx.users) + 1}/key-${k}`, begun.token,
          { fingerprint: 'f', answer: { status: 201, headers: {}, body: '{}' }, expiresAt: Date.now() + 86_400_000 });
      }
    });
    const last = await project(events, handlers, 0, 1000);
    for (let p = 0; p < PARTITIONS; p++) {
      for (const group of ['files-projector', 'stats-projector', 'search-projector']) await checkpoints.record(group, p, last);
    }
    const published: StoredEvent<CloudEvent>[] = [];
    const publisher = { publish: async (records: readonly StoredEvent<CloudEvent>[]) => { published.push(...records); }, close: async () => {} };
    const quiet = { info: () => {}, warn: () => {}, error: () => {} };
    const untilPublished = async (relay: { publishedCount(): number; lastError(): unknown }, count: number): Promise<void> => {
      while (relay.publishedCount() < count) {
        if (relay.lastError()) throw relay.lastError() as Error;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    let relay = startOutboxRelay({ db: commandDb, publisher, logger: quiet, owner: 'plans-relay', batchSize: 256 });
    await untilPublished(relay, last);
    await relay.stop();
    const counts = await Promise.all(['events', 'files_files', 'files_comments', 'files_purchases', 'idempotency_keys']
      .map(async (name) => `${name} ${await (name.startsWith('files_') ? readDb : commandDb).collection(name).countDocuments()}`));
    const seeded = `${last} events of ${fx.users} users, ${files} files (${counts.join(', ')}) in ${Math.round(performance.now() - started)} ms`;
    log(`seeded ${seeded}`);

    // ---- 2. record each path ----------------------------------------------------------------
    const owner = 7;
    const stranger = 8;
    const page = { page: 1, perPage: 20 };
    const deep = { page: 4, perPage: 20 };
    const filesQueries = makeFilesQueries(filesStore, 'http://plans.test');
    // The analytics windows end with the seeded activity (a minute per file from 2026-01-01).
    const statsQueries = makeStatsQueries(statsStore, { publicBaseUrl: 'http://plans.test', now: () => new Date(at(files)) });
    // A file of `owner` (f % users = owner - 1), neither disabled (f % 7) nor deleted (f % 11) below,
    // whatever the number of users (api-daily of one file answers File not found for a deleted one).
    let target = fx.users * 3 + owner - 1;
    while (target % 7 === 0 || target % 11 === 0) target += fx.users;
    const fileV = (await events.readStream(streamIds.file(target))).length;

    const reopened = await record('docs-command: opening the event store', () => openMongoEventStore(commandDb));
    await reopened.close();
    await record('docs-command: a command loads its stream', () => events.readStream(streamIds.file(target)));
    await record('docs-command: a command loads a stream past its cache', () => events.readStream(streamIds.file(target), 1));
    await record('docs-command: next id', async () => { for (let i = 0; i < 25; i++) await events.nextId('comment'); });
    await record('docs-command: append (head check, insert)', () => events.append(streamIds.file(target), fileV, [
      cloudEvent('docs.comment.posted.v1', streamIds.file(target), fileV + 1,
        { commentId: 10_000_000, fileId: target, fileOwnerId: owner, fileTitle: `notes ${target}`, authorId: stranger, comment: 'again', postedAt: at(files) }, files),
    ]));
    await record('docs-command: append conflict', () => events.append(streamIds.file(target), fileV, [
      cloudEvent('docs.comment.posted.v1', streamIds.file(target), fileV + 1,
        { commentId: 10_000_001, fileId: target, fileOwnerId: owner, fileTitle: `notes ${target}`, authorId: stranger, comment: 'lost', postedAt: at(files) }, files),
    ]).catch(() => null));
    await record('docs-command: register (email claim)', async () => {
      await claims.get('account', 'user7@plans.test');
      await claims.claim('account', 'new@plans.test', { userId: 1_000_000 });
    });
    await record('docs-command: login (account claim)', () => claims.get('account', 'user7@plans.test'));
    await record('docs-command: idempotency key (begin, complete)', async () => {
      const begun = await keys.begin('7/fresh-key', Date.now(), 30_000);
      if (begun.state === 'started') {
        await keys.complete('7/fresh-key', begun.token, { fingerprint: 'f', answer: { status: 201, headers: {}, body: '{}' }, expiresAt: Date.now() + 86_400_000 });
      }
    });
    await record('docs-command: idempotency key replayed', () => keys.begin(`${(1 % fx.users) + 1}/key-1`, Date.now(), 30_000));
    await record('docs-command: storage quota (an upload: reserve, resize, pend, settle)', async () => {
      const held = await ledger.reserve(owner, 'plans-hold', 4096, 1024 ** 3);
      if (held.held > 0 && await ledger.resize(owner, 'plans-hold', 4000, 1024 ** 3)) {
        await ledger.pend(owner, { kind: 'upload', fileId: 10_000_000, bytes: 4000 }, 'plans-hold');
        await ledger.settle(owner, { kind: 'upload', fileId: 10_000_000 });
      }
    });
    await record('docs-command: storage quota (usage)', () => ledger.usage(owner));
    await record('docs-command: api-purchases', () => filesQueries.purchasesOf(owner, page));
    await record('api-files, the owner', () => filesQueries.filesOf(owner, owner, page));
    await record('api-files, the owner, page 4', () => filesQueries.filesOf(owner, owner, deep));
    await record('api-files, someone else', () => filesQueries.filesOf(owner, stranger, page));
    await record('api-comments', () => filesQueries.commentsReceivedBy(owner, page));
    await record('erasure: the owner\'s files, a page after another', () => filesQueries.fileIdsOf(owner, target, 8));
    await record('erasure: comments written, counted', () => filesQueries.countCommentsBy(owner));
    await record('export: comments written', () => filesQueries.commentsWrittenBy(owner));
    await record('erasure: the author\'s comments redacted (files projector)', () => filesStore.updateWhere('comments', { author_id: owner }, { comment: '[deleted]' }));
    await record('api-categories', () => filesQueries.categories(page));
    await record('api-stats', () => statsQueries.statsOf(owner));
    await record('api-daily, 366 days', () => statsQueries.daily(owner, { from: '2025-01-01', to: '2026-01-01' }));
    await record('api-daily, one file', () => statsQueries.daily(owner, { from: '2025-12-20', to: '2026-01-20', fileId: target }));
    await record('api-top', () => statsQueries.top(owner, { metric: 'views', days: 30, limit: 10 }));
    await record('api-trending', () => statsQueries.trending({ hours: 24, limit: 10 }));
    await record('docs-command: bytes-stored metric (the ledger recounted)', () => ledger.total());
    await record('a read waiting for its token', () => checkpoints.low('files-projector', PARTITIONS));
    await record('the read model generation', () => readPointer(readDb, 'files'));
    // The projectors: the append above, and an update, a purchase, a disabling and a deletion of another file.
    const other = fx.users * 5 + owner - 1;
    const otherV = (await events.readStream(streamIds.file(other))).length;
    await events.append(streamIds.file(other), otherV, [
      cloudEvent('docs.file.purchased.v1', streamIds.file(other), otherV + 1, { fileId: other, ownerId: owner, saleId: 10_000_000, buyerId: stranger, price: 3, purchasedAt: at(files) }, files),
      cloudEvent('docs.file.updated.v1', streamIds.file(other), otherV + 2, { fileId: other, ownerId: owner, changes: { enabled: false }, updatedAt: at(files) }, files),
      cloudEvent('docs.file.deleted.v1', streamIds.file(other), otherV + 3, { fileId: other, ownerId: owner, blobKey: `blobs/${other}`, deletedAt: at(files) }, files),
    ]);
    const newest = await record('the projectors: a batch (comment, purchase, disabling, deletion)', () => project(events, handlers, last, 1000));
    // Views and downloads recorded outside their files' streams: the stats handler's batch of them
    // (its one find per sketch collection), at positions past the log's (the handler reads none).
    await record('the stats projector: a batch of views and downloads', () => statsHandler(statsStore)(Array.from({ length: 200 }, (_, i) => {
      const fileId = fx.users * (1 + (i % 4)) + owner - 1;
      const data = i % 5 === 0
        ? { type: 'docs.file.downloaded.v2', data: { fileId, ownerId: owner, downloadedBy: stranger, downloadedAt: at(files) } }
        : { type: 'docs.file.viewed.v2', data: { fileId, ownerId: owner, viewer: `a:plans${i % 37}`, viewedAt: at(files) } };
      return { position: newest + 1 + i, event: cloudEvent(data.type, streamIds.file(fileId), 0, data.data, files) };
    })));
    await record('the projectors: checkpoint', () => checkpoints.record('files-projector', 0, newest));
    await record('rebuild: the log from the start', () => events.readAll(0, 1000));
    await record('rebuild: the log from the middle', () => events.readAll(Math.floor(last / 2), 1000));
    await record('docs-command: the log end', () => events.lastPosition());
    const outbox = mongoOutbox(commandDb);
    await record('the relay: nothing new', () => outbox.readAfter(newest, 256));
    await record('the relay: a batch', () => outbox.readAfter(last, 256));
    await record('the relay: backlog age', () => outbox.appendedAfter(last));
    await record('the relay: lease, checkpoint', async () => {
      relay = startOutboxRelay({ db: commandDb, publisher, logger: quiet, owner: 'plans-relay', batchSize: 256 });
      relay.notify();
      await untilPublished(relay, newest - last);
      await relay.stop();
    });
    await record('a lease changing hands', async () => {
      const lease = makeLease({ db: commandDb, name: 'plans', owner: 'a', leaseMs: 10_000 });
      await lease.hold();
      await lease.release();
      await makeLease({ db: commandDb, name: 'plans', owner: 'b', leaseMs: 10_000 }).hold();
    });
    await Promise.all([events.close(), claims.close(), keys.close(), filesStore.close(), statsStore.close()]);

    // ---- 3. explain -------------------------------------------------------------------------
    const seen = new Set<string>();
    const paths: PathPlan[] = [];
    for (const { path, event } of recorded) {
      for (const query of queriesOf(event)) {
        const key = `${path}\n${query.command}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const growing = !FIXED_SIZE.has(baseName(query.collection));
        const entry: PathPlan = {
          path, command: query.command, collection: query.collection, growing, planned: false, plan: [], indexes: [],
          scans: false, sorts: false, whole: query.whole, ms: null,
        };
        if (Object.keys(query.explain).length === 0) {
          paths.push(entry);
          continue;
        }
        entry.planned = true;
        try {
          const db = client.db(query.db);
          const explained = await db.command({ explain: query.explain, verbosity: 'queryPlanner' });
          entry.plan = planNodes(explained);
          entry.indexes = [...new Set(entry.plan.flatMap((n) => (n.index && !n.whole ? [n.index] : [])))];
          entry.scans = readsAll(entry.plan);
          entry.sorts = entry.plan.some((n) => SORTS.has(n.node));
          const times: number[] = [];
          for (let i = 0; i < 5; i++) {
            const t = performance.now();
            await db.command(query.explain.find !== undefined ? { ...query.explain, batchSize: 1000 } : query.explain);
            times.push(performance.now() - t);
          }
          entry.ms = Math.round(median(times) * 100) / 100;
        } catch (error) {
          entry.error = (error as Error).message;
        }
        paths.push(entry);
      }
    }
    const failures = paths.filter((p) => p.planned && p.growing && !p.whole && (p.scans || p.error !== undefined || p.plan.length === 0));
    return { server, seeded, paths, failures };
  } finally {
    if (options.keep) {
      log(`kept ${commandDb.databaseName} and ${readDb.databaseName}`);
    } else {
      await commandDb.dropDatabase().catch(() => {});
      await readDb.dropDatabase().catch(() => {});
    }
    await client.close();
  }
}

/** The report as docs/mongodb.md shows it: one line a query. */
export const formatReport = (report: PlansReport): string => {
  const lines = [`server: ${report.server}`, `seeded: ${report.seeded}`, ''];
  let path = '';
  for (const p of report.paths) {
    if (p.path !== path) {
      path = p.path;
      lines.push(path);
    }
    if (!p.planned) {
      lines.push(`  ${p.command}: no plan (unique indexes checked)`);
      continue;
    }
    const verdict = p.error ? `explain failed: ${p.error}`
      : p.scans ? (p.whole ? 'whole collection, by design' : p.growing ? 'WHOLE COLLECTION READ: a growing collection' : 'whole collection (fixed size)')
      : p.indexes.length > 0 ? `index ${p.indexes.join(', ')}` : 'no scan';
    lines.push(`  ${p.command}`);
    lines.push(`    ${showPlan(p.plan)}  => ${verdict}${p.sorts ? ', sorted after the scan' : ''}${p.ms === null ? '' : `; ${p.ms} ms`}`);
  }
  lines.push('', report.failures.length === 0
    ? 'every query on a growing collection is index-backed'
    : `${report.failures.length} queries on growing collections are not index-backed:\n${report.failures.map((p) => `  ${p.path}: ${p.command}`).join('\n')}`);
  return lines.join('\n');
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const url = process.env.MONGO_URL;
  if (!url) {
    console.error('MONGO_URL is not set');
    process.exit(2);
  }
  const report = await collectPlans(url, {
    files: Number(process.env.PLANS_FILES ?? 20_000),
    keep: process.argv.includes('--keep'),
    log: (line) => console.error(line),
  });
  console.log(process.argv.includes('--json') ? JSON.stringify(report, null, 2) : formatReport(report));
  process.exitCode = report.failures.length === 0 ? 0 : 1;
}
