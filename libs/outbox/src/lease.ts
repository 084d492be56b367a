import { MongoServerError } from 'mongodb';
import type { Db } from 'mongodb';

/*
 * A lease that lets one of many replicas do something (publish the outbox), on MongoDB or FerretDB.
 *
 * The obvious lease, one document taken with findOneAndUpdate({ expiresAt < now or owner == me }),
 * is atomic on MongoDB but not on FerretDB 1.x, which runs an update as read-then-write: two
 * replicas can both "take" an expired lease (measured: of 20 concurrent conditional updates of one
 * document, 5 matched). So taking a lease is an insert instead, which both servers decide atomically:
 * the lease is a series of terms, documents `{ _id: "<name>:<term>" }`, numbered 1, 2, ... without
 * gaps. The holder is the owner of the newest term until its `expiresAt`; only the holder updates
 * its term (to renew it, or to release it), so no two writers ever race on one document. A replica
 * that finds the newest term expired inserts the next term: exactly one contender's insert succeeds.
 *
 * Expiry compares the holder's clock (which wrote `expiresAt`) with the contender's: skew between
 * replicas shortens or lengthens a takeover by that much. A holder stalled past its expiry may
 * briefly act alongside its successor until it next checks; for the outbox that means an event
 * published twice, which consumers absorb.
 */

const LEASES = 'leases';

export interface LeaseDoc {
  _id: string;
  name: string;
  term: number;
  owner: string;
  expiresAt: Date;
  acquiredAt: Date;
}

export interface Lease {
  /**
   * True if this owner holds the lease now: renews it when a third of it has passed, takes it when
   * the newest term has expired (or is this owner's own, e.g. after a restart with the same owner).
   */
  hold(): Promise<boolean>;
  /** Whether the last `hold` found the lease held (no I/O). */
  held(): boolean;
  /** Gives the lease up now, so another replica can take it without waiting for the expiry. */
  release(): Promise<void>;
}

export interface LeaseOptions {
  db: Db;
  /** What the lease is for; one series of terms per name. */
  name: string;
  /** Who holds it: unique per process (e.g. `${hostname()}:${process.pid}`). */
  owner: string;
  /** How long a term lasts without renewal. */
  leaseMs: number;
  /** The clock (tests). */
  now?: () => number;
}

export function makeLease({ db, name, owner, leaseMs, now = Date.now }: LeaseOptions): Lease {
  if (typeof owner !== 'string' || owner === '') throw new Error('a lease needs a non-empty owner');
  if (!(leaseMs > 0)) throw new Error(`leaseMs must be positive, got ${leaseMs}`);
  const leases = db.collection<LeaseDoc>(LEASES);
  const termDoc = (term: number): Promise<LeaseDoc | null> => leases.findOne({ _id: `${name}:${term}` });

  /** The highest term known to exist. */
  let knownTerm = 0;
  /** The term this owner holds, and until when it counts it as held (its own clock). */
  let mine: { term: number; until: number } | null = null;

  /** The newest term: gallops up from the newest one known, then bisects (terms have no gaps). */
  const newestTerm = async (): Promise<LeaseDoc | null> => {
    let low = knownTerm;
    let lowDoc = low === 0 ? null : await termDoc(low);
    let step = 1;
    let highDoc = await termDoc(low + step);
    while (highDoc) {
      low += step;
      lowDoc = highDoc;
      step *= 2;
      highDoc = await termDoc(low + step);
    }
    let high = low + step;
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      const doc = await termDoc(middle);
      if (doc) [low, lowDoc] = [middle, doc];
      else high = middle;
    }
    knownTerm = low;
    return lowDoc;
  };

  const renew = async (term: number, at: number): Promise<boolean> => {
    const result = await leases.updateOne({ _id: `${name}:${term}`, owner }, { $set: { expiresAt: new Date(at + leaseMs) } });
    if (result.matchedCount === 0) return false;
    mine = { term, until: at + leaseMs };
    return true;
  };

  return {
    async hold() {
      const at = now();
      if (mine && at < mine.until - (leaseMs * 2) / 3) return true;
      const newest = await newestTerm();
      if (newest && newest.owner === owner) {
        // Ours (also after a restart under the same owner): keep it, unless a newer term appeared.
        if (await renew(newest.term, at)) return true;
      } else if (!newest || newest.expiresAt.getTime() <= at) {
        const term = (newest?.term ?? 0) + 1;
        try {
          await leases.insertOne({ _id: `${name}:${term}`, name, term, owner, expiresAt: new Date(at + leaseMs), acquiredAt: new Date(at) });
          knownTerm = term;
          mine = { term, until: at + leaseMs };
          return true;
        } catch (error) {
          // Another replica took this term first.
          if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
        }
      }
      mine = null;
      return false;
    },
    held: () => mine !== null && now() < mine.until,
    async release() {
      if (!mine) return;
      const { term } = mine;
      mine = null;
      await leases.updateOne({ _id: `${name}:${term}`, owner }, { $set: { expiresAt: new Date(0) } });
    },
  };
}
