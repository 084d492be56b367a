import { MongoServerError } from 'mongodb';
import type { Db } from 'mongodb';
import type { ClaimStore } from './port.ts';

/*
 * Claims on MongoDB (or FerretDB 1.x): collection `claims`, one document per claimed key:
 *   _id        "<scope>/<key>"   scopes may not contain '/', so the split is unambiguous (claims made
 *              before this format, "<scope>\u0000<key>", are still read: PostgreSQL-backed FerretDB
 *              cannot store a NUL, so new ones do not use it)
 *   scope, key the two halves, for people reading the collection
 *   value      the value as JSON text: FerretDB 1.x refuses nested arrays inside documents, and
 *              JSON text gives back exactly what was claimed, as the file store does
 *   claimedAt  when
 * First claim wins because a claim is one insert and `_id` is unique: of concurrent inserts of one
 * key exactly one succeeds, on both servers (unlike an upsert-and-read, which FerretDB 1.x does
 * not run atomically). A loser reads the winner's value. Every operation is an insert or a lookup
 * by string `_id`: the one query shape FerretDB 1.x answers without scanning the collection.
 */

const CLAIMS = 'claims';

interface ClaimDoc {
  _id: string;
  scope: string;
  key: string;
  value: string;
  claimedAt: Date;
}

const claimId = (scope: string, key: string): string => `${scope}/${key}`;
const legacyClaimId = (scope: string, key: string): string => `${scope}\u0000${key}`;

function checkNames(scope: unknown, key: unknown): void {
  if (typeof scope !== 'string' || typeof key !== 'string') throw new TypeError('claim scope and key must be strings');
  if (scope.includes('\u0000') || scope.includes('/')) throw new TypeError('claim scope must not contain NUL or /');
}

/** A ClaimStore on `db`. `close` leaves the client open: its owner closes it. */
export async function openMongoClaimStore(db: Db): Promise<ClaimStore> {
  const claims = db.collection<ClaimDoc>(CLAIMS);
  let closed = false;
  const assertOpen = (): void => {
    if (closed) throw new Error('claim store is closed');
  };

  /** A claim in the earlier id format, if any (a server that cannot even look one up has none). */
  const readLegacy = async (scope: string, key: string): Promise<string | null> => {
    try {
      return (await claims.findOne({ _id: legacyClaimId(scope, key) }, { projection: { value: 1 } }))?.value ?? null;
    } catch (error) {
      if (error instanceof MongoServerError) return null;
      throw error;
    }
  };
  const read = async (scope: string, key: string): Promise<string | null> => {
    const doc = await claims.findOne({ _id: claimId(scope, key) }, { projection: { value: 1 } });
    return doc ? doc.value : readLegacy(scope, key);
  };

  return {
    async claim<T>(scope: string, key: string, value: T): Promise<{ created: boolean; value: T }> {
      assertOpen();
      checkNames(scope, key);
      const json = JSON.stringify(value) as string | undefined;
      if (json === undefined) throw new TypeError('claim value must be JSON-serialisable');
      // Claimed before the id format changed: that claim wins (none is made in the old format any more).
      const legacy = await readLegacy(scope, key);
      if (legacy !== null) return { created: false, value: JSON.parse(legacy) as T };
      try {
        await claims.insertOne({ _id: claimId(scope, key), scope, key, value: json, claimedAt: new Date() });
        return { created: true, value: JSON.parse(json) as T };
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      }
      // Claims are never removed, so the winner's document is there to read.
      const existing = await read(scope, key);
      if (existing === null) throw new Error(`claim ${scope}/${key} collided with a claim that cannot be read back`);
      return { created: false, value: JSON.parse(existing) as T };
    },

    async get<T>(scope: string, key: string): Promise<T | null> {
      assertOpen();
      checkNames(scope, key);
      const existing = await read(scope, key);
      return existing === null ? null : (JSON.parse(existing) as T);
    },

    async close(): Promise<void> {
      closed = true;
    },
  };
}
