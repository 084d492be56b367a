import { MongoServerError } from 'mongodb';
import type { Db } from 'mongodb';
import type { DataKeyStore, StoredKey, WrappedKey } from './port.ts';

/*
 * Data keys on MongoDB (and on its stand-in, FerretDB): collection `data_keys` in the command
 * database, one document per key id:
 *   { _id: id, state: 'live', wrapped: {kid, iv, ct, tag} }   or
 *   { _id: id, state: 'destroyed', destroyedAt }               (the tombstone: the key is never made again)
 * First create wins because a create is one insert and `_id` is unique (a loser, told by the
 * duplicate-key code alone, reads the winner's document). Destroying replaces the whole document
 * by the tombstone, so the wrapped bytes leave the collection (the storage engine reuses their
 * space; they are not in any later backup); a second destroy keeps the first time. Rewrapping is
 * one update whose filter holds the expected kid and ciphertext, so of two rotations racing one wins.
 * No transactions, no change streams.
 */

const DATA_KEYS = 'data_keys';
const DUPLICATE_KEY = 11000;

/** One flat shape (the driver's typed filters and replacements do not distribute over a union). */
interface KeyDoc { _id: string; state: 'live' | 'destroyed'; wrapped?: WrappedKey; destroyedAt?: string }

const isDuplicate = (error: unknown): boolean => error instanceof MongoServerError && error.code === DUPLICATE_KEY;
const copyWrapped = ({ kid, iv, ct, tag }: WrappedKey): WrappedKey => ({ kid, iv, ct, tag });
const toKey = (doc: KeyDoc): StoredKey => {
  if (doc.state === 'live' && doc.wrapped !== undefined) return { state: 'live', wrapped: copyWrapped(doc.wrapped) };
  if (doc.state === 'destroyed' && typeof doc.destroyedAt === 'string') return { state: 'destroyed', destroyedAt: doc.destroyedAt };
  throw new Error(`data key ${doc._id}: not a stored key`);
};

/** A DataKeyStore on `db`. `close` leaves the client open: its owner closes it. */
export async function openMongoKeyStore(db: Db): Promise<DataKeyStore> {
  const keys = db.collection<KeyDoc>(DATA_KEYS);
  let closed = false;
  const assertOpen = (): void => {
    if (closed) throw new Error('data key store is closed');
  };

  return {
    async get(ids) {
      assertOpen();
      const found = new Map<string, StoredKey>();
      if (ids.length === 0) return found;
      for (const doc of await keys.find({ _id: { $in: [...new Set(ids)] } }).toArray()) found.set(doc._id, toKey(doc));
      return found;
    },

    async create(id, wrapped) {
      assertOpen();
      const doc = { _id: id, state: 'live' as const, wrapped: copyWrapped(wrapped) };
      try {
        await keys.insertOne(doc);
        return toKey(doc);
      } catch (error) {
        if (!isDuplicate(error)) throw error;
      }
      // Keys are never removed (a destroy leaves a tombstone), so the winner's document is there.
      const existing = await keys.findOne({ _id: id });
      if (existing === null) throw new Error(`data key ${id} collided with a key that cannot be read back`);
      return toKey(existing);
    },

    async destroy(id, at) {
      assertOpen();
      try {
        // Matches a live key (replaced) or nothing (upserted); a tombstone is left alone: the
        // upsert then collides on `_id`, which means the key is destroyed already.
        await keys.replaceOne({ _id: id, state: 'live' }, { state: 'destroyed', destroyedAt: at }, { upsert: true });
      } catch (error) {
        if (!isDuplicate(error)) throw error;
        // A duplicate key can also be a live key created between the match and the insert: look.
        const existing = await keys.findOne({ _id: id }, { projection: { state: 1 } });
        if (existing?.state !== 'destroyed') {
          await keys.replaceOne({ _id: id, state: 'live' }, { state: 'destroyed', destroyedAt: at });
        }
      }
    },

    async rewrap(id, expected, next) {
      assertOpen();
      const result = await keys.updateOne(
        { _id: id, state: 'live', 'wrapped.kid': expected.kid, 'wrapped.ct': expected.ct },
        { $set: { wrapped: copyWrapped(next) } },
      );
      return result.matchedCount === 1;
    },

    async list(after, limit) {
      assertOpen();
      if (limit <= 0) return [];
      const filter = after === null ? {} : { _id: { $gt: after } };
      const docs = await keys.find(filter).sort({ _id: 1 }).limit(limit).toArray();
      return docs.map((doc) => ({ id: doc._id, key: toKey(doc) }));
    },

    async close() {
      closed = true;
    },
  };
}
