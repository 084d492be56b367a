import type { Db } from 'mongodb';
import type { StorageLedger, StorageLedgerOptions } from './port.ts';
import { emptyRecord, makeLedger, type LedgerRecords, type UserRecord } from './record.ts';

/** A user's record as stored: `_id` the user id, `v` its version (compare-and-set). */
interface LedgerDoc extends UserRecord { _id: number; v: number }
interface MarkDoc { _id: string; seededAt: Date }

const DUPLICATE_KEY = 11000;
const isDuplicate = (error: unknown): boolean => typeof error === 'object' && error !== null && 'code' in error && error.code === DUPLICATE_KEY;

/**
 * The records in MongoDB: collection `storage_ledger`, one document per user, each step one
 * `find` by `_id` and one insert or `updateOne({_id, v})` (no transaction); the seeding mark in
 * `storage_ledger_meta`.
 */
export const mongoLedgerRecords = (db: Db): LedgerRecords => {
  const users = db.collection<LedgerDoc>('storage_ledger');
  const meta = db.collection<MarkDoc>('storage_ledger_meta');
  let closed = false;
  const open = (): void => {
    if (closed) throw new Error('storage ledger closed');
  };
  return {
    read: async (userId) => {
      open();
      const doc = await users.findOne({ _id: userId });
      if (!doc) return { record: emptyRecord(), version: 0 };
      return { record: { used: doc.used, entries: doc.entries, recent: doc.recent }, version: doc.v };
    },
    write: async (userId, version, record) => {
      open();
      const doc = { used: record.used, entries: record.entries, recent: record.recent, v: version + 1 };
      if (version === 0) {
        try {
          await users.insertOne({ _id: userId, ...doc });
          return true;
        } catch (error) {
          if (isDuplicate(error)) return false;
          throw error;
        }
      }
      return (await users.updateOne({ _id: userId, v: version }, { $set: doc })).matchedCount === 1;
    },
    total: async () => {
      open();
      const [sum] = await users.aggregate<{ total: number }>([{ $group: { _id: null, total: { $sum: '$used' } } }]).toArray();
      return sum?.total ?? 0;
    },
    seed: async (count) => {
      open();
      if (await meta.findOne({ _id: 'seeded' })) return false;
      for (const [userId, used] of await count()) {
        // A user who already has a record (written since) keeps it: the seed only fills in.
        await users.updateOne({ _id: userId }, { $setOnInsert: { used, entries: {}, recent: [], v: 1 } }, { upsert: true });
      }
      try {
        await meta.insertOne({ _id: 'seeded', seededAt: new Date() });
      } catch (error) {
        if (isDuplicate(error)) return false;
        throw error;
      }
      return true;
    },
    close: async () => {
      closed = true;
    },
  };
};

export const openMongoStorageLedger = async (db: Db, options: StorageLedgerOptions): Promise<StorageLedger> =>
  makeLedger(mongoLedgerRecords(db), options);
