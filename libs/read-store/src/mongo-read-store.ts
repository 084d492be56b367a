import { retrying } from '@docshare/contracts';
import { MongoBulkWriteError, MongoServerError } from 'mongodb';
import type { AnyBulkWriteOperation, Collection, Db, Document, Filter as MongoFilter, UpdateFilter } from 'mongodb';
import type { Doc, Filter, FindOptions, GuardedUpdate, ReadStore, Scalar } from './port.ts';
import { afterField, checkCount, checkGuardedUpdate, checkName, checkQueryField, checkSet, compareScalars, fieldsOf } from './validate.ts';

/*
 * Read models on MongoDB (and on its stand-in, FerretDB 2 on PostgreSQL + DocumentDB, which runs
 * this code path the same way). Read-model collection `c` is the collection `<prefix><c>`; each
 * document carries `_pos`, the position of the last update it applied (one number, whatever the
 * number of events that touched it). `applyBatch`:
 *
 * 1. groups the batch per document, in order, and merges each document's consecutive updates
 *    into as few writes as keep their meaning (mergeWrites): one write applies the updates at
 *    positions first..last;
 * 2. sends, round k holding every document's k-th write, one unordered bulkWrite per collection of
 *
 *      updateOne({ _id, _pos: { $not: { $gte: first } } },
 *                { $set: { ...set, _pos: last }, $inc, $setOnInsert }, { upsert: true })
 *
 *    "has applied nothing at `first` or later" (a missing `_pos` or document matches). When the
 *    document exists and has, nothing matches and the upsert's insert collides with its `_id`: a
 *    duplicate key (E11000) for that op alone, reported at its own index;
 * 3. settles each such document on its own (settle): reads its `_pos`, drops the updates at or
 *    below it and applies the rest with `{ _id, _pos: <what it read> }`, re-reading when that no
 *    longer matches. That is the batch overlapping an earlier, interrupted delivery of the same
 *    events: the common case (nothing applied yet) costs one upsert per document and round.
 *
 * Callers guarantee one writer per document (port.ts), so nothing needs transactions or
 * aggregation: every write is a single-document update the server applies atomically. A
 * duplicate key is told by its code (11000) alone, never by its text or `keyPattern` (which the
 * stand-in does not send). A bulk error that does not account for every op (a server that stopped
 * early) settles every op of that bulk: the documents stay exact, the count may come out short.
 *
 * Every find is sorted (by `_id` when the caller gives no order, which MongoDB serves from the `_id`
 * index): FerretDB 2.5 + DocumentDB 0.106, the stand-in, can return a document twice from an
 * unsorted find that spans more than one batch, on a collection whose documents were updated by
 * concurrent writers (measured: 339 documents of 300, 231 of 200; sorted finds were always exact).
 *
 * `clear` drops exactly the collections written under this prefix, which it finds in the
 * `read_store_collections` registry (so a prefix never touches another prefix's collections,
 * even when one prefix starts with the other), and forgets their indexes so the next write
 * recreates them.
 */

/**
 * An index of a read-model collection: fields in order, 1 ascending, -1 descending. Never unique:
 * a read model takes whatever the events say, and `applyBatch` reads a duplicate key as "already applied".
 */
export interface ReadModelIndex {
  name: string;
  key: [field: string, direction: 1 | -1][];
}

export interface MongoReadStoreOptions {
  /** Prepended to every read-model collection name (default ''). */
  prefix?: string;
  /**
   * Indexes per read-model collection (unprefixed name), created on the store's first write to
   * that collection (default none). The read model's queries say which: each projector declares
   * its own (services/<projector>/src/projector.ts).
   */
  indexes?: Readonly<Record<string, readonly ReadModelIndex[]>>;
}

const REGISTRY = 'read_store_collections';

interface RegistryDoc {
  _id: string;
  prefix: string;
  collection: string;
}

type StoredDoc = Document & { _id: string };

