import { MongoServerError } from 'mongodb';
import type { Db } from 'mongodb';

/*
 * A lease that lets one of many replicas do something (publish the outbox), on MongoDB (and on its
 * stand-in, FerretDB 2 on PostgreSQL + DocumentDB, whose conditional updates are as atomic).
 *
 * One document per lease, `{ _id: <name>, owner, expiresAt }`. Holding it (taking it, or renewing
 * it) is ONE conditional upsert the server applies atomically:
 *
 *   updateOne({ _id: name, $or: [{ owner: me }, { expiresAt: { $lte: now } }] },
 *             { $set: { owner: me, expiresAt: now + leaseMs } }, { upsert: true })
 *
 * It matches when the lease is this owner's (also after a restart under the same owner) or has
 * expired, and inserts it when there is none; when another owner holds it, nothing matches and the
 * insert collides with the `_id`: a duplicate key (told by its code alone), so not held. Of
 * concurrent contenders for an expired lease exactly one matches: the others' filters no longer do.
 * Releasing sets `expiresAt` to the epoch, conditional on the owner.
 *
 * Expiry compares the holder's clock (which wrote `expiresAt`) with the contender's: skew between
 * replicas shortens or lengthens a takeover by that much. A holder stalled past its expiry may
 * briefly act alongside its successor until it next checks; for the outbox that means an event
 * published twice, which consumers absorb.
 */

const LEASES = 'leases';

export interface LeaseDoc {
  _id: string;
  owner: string;
  expiresAt: Date;
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

  /** Until when this owner counts the lease as held (its own clock), if it does. */
  let mine: { until: number } | null = null;

  return {
    async hold() {
      const at = now();
      if (mine && at < mine.until - (leaseMs * 2) / 3) return true;
      mine = null;
      try {
        await leases.updateOne(
          { _id: name, $or: [{ owner }, { expiresAt: { $lte: new Date(at) } }] },
          { $set: { owner, expiresAt: new Date(at + leaseMs) } },
          { upsert: true },
        );
      } catch (error) {
        // Another owner holds it.
        if (error instanceof MongoServerError && error.code === 11000) return false;
        throw error;
      }
      mine = { until: at + leaseMs };
      return true;
    },
    held: () => mine !== null && now() < mine.until,
    async release() {
      if (!mine) return;
      mine = null;
      await leases.updateOne({ _id: name, owner }, { $set: { expiresAt: new Date(0) } });
    },
  };
}
