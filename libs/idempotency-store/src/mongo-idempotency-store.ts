import { randomUUID } from 'node:crypto';
import { MongoServerError, type Db } from 'mongodb';
import type { Begun, IdempotencyStore, StoredAnswer } from './port.ts';

/*
 * Idempotency keys on MongoDB (and on its stand-in, FerretDB 2 on PostgreSQL + DocumentDB),
 * collection `idempotency_keys`, up to two documents per key:
 *   { _id: "claim/<key>", token, leaseUntil, expireAt }   a request working on the key
 *   { _id: "done/<key>", fingerprint, answer, expiresAt, expireAt }   its kept answer
 * `answer` is the StoredAnswer as a document `{ status, headers, body }` (answers kept before
 * this version hold its JSON text, still replayed until they expire, a day at most). `expireAt`
 * is a Date for the TTL index, which removes a document once it has passed (the server's TTL
 * monitor runs every minute or so): that only saves space, reads check the times themselves.
 *
 * Every write is one single-document write the server applies atomically; none needs a
 * transaction:
 *   - begin takes the claim with one upsert conditional on its lease having lapsed,
 *     `{ _id: claim, leaseUntil <= now }`: a free key's claim is inserted, a lapsed one (its
 *     request completed, or its process died) is taken over with a new token, and a live one makes
 *     the upsert's insert collide with its `_id` (a duplicate key, told by its code alone): the
 *     key is in flight. Of concurrent begins exactly one starts;
 *   - complete keeps the answer by inserting `done/<key>` once; the claim stays until its lease
 *     lapses (begin looks for an answer first);
 *   - renew, and abandon (a failed request), are conditional on the owner's token: a stale owner
 *     (paused past its lease) finds no claim of its own to extend or release;
 *   - removeScope (account erasure) deletes the answers and the claims whose _id starts with
 *     `done/<prefix>` or `claim/<prefix>`: two deletes on anchored regexes, ranges of the _id index.
 */

const COLLECTION = 'idempotency_keys';

interface ClaimDoc { _id: string; token: string; leaseUntil: number; expireAt: Date }
interface DoneDoc { _id: string; fingerprint: string; answer: StoredAnswer | string; expiresAt: number; expireAt: Date }
type KeyDoc = ClaimDoc | DoneDoc;

const isDuplicate = (error: unknown): boolean => error instanceof MongoServerError && error.code === 11000;
const claimId = (key: string): string => `claim/${key}`;
const doneId = (key: string): string => `done/${key}`;

const begunOf = (done: DoneDoc): Begun => ({
  state: 'done',
  fingerprint: done.fingerprint,
  answer: typeof done.answer === 'string' ? (JSON.parse(done.answer) as StoredAnswer) : done.answer,
  expiresAt: done.expiresAt,
});

/** An IdempotencyStore on `db`, with the TTL index it relies on. `close` leaves the client open: its owner closes it. */
export async function openMongoIdempotencyStore(db: Db): Promise<IdempotencyStore> {
  const keys = db.collection<KeyDoc>(COLLECTION);
  await keys.createIndex({ expireAt: 1 }, { expireAfterSeconds: 0 });
  let closed = false;
  const assertOpen = (): void => {
    if (closed) throw new Error('idempotency store is closed');
  };

  const answerOf = async (key: string): Promise<DoneDoc | null> => keys.findOne({ _id: doneId(key) }) as Promise<DoneDoc | null>;
  const claimOf = async (key: string): Promise<ClaimDoc | null> => keys.findOne({ _id: claimId(key) }) as Promise<ClaimDoc | null>;
  const live = (done: DoneDoc | null, at: number): done is DoneDoc => done !== null && done.expiresAt > at;

  return {
    async begin(key, at, leaseMs): Promise<Begun> {
      assertOpen();
      const kept = await answerOf(key);
      if (live(kept, at)) return begunOf(kept);
      const token = randomUUID();
      try {
        await keys.updateOne(
          { _id: claimId(key), leaseUntil: { $lte: at } },
          { $set: { token, leaseUntil: at + leaseMs, expireAt: new Date(at + leaseMs) } },
          { upsert: true },
        );
      } catch (error) {
        if (!isDuplicate(error)) throw error;
        // Held under a live lease: by a request in flight, or by one that completed since our look.
        const answered = await answerOf(key);
        return live(answered, at) ? begunOf(answered) : { state: 'in_flight' };
      }
      // A stale owner that completed between our look and our claim kept its answer first.
      const raced = await answerOf(key);
      if (live(raced, at)) {
        await keys.deleteOne({ _id: claimId(key), token });
        return begunOf(raced);
      }
      // An expired answer is removed once the key is ours again, so that ours can be kept.
      if (raced !== null) await keys.deleteOne({ _id: doneId(key), expiresAt: { $lte: at } });
      return { state: 'started', token };
    },

    async renew(key, token, at, leaseMs): Promise<boolean> {
      assertOpen();
      // A completed key is no longer in flight, though it keeps its claim.
      if (await answerOf(key) !== null) return false;
      const result = await keys.updateOne({ _id: claimId(key), token }, { $set: { leaseUntil: at + leaseMs, expireAt: new Date(at + leaseMs) } });
      return result.matchedCount === 1;
    },

    async complete(key, token, completed): Promise<boolean> {
      assertOpen();
      if ((await claimOf(key))?.token !== token) return false;
      const { status, headers, body } = completed.answer;
      try {
        await keys.insertOne({
          _id: doneId(key), fingerprint: completed.fingerprint, answer: { status, headers: { ...headers }, body },
          expiresAt: completed.expiresAt, expireAt: new Date(completed.expiresAt),
        });
      } catch (error) {
        if (!isDuplicate(error)) throw error;
        return false;
      }
      return true;
    },

    async abandon(key, token): Promise<void> {
      assertOpen();
      // Of a completed key this removes only the claim it keeps: its answer stays.
      await keys.deleteOne({ _id: claimId(key), token });
    },

    async removeScope(prefix): Promise<number> {
      assertOpen();
      // Anchored, case-sensitive prefixes of _id: each a range of the _id index, not a scan.
      const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const [answers] = await Promise.all([
        keys.deleteMany({ _id: { $regex: `^done/${escaped}` } }),
        keys.deleteMany({ _id: { $regex: `^claim/${escaped}` } }),
      ]);
      return answers.deletedCount;
    },

    async close(): Promise<void> {
      closed = true;
    },
  };
}