function toMongoFilter(filter: Filter): MongoFilter<StoredDoc> {
  const query: Record<string, unknown> = {};
  for (const [field, condition] of Object.entries(filter)) {
    checkName('filter field', field);
    checkQueryField('filter', field);
    if (condition !== null && typeof condition === 'object') {
      if (!Array.isArray(condition.in)) throw new Error(`filter on ${field}: expected a scalar or { in: [...] }`);
      query[field] = { $in: condition.in };
    } else {
      // Equality: Mongo matches a missing field to null and an array by its elements, as the port says.
      query[field] = condition;
    }
  }
  return query;
}

/** Reads never show the guard `_pos`. */
const HIDDEN = { _pos: 0 } as const;

function toDoc(stored: StoredDoc): Doc {
  const { _pos: _p, ...fields } = stored;
  return fields;
}

/** Consecutive updates of one document merged into one upsert, which applies them all or none. */
interface Write {
  /** Index, among the document's updates, of the first one merged here. */
  from: number;
  /** Positions of the first and the last update merged here. */
  first: number;
  last: number;
  /** How many updates it merges. */
  count: number;
  set: Record<string, unknown>;
  inc: Record<string, number>;
  setOnInsert: Record<string, unknown>;
}

/** The updates of one document in a batch, positions increasing, and their writes. */
interface Run {
  collection: string;
  id: string;
  updates: GuardedUpdate[];
  writes: Write[];
}

/** The run's write of `round`: a round only sends runs that have one. */
const writeOf = (run: Run, round: number): Write => {
  const write = run.writes[round];
  if (write === undefined) throw new Error(`read store: ${run.collection}/${run.id} has no write for round ${round}`);
  return write;
};

/** A distinct value, an array unwound one level (as Mongo's distinct does). */
const unwound = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

/** Integers add up exactly in any order; other numbers only in the order Mongo would add them. */
const exactSum = (a: number, b: number): boolean =>
  Number.isSafeInteger(a) && Number.isSafeInteger(b) && Number.isSafeInteger(a + b);

/**
 * The fewest writes that apply `updates` (one document's, positions increasing) as if one at a
 * time. Each next update joins the current write when every field it touches stays under one
 * operator there: `set` then `set` keeps the later value, `inc` then `inc` adds up (integers only,
 * so the sum is exactly the sequential one). Its `setOnInsert` is dropped: by then the write's
 * first update has upserted the document, so it would not apply. Anything else (a field `set` in
 * one and `inc`ed in the other, `setOnInsert` then `set`...) starts a new write there.
 */
function mergeWrites(updates: readonly GuardedUpdate[]): Write[] {
  const writes: Write[] = [];
  let write: Write | undefined;
  updates.forEach(({ update, position }, index) => {
    const set = Object.entries(update.set ?? {});
    const inc = Object.entries(update.inc ?? {});
    if (write) {
      const w = write;
      const fits = set.every(([name]) => !(name in w.inc) && !(name in w.setOnInsert))
        && inc.every(([name, by]) => !(name in w.set) && !(name in w.setOnInsert) && exactSum(w.inc[name] ?? 0, by));
      if (fits) {
        for (const [name, value] of set) w.set[name] = value;
        for (const [name, by] of inc) w.inc[name] = (w.inc[name] ?? 0) + by;
        w.last = position;
        w.count++;
        return;
      }
    }
    write = {
      from: index, first: position, last: position, count: 1,
      set: Object.fromEntries(set), inc: Object.fromEntries(inc), setOnInsert: { ...update.setOnInsert },
    };
    writes.push(write);
  });
  return writes;
}

/** A top-level undefined is stored as null, as the driver would (it would otherwise drop the field). */
const nullForUndefined = (fields: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(fields).map(([name, value]) => [name, value === undefined ? null : value]));

function toMongoUpdate(write: Write): UpdateFilter<StoredDoc> {
  const update: Document = { $set: { ...nullForUndefined(write.set), _pos: write.last } };
  if (Object.keys(write.inc).length > 0) update['$inc'] = write.inc;
  if (Object.keys(write.setOnInsert).length > 0) update['$setOnInsert'] = nullForUndefined(write.setOnInsert);
  return update;
}

const isDuplicateKey = (error: unknown): boolean => error instanceof MongoServerError && error.code === 11000;

