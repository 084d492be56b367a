import { randomUUID } from 'node:crypto';
import { MongoServerError, type Db } from 'mongodb';
import type { Begun, CompletedKey, IdempotencyStore } from './port.ts';

/*
 * Idempotency keys on MongoDB (or FerretDB), collection `idempotency_keys`, one document per key:
 *   _id         the key (already scoped to its user by the caller)
 *   token       the owner of the in-flight claim: every change is conditional on it
 *   state       'in_flight' | 'done'
 *   leaseUntil  (in flight) when a request that died stops holding the key
 *   fingerprint, answer (JSON text: FerretDB 1.x refuses nested arrays), expiresAt (done)
 *   expireAt    a Date for the TTL index: MongoDB removes a key after its lease or its 24 hours
 * Taking a free key is one insert (unique _id: of concurrent requests exactly one wins, on both
 * servers); taking over a key whose lease lapsed or whose answer expired is one update conditional
 * on the token seen, so two requests taking over at once cannot both win. The TTL index only
 * saves space: reads check the times themselves (the TTL monitor runs once a minute).
 */

const COLLECTION = 'idempotency_keys';

interface KeyDoc {
  _id: string;
  token: string;
  state: 'in_flight' | 'done';
  leaseUntil?: number;
  fingerprint?: string;
  answer?: string;
  expiresAt?: number;
  expireAt: Date;
}

const isDuplicate = (error: unknown): boolean => error instanceof MongoServerError && error.code === 11000;

/** An IdempotencyStore on `db`. `close` leaves the client open: its owner closes it. */
export async function openMongoIdempotencyStore(db: Db): Promise<IdempotencyStore> {
  const keys = db.collection<KeyDoc>(COLLECTION);
  await keys.createIndex({ expireAt: 1 }, { expireAfterSeconds: 0 }).catch(() => {
    // A server without TTL indexes keeps expired keys; they are still ignored on read.
  });
  let closed = false;
  const assertOpen = (): void => {
    if (closed) throw new Error('idempotency store is closed');
  };

  const inFlight = (token: string, at: number, leaseMs: number): KeyDoc => ({
    _id: '', token, state: 'in_flight', leaseUntil: at + leaseMs, expireAt: new Date(at + leaseMs),
  });

  const begin = async (key: string, at: number, leaseMs: number, attempt = 0): Promise<Begun> => {
    assertOpen();
    const token = randomUUID();
    try {
      await keys.insertOne({ ...inFlight(token, at, leaseMs), _id: key });
      return { state: 'started', token };
    } catch (error) {
      if (!isDuplicate(error)) throw error;
    }
    const found = await keys.findOne({ _id: key });
    if (found === null) {
      // Removed between our insert and our read (abandoned or expired): try again, a few times.
      if (attempt < 3) return begin(key, at, leaseMs, attempt + 1);
      return { state: 'in_flight' };
    }
    if (found.state === 'in_flight' && (found.leaseUntil ?? 0) > at) return { state: 'in_flight' };
    if (found.state === 'done' && (found.expiresAt ?? 0) > at) {
      return {
        state: 'done', fingerprint: found.fingerprint ?? '', expiresAt: found.expiresAt ?? 0,
        answer: JSON.parse(found.answer ?? 'null') as CompletedKey['answer'],
      };
    }
    // Lapsed or expired: take it over, unless someone else did since we read it.
    const { _id: _ignored, ...fresh } = inFlight(token, at, leaseMs);
    const taken = await keys.updateOne(
      { _id: key, token: found.token },
      { $set: fresh, $unset: { fingerprint: '', answer: '', expiresAt: '' } },
    );
    if (taken.matchedCount === 1) return { state: 'started', token };
    return attempt < 3 ? begin(key, at, leaseMs, attempt + 1) : { state: 'in_flight' };
  };

  return {
    begin: (key, at, leaseMs) => begin(key, at, leaseMs),

    async renew(key, token, at, leaseMs): Promise<boolean> {
      assertOpen();
      const result = await keys.updateOne(
        { _id: key, token, state: 'in_flight' },
        { $set: { leaseUntil: at + leaseMs, expireAt: new Date(at + leaseMs) } },
      );
      return result.matchedCount === 1;
    },

    async complete(key, token, completed): Promise<boolean> {
      assertOpen();
      const result = await keys.updateOne(
        { _id: key, token, state: 'in_flight' },
        {
          $set: {
            state: 'done', fingerprint: completed.fingerprint, answer: JSON.stringify(completed.answer),
            expiresAt: completed.expiresAt, expireAt: new Date(completed.expiresAt),
          },
          $unset: { leaseUntil: '' },
        },
      );
      return result.matchedCount === 1;
    },

    async abandon(key, token): Promise<void> {
      assertOpen();
      await keys.deleteOne({ _id: key, token, state: 'in_flight' });
    },

    async close(): Promise<void> {
      closed = true;
    },
  };
}
