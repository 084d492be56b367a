/**
 * The days' viewer salts in MongoDB (the distributed mode: every docs-command replica must hash
 * a visitor with the same salt). Collection `viewer_salts`, one document per day
 * `{_id: 'YYYY-MM-DD', salt: Binary(32 bytes), created_at: Date}`. A day's salt is created by
 * the first insert of the day (the `_id` refuses any other: a duplicate key is taken as "there is
 * one") and then read back, so replicas racing on a new day all get the winner's salt. Days before yesterday are deleted
 * whenever a salt is handed out; a TTL index on `created_at` (3 days) deletes them anyway if no
 * salt is asked for (a quiet deployment), created once per process on first use. `created_at` is
 * the real time of creation, not the injectable clock's: the TTL monitor runs on the server's clock.
 */
import { randomBytes } from 'node:crypto';
import { Binary, type Db } from 'mongodb';
import { checkSaltDay, oldestKeptDay, SALT_BYTES, type ViewerSalts, type ViewerSaltsOptions } from './viewer-key.ts';

interface SaltDoc { _id: string; salt: Binary; created_at: Date }

export const VIEWER_SALTS_COLLECTION = 'viewer_salts';
/** The TTL backstop: a salt is deleted by MongoDB's TTL monitor 3 days after it was created. */
export const SALT_TTL_SECONDS = 3 * 86_400;
const DUPLICATE_KEY = 11000;
const isDuplicate = (error: unknown): boolean => typeof error === 'object' && error !== null && 'code' in error && error.code === DUPLICATE_KEY;

export const makeMongoViewerSalts = (db: Db, options: ViewerSaltsOptions = {}): ViewerSalts => {
  const now = options.now ?? (() => new Date());
  const salts = db.collection<SaltDoc>(VIEWER_SALTS_COLLECTION);
  let indexed: Promise<unknown> | null = null;
  const ensureIndex = (): Promise<unknown> => {
    indexed ??= salts.createIndex({ created_at: 1 }, { name: 'created_at_ttl', expireAfterSeconds: SALT_TTL_SECONDS }).catch((error: unknown) => {
      indexed = null;
      throw error;
    });
    return indexed;
  };
  let closed = false;
  return {
    saltOf: async (day) => {
      if (closed) throw new Error('viewer salts closed');
      const oldest = oldestKeptDay(now());
      checkSaltDay(day, oldest);
      await ensureIndex();
      await salts.deleteMany({ _id: { $lt: oldest } });
      // Insert a fresh salt unless the day has one, then read the day's: whoever inserted first,
      // every replica reads the same. (Not one upsert returning the document: on the stand-in,
      // FerretDB, two concurrent first upserts each answered the salt it drew, one not stored.)
      try {
        await salts.insertOne({ _id: day, salt: new Binary(randomBytes(SALT_BYTES)), created_at: new Date() });
      } catch (error) {
        if (!isDuplicate(error)) throw error;
      }
      const stored = await salts.findOne({ _id: day }, { projection: { salt: 1 } });
      const salt = stored?.salt.value();
      if (!salt || salt.length !== SALT_BYTES) throw new Error(`viewer salt of ${day}: the stored document has no ${SALT_BYTES}-byte salt`);
      return Buffer.from(salt);
    },
    close: async () => {
      closed = true;
    },
  };
};
