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
 * value. Every operation is an insert or a lookup by `_id`.
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

  return {
    async claim<T>(scope: string, key: string, value: T): Promise<{ created: boolean; value: T }> {
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
