import { MongoServerError } from 'mongodb';
import type { Collection, Db, Document, Filter as MongoFilter, Sort, UpdateFilter } from 'mongodb';
import type { Doc, Filter, FindOptions, Guard, ReadStore, Update } from './port.ts';
import { checkCount, checkName, checkUpdate } from './validate.ts';
import { makeKeyedQueue } from '@docshare/contracts';

/*
 * Read models on MongoDB (or FerretDB 1.x). Read-model collection `c` is the collection
 * `<prefix><c>`; each document carries `_seen: { <stream>: <version> }`, the newest version of
 * every stream it reflects. An update is one upsert:
 *
 *   updateOne({ _id, '_seen.<stream>': { $not: { $gte: version } } },
 *             { $set: { ...set, '_seen.<stream>': version }, $inc, $setOnInsert }, { upsert: true })
 *
 * The filter reads "has not seen this stream at this version or later" (a missing entry matches).
 * If the document exists and has seen it, nothing matches and the upsert's insert collides with
 * the existing `_id`: that duplicate key means "already applied" (false). Of concurrent duplicates
 * on a new document one insert wins; the others collide. Nothing here needs transactions or
 * aggregation; `$not`, dotted `$set` paths, upserts and exclusion projections all work on FerretDB.
 *
 * FerretDB 1.x runs an update as read-then-write (docs/mongodb.md), so two updates of ONE
 * document at the same moment can lose one of them there (MongoDB applies each atomically). This
 * store therefore applies the updates of one document one at a time within a process: one
 * projector replica per read model is safe on FerretDB; several need real MongoDB.
 *
 * `clear` drops exactly the collections written under this prefix, which it finds in the
 * `read_store_collections` registry (so a prefix never touches another prefix's collections,
 * even when one prefix starts with the other), and forgets their indexes so the next write
 * recreates them.
 */

/**
 * An index of a read-model collection: fields in order, 1 ascending, -1 descending. Never unique:
 * a read model takes whatever the events say, and `apply` reads a duplicate key as "already applied".
 */
export interface ReadModelIndex {
  name: string;
  key: [field: string, direction: 1 | -1][];
}

/**
 * The indexes the docshare read models' queries need (services/files-projector/src/queries.ts):
 * a user's file list (owner's view, and others' view of enabled files) newest first, files by id,
 * received comments newest first, a file's comments, categories by id. Stats documents are read by `_id` only.
 */
export const DOCSHARE_READ_MODEL_INDEXES: Readonly<Record<string, readonly ReadModelIndex[]>> = {
  files: [
    { name: 'owner_listing', key: [['owner_id', 1], ['deleted', 1], ['uploaded_at', -1], ['file_id', -1]] },
    { name: 'visible_listing', key: [['owner_id', 1], ['deleted', 1], ['enabled', 1], ['uploaded_at', -1], ['file_id', -1]] },
    { name: 'file_id', key: [['file_id', 1]] },
  ],
  // `file_id`: a file's deletion marks its comments (services/files-projector/src/projection.ts).
  comments: [
    { name: 'received', key: [['file_owner_id', 1], ['posted_at', -1], ['comment_id', -1]] },
    { name: 'file_id', key: [['file_id', 1]] },
  ],
  categories: [{ name: 'category_id', key: [['category_id', 1]] }],
};

