import { MongoServerError } from 'mongodb';
import type { Db } from 'mongodb';
import type { ClaimStore } from './port.ts';

/*
 * Claims on MongoDB (and on its stand-in, FerretDB 2 on PostgreSQL + DocumentDB): collection
 * `claims`, one document per claimed key:
 *   _id        "<scope>/<key>"   scopes may not contain '/', so the split is unambiguous
 *   scope, key the two halves, for people reading the collection
 *   value      the value as JSON text: it gives back exactly what JSON makes of the value, as the
 *              file store does, whatever the value holds (a document would turn a lone surrogate
 *              into U+FFFD, refuse a NUL in a key, and read `{ $ref, $id }` back as a DBRef)
 *   claimedAt  when
 * First claim wins because a claim is one insert and `_id` is unique: of concurrent inserts of one
 * key exactly one succeeds (a duplicate key, told by its code alone). A loser reads the winner's
 * value. A release (account erasure) deletes the document, so the key can be claimed again.
 * Every operation is an insert, a lookup or a delete by `_id`.
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

function checkNames(scope: unknown, key: unknown): void {
  if (typeof scope !== 'string' || typeof key !== 'string') throw new TypeError('claim scope and key must be strings');
  if (scope.includes('/')) throw new TypeError('claim scope must not contain /');
}

/** A ClaimStore on `db`. `close` leaves the client open: its owner closes it. */
export async function openMongoClaimStore(db: Db): Promise<ClaimStore> {
  const claims = db.collection<ClaimDoc>(CLAIMS);
  let closed = false;
  const assertOpen = (): void => {
    if (closed) throw new Error('claim store is closed');
  };

  const read = async (scope: string, key: string): Promise<string | null> =>
    (await claims.findOne({ _id: claimId(scope, key) }, { projection: { value: 1 } }))?.value ?? null;

  const claim = async <T>(scope: string, key: string, value: T): Promise<{ created: boolean; value: T }> => {
    assertOpen();
    checkNames(scope, key);
    const json = JSON.stringify(value) as string | undefined;
    if (json === undefined) throw new TypeError('claim value must be JSON-serialisable');
    try {
      await claims.insertOne({ _id: claimId(scope, key), scope, key, value: json, claimedAt: new Date() });
      return { created: true, value: JSON.parse(json) as T };
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
    }
    const existing = await read(scope, key);
    // Released between our insert and our read: the key is free again, try for it.
    if (existing === null) return claim(scope, key, value);
    return { created: false, value: JSON.parse(existing) as T };
  };

  return {
    claim,

    async get<T>(scope: string, key: string): Promise<T | null> {
      assertOpen();
      checkNames(scope, key);
      const existing = await read(scope, key);
      return existing === null ? null : (JSON.parse(existing) as T);
    },

    async release(scope: string, key: string): Promise<boolean> {
      assertOpen();
      checkNames(scope, key);
      return (await claims.deleteOne({ _id: claimId(scope, key) })).deletedCount === 1;
    },

    async close(): Promise<void> {
      closed = true;
    },
  };
}
