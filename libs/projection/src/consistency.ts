import type { RequestHandler } from 'express';
import type { Db } from 'mongodb';
import { CONSISTENCY_HEADER, parseConsistencyToken } from '@docshare/contracts';

/**
 * Where each projector group has got to, one number per bus partition: every event of the
 * partition up to `through` is applied (the batch's `through`, which watermarks advance on every
 * partition). A group has applied everything up to position P when each partition's `through`
 * is at least P: what a consistency token is compared with. O(partitions), whatever the data.
 */
export interface Checkpoints {
  /** Records that `group` has applied every event of `partition` up to `through` (never moves back). */
  record(group: string, partition: number, through: number): Promise<void>;
  /** The position up to which `group` has applied every event of each of its `partitions` partitions (0 while one has none). */
  low(group: string, partitions: number): Promise<number>;
  /** Calls `listener` after each record in this process (lets a gate in the same process skip its poll). */
  onRecord?(listener: () => void): () => void;
}

const lowOf = (throughs: readonly (number | undefined)[]): number =>
  throughs.some((t) => t === undefined) ? 0 : Math.min(...(throughs as number[]));

/** Checkpoints in memory: embedded mode, where the projectors and the queries share a process. */
export const makeMemoryCheckpoints = (): Checkpoints => {
  const at = new Map<string, number>();
  const listeners = new Set<() => void>();
  return {
    async record(group, partition, through) {
      const key = `${group}/${partition}`;
      if ((at.get(key) ?? 0) < through) at.set(key, through);
      for (const listener of listeners) listener();
    },
    async low(group, partitions) {
      return lowOf(Array.from({ length: partitions }, (_, p) => at.get(`${group}/${p}`)));
    },
    onRecord(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
};

interface CheckpointDoc { _id: string; through: number }

/**
 * Checkpoints in MongoDB, shared by every replica of every projector and query service: one tiny
 * document per (group, partition), read by `_id` (an index lookup on MongoDB; a scan of these few
 * documents on FerretDB).
 */
export const makeMongoCheckpoints = (db: Db, collection = 'projection_checkpoints'): Checkpoints => {
  const docs = db.collection<CheckpointDoc>(collection);
  const id = (group: string, partition: number): string => `${group}/${partition}`;
  return {
    async record(group, partition, through) {
      await docs.updateOne({ _id: id(group, partition) }, { $max: { through } }, { upsert: true });
    },
    async low(group, partitions) {
      const ids = Array.from({ length: partitions }, (_, p) => id(group, p));
      const found = new Map((await docs.find({ _id: { $in: ids } }).toArray()).map((d) => [d._id, d.through]));
      return lowOf(ids.map((i) => found.get(i)));
    },
  };
};

/** Waits for consistency tokens against one group's checkpoints. */
export interface ConsistencyGate {
  /** Resolves true once the group has applied every event up to `token`, false after `timeoutMs`. */
  wait(token: number, timeoutMs: number): Promise<boolean>;
}

/**
 * A gate whose cost does not grow with the requests waiting: a token at or below the newest
 * position seen passes at once (no query), and while any request waits ONE loop per process
 * reads the group's checkpoints every `pollMs` for all of them.
 */
export const makeConsistencyGate = (checkpoints: Checkpoints, group: string, partitions: number, pollMs = 5): ConsistencyGate => {
  let known = 0;
  const waiters = new Set<{ token: number; settle(reached: boolean): void }>();
  let polling = false;
  let wake: (() => void) | null = null;
  const settleReached = (): void => {
    for (const waiter of waiters) if (waiter.token <= known) waiter.settle(true);
  };
  const refresh = async (): Promise<void> => {
    try {
      known = Math.max(known, await checkpoints.low(group, partitions));
    } catch {
      // The store is down: the waiters time out, and the reads then fail or answer on their own.
    }
    settleReached();
  };
  checkpoints.onRecord?.(() => {
    if (waiters.size > 0) wake?.();
  });
  const poll = async (): Promise<void> => {
    if (polling) return;
    polling = true;
    try {
      while (waiters.size > 0) {
        await refresh();
        if (waiters.size === 0) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, pollMs);
          function done(): void {
            clearTimeout(timer);
            wake = null;
            resolve();
          }
          wake = done;
        });
      }
    } finally {
      polling = false;
    }
  };
  return {
    wait(token, timeoutMs) {
      if (token <= known) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const waiter = {
          token,
          settle(reached: boolean) {
            clearTimeout(timer);
            waiters.delete(waiter);
            resolve(reached);
          },
        };
        const timer = setTimeout(() => waiter.settle(false), timeoutMs);
        waiters.add(waiter);
        void poll();
      });
    },
  };
};

/**
 * Holds a read that carries a consistency token (CONSISTENCY_HEADER) until the gate's group has
 * applied it, for at most `timeoutMs`; then it is answered from the read model as it is (a
 * projector that lags delays reads that need it, never fails them). Reads without one pass at once.
 */
export const honourConsistency = (gate: ConsistencyGate, timeoutMs: number, onTimeout?: () => void): RequestHandler =>
  (req, _res, next) => {
    const token = parseConsistencyToken(req.headers[CONSISTENCY_HEADER]);
    if (token === null) return next();
    gate.wait(token, timeoutMs).then((reached) => {
      if (!reached) onTimeout?.();
      next();
    }, next);
  };