export interface MongoReadStoreOptions {
  /** Prepended to every read-model collection name (default ''). */
  prefix?: string;
  /**
   * Indexes per read-model collection (unprefixed name), created on the store's first write to
   * that collection (default DOCSHARE_READ_MODEL_INDEXES; `{}` for none).
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
    if (field === '_seen') throw new Error('cannot filter on _seen');
    if (condition !== null && typeof condition === 'object') {
      if (!Array.isArray(condition.in)) throw new Error(`filter on ${field}: expected a scalar or { in: [...] }`);
      query[field] = { $in: condition.in };
    } else {
      // Equality: Mongo matches a missing field to null and an array by its elements, as the port says.
      query[field] = condition;
    }
  }
  return query as MongoFilter<StoredDoc>;
}

function toDoc(stored: StoredDoc): Doc {
  const { _seen: _ignored, ...fields } = stored;
  return fields as Doc;
}

/** A ReadStore on `db`. `close` leaves the client open: its owner closes it. */
/** A MongoDB read store; `ensureIndexes` creates the configured indexes now (services call it at start). */
export type MongoReadStore = ReadStore & { ensureIndexes(): Promise<void> };

export function makeMongoReadStore(db: Db, options: MongoReadStoreOptions = {}): MongoReadStore {
  const prefix = options.prefix ?? '';
  const indexes = options.indexes ?? DOCSHARE_READ_MODEL_INDEXES;
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
          await registry.insertOne({ _id: `${prefix}\u0000${collection}`, prefix, collection });
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
        // One at a time: FerretDB 1.24 drops the connection on a multi-index createIndexes of existing indexes.
        for (const index of wanted) {
          if (!existing.has(index.name)) {
            await target.createIndex(Object.fromEntries(index.key), { name: index.name });
          }
        }
      })();
      prepared.set(collection, ready);
      ready.catch(() => prepared.delete(collection));
    }
    return ready;
  };

  // Updates of one document run one after another (see the header: FerretDB updates are not atomic).
  const serialized = makeKeyedQueue();

  return {
    ensureIndexes: async () => {
      for (const collection of Object.keys(indexes)) await prepare(collection);
    },
    async apply(collection: string, id: string, update: Update, guard: Guard): Promise<boolean> {
      const target = collectionOf(collection);
      if (typeof id !== 'string') throw new Error('document id must be a string');
      checkUpdate(update, guard);

      const seen = `_seen.${guard.stream}`;
      const set: Record<string, unknown> = { [seen]: guard.version };
      for (const [name, value] of Object.entries(update.set ?? {})) set[name] = value === undefined ? null : value;
      const mongoUpdate: Record<string, unknown> = { $set: set };
      if (update.inc && Object.keys(update.inc).length > 0) mongoUpdate['$inc'] = { ...update.inc };
      if (update.setOnInsert && Object.keys(update.setOnInsert).length > 0) {
        mongoUpdate['$setOnInsert'] = Object.fromEntries(
          Object.entries(update.setOnInsert).map(([name, value]) => [name, value === undefined ? null : value]),
        );
      }
      const filter = { _id: id, [seen]: { $not: { $gte: guard.version } } } as MongoFilter<StoredDoc>;

      await prepare(collection);
      return serialized(`${fullName(collection)}\u0000${id}`, async () => {
        const upsert = async () => {
          try {
            return await target.updateOne(filter, mongoUpdate as UpdateFilter<StoredDoc>, { upsert: true });
          } catch (error) {
            // Another writer (a replica) may have inserted the document between our match and our
            // insert: then it exists and the update must be tried once more as a plain match.
            if (error instanceof MongoServerError && error.code === 11000) {
              return await target.updateOne(filter, mongoUpdate as UpdateFilter<StoredDoc>, { upsert: true });
            }
            throw error;
          }
        };
        try {
          const result = await upsert();
          if (result.upsertedCount > 0) {
            // FerretDB 1.x drops null values of $setOnInsert: put them in, where still missing.
            for (const [name, value] of Object.entries(update.setOnInsert ?? {})) {
              if (value !== undefined && value !== null) continue;
              await target.updateOne({ _id: id, [name]: { $exists: false } } as MongoFilter<StoredDoc>, { $set: { [name]: null } });
            }
          }
          return result.upsertedCount > 0 || result.matchedCount > 0;
        } catch (error) {
          // The document exists and has seen this stream at this version or later.
          if (error instanceof MongoServerError && error.code === 11000) return false;
          throw error;
        }
      });
    },

    async get(collection: string, id: string): Promise<Doc | null> {
      const found = await collectionOf(collection).findOne({ _id: id }, { projection: { _seen: 0 } });
      return found ? toDoc(found) : null;
    },

    async find(collection: string, filter: Filter, options: FindOptions = {}): Promise<Doc[]> {
      const target = collectionOf(collection);
      const query = toMongoFilter(filter);
      const skip = checkCount('skip', options.skip) ?? 0;
      const limit = checkCount('limit', options.limit);
      for (const [field, direction] of options.sort ?? []) {
        checkName('sort field', field);
        if (direction !== 1 && direction !== -1) throw new Error(`sort direction of ${field} must be 1 or -1`);
      }
      // Mongo reads limit 0 as "no limit"; the port means "no documents".
      if (limit === 0) return [];
      let cursor = target.find(query, { projection: { _seen: 0 } });
      if (options.sort && options.sort.length > 0) cursor = cursor.sort(options.sort as Sort);
      if (skip > 0) cursor = cursor.skip(skip);
      if (limit !== undefined) cursor = cursor.limit(limit);
      return (await cursor.toArray()).map(toDoc);
    },

    async count(collection: string, filter: Filter): Promise<number> {
      return collectionOf(collection).countDocuments(toMongoFilter(filter));
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
