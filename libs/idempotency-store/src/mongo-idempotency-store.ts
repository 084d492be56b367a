import { randomUUID } from 'node:crypto';
import { MongoServerError, type Db } from 'mongodb';
import type { Begun, CompletedKey, IdempotencyStore } from './port.ts';

/*
 * Idempotency keys on MongoDB (or FerretDB), collection `idempotency_keys`, up to two documents
 * per key:
 *   { _id: "claim/<key>", token, leaseUntil, expireAt }   a request working on the key
 *   { _id: "done/<key>", fingerprint, answer, expiresAt, expireAt }   its kept answer
 * (`answer` is JSON text: FerretDB 1.x refuses nested arrays; `expireAt` is a Date for the TTL
 * index, or for the store's own sweep where the server has none, which only saves space: reads
 * check the times themselves.)
 *
 * Who holds a key is decided by inserts under a unique `_id`, the one write FerretDB 1.x decides
 * atomically (its updates and deletes are read-then-write, docs/mongodb.md): of concurrent
 * requests for a free key exactly one inserts its claim, and an answer is kept by inserting its
 * `done/` document once. A request's hot path is therefore lookups and inserts by string `_id`
 * only, the one shape FerretDB does not evaluate document by document; its updates and deletes
 * cost in proportion to the collection (measured: ~45 ms each at 20,000 keys, against ~1 ms for a
 * lookup or an insert), so none is on that path:
 *   - completing keeps the claim: the answer is looked for first, and the claim lapses with its
 *     lease (MongoDB's TTL index then removes it, FerretDB's the sweep below);
 *   - releasing (a failed request), renewing (a request over 20 s) and taking over a claim whose
 *     lease lapsed (its process died) are conditional on the owner's token, which MongoDB decides
 *     atomically; FerretDB does not, so there a stale owner (paused past its lease) may release a
 *     newer owner's claim, as any lease on FerretDB may be overrun.
 */

const COLLECTION = 'idempotency_keys';

interface ClaimDoc { _id: string; token: string; leaseUntil: number; expireAt: Date }
interface DoneDoc { _id: string; fingerprint: string; answer: string; expiresAt: number; expireAt: Date }
type KeyDoc = ClaimDoc | DoneDoc;

const isDuplicate = (error: unknown): boolean => error instanceof MongoServerError && error.code === 11000;
const claimId = (key: string): string => `claim/${key}`;
const doneId = (key: string): string => `done/${key}`;

const begunOf = (done: DoneDoc): Begun => ({
  state: 'done', fingerprint: done.fingerprint, answer: JSON.parse(done.answer) as CompletedKey['answer'], expiresAt: done.expiresAt,
});

export interface MongoIdempotencyOptions {
  /**
   * How often expired keys are removed by the store itself. Default: every 10 minutes, and only
   * on a server that refuses the TTL index (FerretDB 1.x); given, also where the index exists.
   */
  sweepEveryMs?: number;
  /** How long past its `expireAt` a document is left to the key's own requests (default 1 hour). */
  sweepGraceMs?: number;
}

/** An IdempotencyStore on `db`. `close` leaves the client open: its owner closes it. */
export async function openMongoIdempotencyStore(db: Db, options: MongoIdempotencyOptions = {}): Promise<IdempotencyStore> {
  const keys = db.collection<KeyDoc>(COLLECTION);
  const ttl = await keys.createIndex({ expireAt: 1 }, { expireAfterSeconds: 0 }).then(() => true, () => false);
  let closed = false;
  const assertOpen = (): void => {
    if (closed) throw new Error('idempotency store is closed');
  };
  // Reads check the times themselves, so an expired key left in place is never replayed; removing
  // it only keeps the collection, and FerretDB's lookups that scan it, to a day's keys. The grace
  // keeps the sweep away from a key being taken afresh (FerretDB's deletes are read-then-write).
  const sweepEveryMs = options.sweepEveryMs ?? (ttl ? undefined : 10 * 60_000);
  const sweepGraceMs = options.sweepGraceMs ?? 3_600_000;
  const sweeper = sweepEveryMs === undefined ? undefined : setInterval(() => {
    // A sweep that fails (the server is away) is tried again at the next interval.
    keys.deleteMany({ expireAt: { $lt: new Date(Date.now() - sweepGraceMs) } }).catch(() => {});
  }, sweepEveryMs);
  sweeper?.unref();

  const answerOf = async (key: string): Promise<DoneDoc | null> => keys.findOne({ _id: doneId(key) }) as Promise<DoneDoc | null>;
  const claimOf = async (key: string): Promise<ClaimDoc | null> => keys.findOne({ _id: claimId(key) }) as Promise<ClaimDoc | null>;
  const live = (done: DoneDoc | null, at: number): done is DoneDoc => done !== null && done.expiresAt > at;

  const begin = async (key: string, at: number, leaseMs: number, attempt = 0): Promise<Begun> => {
    assertOpen();
    const kept = await answerOf(key);
    if (live(kept, at)) return begunOf(kept);
    const token = randomUUID();
    try {
      await keys.insertOne({ _id: claimId(key), token, leaseUntil: at + leaseMs, expireAt: new Date(at + leaseMs) });
    } catch (error) {
      if (!isDuplicate(error)) throw error;
      const claim = await claimOf(key);
      if (claim !== null && claim.leaseUntil > at) {
        // Its request may have completed since our first look (a completed key keeps its claim).
        const answered = await answerOf(key);
        return live(answered, at) ? begunOf(answered) : { state: 'in_flight' };
      }
      if (attempt >= 3) return { state: 'in_flight' };
      // Lapsed (a completed request's, or one whose process died), or gone meanwhile: take it
      // over, unless another request did.
      if (claim !== null) await keys.deleteOne({ _id: claimId(key), token: claim.token });
      return begin(key, at, leaseMs, attempt + 1);
    }
    // A stale owner that completed between our look and our claim kept its answer first.
    const raced = await answerOf(key);
    if (live(raced, at)) {
      await keys.deleteOne({ _id: claimId(key), token });
      return begunOf(raced);
    }
    // An expired answer is removed once the key is ours again, so that ours can be kept.
    if (raced !== null) await keys.deleteOne({ _id: doneId(key) });
    return { state: 'started', token };
  };

  return {
    begin: (key, at, leaseMs) => begin(key, at, leaseMs),

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
      try {
        await keys.insertOne({
          _id: doneId(key), fingerprint: completed.fingerprint, answer: JSON.stringify(completed.answer),
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

    async close(): Promise<void> {
      closed = true;
      clearInterval(sweeper);
    },
  };
}