/** The position a stored document applied last; undefined when it has none (a missing document has applied nothing). */
const positionOf = (doc: Document | null | undefined): number | undefined =>
  typeof doc?.['_pos'] === 'number' ? (doc['_pos']) : undefined;

/** How many times `settle` re-reads a document whose `_pos` moved under it before giving up. */
const SETTLE_ATTEMPTS = 5;
/** A guarded write that matched nothing: the document changed under it; read its `_pos` again. */
class Unsettled extends Error {
  constructor() {
    super('the document changed under a guarded write');
  }
}

/** A MongoDB read store on `db`; `ensureIndexes` creates the configured indexes now (services call it at start). `close` leaves the client open: its owner closes it. */
export type MongoReadStore = ReadStore & { ensureIndexes(): Promise<void> };

export function makeMongoReadStore(db: Db, options: MongoReadStoreOptions = {}): MongoReadStore {
  const prefix = options.prefix ?? '';
  const indexes = options.indexes ?? {};
  if (typeof prefix !== 'string' || prefix.includes('$') || prefix.includes('\u0000')) {
    throw new Error(`invalid read-store prefix ${JSON.stringify(prefix)}`);
  }
  const registry = db.collection<RegistryDoc>(REGISTRY);

  const fullName = (collection: string): string => {
    if (typeof collection !== 'string' || collection === '' || collection.includes('$') || collection.includes('\u0000')) {
      throw new Error(`invalid collection name ${JSON.stringify(collection)}`);
    }
    const name = prefix + collection;
    if (name === REGISTRY || name.startsWith('system.')) throw new Error(`collection name ${name} is reserved`);
    return name;
  };
  const collectionOf = (collection: string): Collection<StoredDoc> => db.collection<StoredDoc>(fullName(collection));

  /** Collections this store has registered (and indexed) since it was made or last cleared. */
  const prepared = new Map<string, Promise<void>>();
  const prepare = (collection: string): Promise<void> => {
    let ready = prepared.get(collection);
    if (!ready) {
      ready = (async () => {
        try {
          // '$' cannot be in a prefix or a collection name, so the id is unambiguous.
          await registry.insertOne({ _id: `${prefix}$${collection}`, prefix, collection });
        } catch (error) {
          if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
        }
        const wanted = indexes[collection] ?? [];
        if (wanted.length === 0) return;
        const target = collectionOf(collection);
        const existing = new Set<string>();
        try {
          for (const index of await target.indexes()) if (typeof index.name === 'string') existing.add(index.name);
        } catch (error) {
          if (!(error instanceof MongoServerError && error.code === 26)) throw error;
        }
        const missing = wanted.filter((index) => !existing.has(index.name));
        if (missing.length > 0) {
          await target.createIndexes(missing.map((index) => ({ key: Object.fromEntries(index.key), name: index.name })));
        }
      })();
      prepared.set(collection, ready);
      ready.catch(() => prepared.delete(collection));
    }
    return ready;
  };

  /**
   * Applies what `run` still lacks from its update `from` on, given the `_pos` its document was
   * read with: the slow path after a duplicate key. Each write is guarded by the exact `_pos` the
   * previous one left (or its absence), so a document that changed under it is read again.
   * Returns how many updates applied.
   */
  const settle = async (run: Run, from: number, read: { at: number | undefined }): Promise<number> => {
    const target = collectionOf(run.collection);
    const updates = run.updates.slice(from);
    let applied = 0;
    try {
      return await retrying(async (attempt) => {
        let at = read.at;
        if (attempt > 1) {
          const found = await target.findOne({ _id: run.id }, { projection: { _pos: 1 } });
          at = positionOf(found);
        }
        const rest = updates.filter(({ position }) => at === undefined || position > at);
        for (const write of mergeWrites(rest)) {
          const filter = at === undefined ? { _id: run.id, _pos: { $exists: false } } : { _id: run.id, _pos: at };
          const result = await target.updateOne(filter, toMongoUpdate(write), { upsert: at === undefined }).catch((error: unknown) => {
            throw isDuplicateKey(error) ? new Unsettled() : error;
          });
          if (result.matchedCount + result.upsertedCount === 0) throw new Unsettled();
          applied += write.count;
          at = write.last;
        }
        return applied;
      }, { attempts: SETTLE_ATTEMPTS, baseMs: 0, capMs: 0, retryIf: (error) => error instanceof Unsettled });
    } catch (error) {
      if (!(error instanceof Unsettled)) throw error;
      throw new Error(`cannot apply updates to ${run.collection}/${run.id}: its _pos kept changing (another writer?)`);
    }
  };

  /**
   * Settles the runs of one collection refused in a round (each from that round's write on): ONE
   * read of their documents' `_pos`, then only the documents that still lack something are
   * written. A whole redelivery (everything applied before) costs that one read.
   */
  const settleAll = async (collection: string, refused: readonly { run: Run; from: number }[]): Promise<number> => {
    const found = await collectionOf(collection)
      .find({ _id: { $in: refused.map(({ run }) => run.id) } }, { projection: { _pos: 1 } }).sort({ _id: 1 }).toArray();
    const positions = new Map(found.map((doc) => [doc._id, positionOf(doc)]));
    const counts = await Promise.all(refused.map(({ run, from }) => settle(run, from, { at: positions.get(run.id) })));
    return counts.reduce((sum, count) => sum + count, 0);
  };

  /**
   * Sends the round's write of each run (all of one collection) as one unordered bulkWrite.
   * Returns how many updates applied, and the runs that hit a duplicate key (to settle).
   */
  const sendRound = async (collection: string, runs: Run[], round: number): Promise<{ applied: number; refused: Run[] }> => {
    const ops: AnyBulkWriteOperation<StoredDoc>[] = runs.map((run) => {
      const write = writeOf(run, round);
      return { updateOne: { filter: { _id: run.id, _pos: { $not: { $gte: write.first } } }, update: toMongoUpdate(write), upsert: true } };
    });
    let failed = new Set<number>();
    try {
      await collectionOf(collection).bulkWrite(ops, { ordered: false });
    } catch (error) {
      if (!(error instanceof MongoBulkWriteError)) throw error;
      const errors = error.result.getWriteErrors();
      // Anything but "already applied" (e.g. an inc of a text field) fails the batch.
      if (errors.length === 0 || errors.some((e) => e.code !== 11000)) throw error;
      const told = error.result.matchedCount + error.result.upsertedCount + errors.length;
      // Every op accounted for, each failure at its own index; otherwise settle them all.
      failed = told === ops.length ? new Set(errors.map((e) => e.index)) : new Set(ops.keys());
    }
    let applied = 0;
    const refused: Run[] = [];
    for (const [i, run] of runs.entries()) {
      if (failed.has(i)) refused.push(run);
      else applied += writeOf(run, round).count;
    }
    return { applied, refused };
  };

  return {
    ensureIndexes: async () => {
      for (const collection of Object.keys(indexes)) await prepare(collection);
    },

    async applyBatch(updates: readonly GuardedUpdate[]): Promise<number> {
      for (const guarded of updates) {
        checkGuardedUpdate(guarded);
        fullName(guarded.collection);
      }
      // Per document, in order. An update at or below an earlier position of its document in the
      // batch would be skipped (the document has applied that one, or something later): drop it.
      const runs = new Map<string, Run>();
      for (const guarded of updates) {
        const key = `${guarded.collection}\u0000${guarded.id}`;
        let run = runs.get(key);
        if (!run) runs.set(key, (run = { collection: guarded.collection, id: guarded.id, updates: [], writes: [] }));
        const previous = run.updates[run.updates.length - 1];
        if (!previous || guarded.position > previous.position) run.updates.push(guarded);
      }
      if (runs.size === 0) return 0;
      for (const run of runs.values()) run.writes = mergeWrites(run.updates);
      await Promise.all([...new Set(updates.map((guarded) => guarded.collection))].map(prepare));

      let applied = 0;
      let pending = [...runs.values()];
      // Round k sends every document's k-th write: the writes of one document go in order.
      for (let round = 0; pending.length > 0; round++) {
        const byCollection = new Map<string, Run[]>();
        for (const run of pending) {
          const list = byCollection.get(run.collection);
          if (list) list.push(run);
          else byCollection.set(run.collection, [run]);
        }
        const sent = await Promise.all([...byCollection].map(async ([collection, list]) => {
          const { applied: count, refused } = await sendRound(collection, list, round);
          // A refused document settles everything it has left, from this round's write on.
          const settled = refused.length === 0 ? 0
            : await settleAll(collection, refused.map((run) => ({ run, from: writeOf(run, round).from })));
          return { count: count + settled, refused };
        }));
        const refused = new Set(sent.flatMap(({ refused: runs }) => runs));
        for (const { count } of sent) applied += count;
        pending = pending.filter((run) => !refused.has(run) && run.writes.length > round + 1);
      }
      return applied;
    },

    async get(collection: string, id: string): Promise<Doc | null> {
      const found = await collectionOf(collection).findOne({ _id: id }, { projection: HIDDEN });
      return found ? toDoc(found) : null;
    },

    async find(collection: string, filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
      const target = collectionOf(collection);
      const query = toMongoFilter(filter);
      const skip = checkCount('skip', options.skip) ?? 0;
      const limit = checkCount('limit', options.limit);
      for (const [field, direction] of options.sort ?? []) {
        checkName('sort field', field);
        checkQueryField('sort', field);
        if (direction !== 1 && direction !== -1) throw new Error(`sort direction of ${field} must be 1 or -1`);
      }
      const only = fieldsOf(options.fields);
      const after = afterField(filter, options.sort, options.after);
      // $gt/$lt compare within the value's type only, as the port says; the field is not in the filter (afterField).
      if (after) (query as Record<string, unknown>)[after.field] = { [after.direction === 1 ? '$gt' : '$lt']: after.value };
      // Mongo reads limit 0 as "no limit"; the port means "no documents".
      if (limit === 0) return [];
      // Always sorted, by `_id` when the caller gives no order: the stand-in's unsorted cursors can
      // hand a document out twice once it spans more than one batch (see the header).
      const sort: FindOptions['sort'] = options.sort && options.sort.length > 0 ? options.sort : [['_id', 1]];
      // An inclusion projection leaves `_pos` out as HIDDEN does (`_id` named: an empty one would mean every field).
      const projection = only ? { _id: 1, ...Object.fromEntries([...only].map((field) => [field, 1])) } : HIDDEN;
      let cursor = target.find(query, { projection }).sort(sort);
      if (skip > 0) cursor = cursor.skip(skip);
      if (limit !== undefined) cursor = cursor.limit(limit);
      return (await cursor.toArray()).map(toDoc);
    },

    async count(collection: string, filter: Filter): Promise<number> {
      return collectionOf(collection).countDocuments(toMongoFilter(filter));
    },

    async updateWhere(collection: string, filter: Filter, set: Record<string, unknown>): Promise<number> {
      const query = toMongoFilter(filter);
      checkSet(set);
      // `_pos` neither matched nor set: unguarded, and a later guarded update is judged as before.
      const result = await collectionOf(collection).updateMany(query, { $set: nullForUndefined(set) });
      return result.matchedCount;
    },

    async distinct(collection: string, field: string, filter: Filter): Promise<Scalar[]> {
      checkName('distinct field', field);
      checkQueryField('distinct', field);
      const values: unknown[] = await collectionOf(collection).distinct(field, toMongoFilter(filter));
      // Mongo gives no order, and would give nulls and objects: the port's scalars, in its order.
      // An array value is unwound here too, for a server whose distinct does not (one level, as Mongo).
      const scalars = new Set(values.flatMap((v) => unwound(v))
        .filter((v): v is Exclude<Scalar, null> => typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean'));
      return [...scalars].sort(compareScalars);
    },

    async clear(): Promise<void> {
      const registered = await registry.find({ prefix }).toArray();
      for (const { collection } of registered) {
        try {
          await db.collection(prefix + collection).drop();
        } catch (error) {
          // Registered but never created (or already dropped).
          if (!(error instanceof MongoServerError && error.code === 26)) throw error;
        }
      }
      prepared.clear();
    },

    async close(): Promise<void> {},
  };
}
