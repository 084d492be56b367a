import type { IncomingHttpHeaders } from 'node:http';
import type { Db } from 'mongodb';
import { CONSISTENCY_HEADER, makeWakeableSleep, parseConsistencyToken } from '@docshare/contracts';

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
  /** Writes what `record` holds back, if it holds anything (a graceful stop). */
  flush?(): Promise<void>;
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

export interface MongoCheckpointsOptions {
  /**
   * How long a record waits for others to share its write (default 25 ms: a relay publish reaches
   * a group's six partitions one after the other, each with its own apply, within about that).
   */
  coalesceMs?: number;
  /** Longest wait before a failed write is tried again (from 100 ms, doubling; default 2 000). */
  retryMaxMs?: number;
}

/**
 * Checkpoints in MongoDB, shared by every replica of every projector and query service: one tiny
 * document per (group, partition), read by `_id`.
 *
 * Writes carry information only: a `record` at or below what this process last wrote for that
 * (group, partition) sends nothing, and the records made while a write is pending or in flight
 * (the six partitions' batches of one relay publish, every group of this process) go out together
 * as ONE unordered bulk of `$max` upserts, one update command, at most one in flight. `record`
 * resolves once its value is written; a failed write keeps its values and is tried again with
 * backoff (and rejects the records that waited on it). Each value is recorded only after its
 * batch was applied, so a checkpoint never claims an event that is not in the read model; one
 * that is lost (a crash before its write) is overtaken by the partition's next batch or watermark.
 */
export const makeMongoCheckpoints = (db: Db, collection = 'projection_checkpoints', options: MongoCheckpointsOptions = {}): Checkpoints => {
  const docs = db.collection<CheckpointDoc>(collection);
  const coalesceMs = options.coalesceMs ?? 25;
  const retryMaxMs = options.retryMaxMs ?? 2_000;
  const id = (group: string, partition: number): string => `${group}/${partition}`;
  /** What this process has written (or found written) per checkpoint id. */
  const written = new Map<string, number>();
  /** Values recorded and not yet written, and the callers waiting for them. */
  let pending = new Map<string, number>();
  let waiting: { resolve(): void; reject(error: unknown): void }[] = [];
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<void> | null = null;
  let failures = 0;

  const schedule = (delayMs: number): void => {
    if (timer !== null || inFlight !== null || pending.size === 0) return;
    timer = setTimeout(() => {
      timer = null;
      void write();
    }, delayMs);
  };

  const write = (): Promise<void> => {
    if (inFlight !== null) return inFlight;
    const batch = pending;
    const settle = waiting;
    pending = new Map();
    waiting = [];
    if (batch.size === 0) {
      for (const w of settle) w.resolve();
      return Promise.resolve();
    }
    inFlight = (async () => {
      try {
        await docs.bulkWrite([...batch].map(([_id, through]) => ({
          updateOne: { filter: { _id }, update: { $max: { through } }, upsert: true },
        })), { ordered: false });
        failures = 0;
        for (const [key, through] of batch) if ((written.get(key) ?? -1) < through) written.set(key, through);
        for (const w of settle) w.resolve();
      } catch (error) {
        failures++;
        // Kept for the next write, with whatever was recorded meanwhile.
        for (const [key, through] of batch) if ((pending.get(key) ?? -1) < through) pending.set(key, through);
        for (const w of settle) w.reject(error);
      } finally {
        inFlight = null;
        schedule(failures === 0 ? coalesceMs : Math.min(retryMaxMs, 100 * 2 ** (failures - 1)));
      }
    })();
    return inFlight;
  };

  return {
    record(group, partition, through) {
      const key = id(group, partition);
      if (through <= (written.get(key) ?? -1) || through <= (pending.get(key) ?? -1)) {
        // Nothing new: resolves with the write that carries a value at least this high, if one is pending.
        if (!pending.has(key)) return Promise.resolve();
      } else {
        pending.set(key, through);
      }
      return new Promise<void>((resolve, reject) => {
        waiting.push({ resolve, reject });
        schedule(coalesceMs);
      });
    },
    async low(group, partitions) {
      const ids = Array.from({ length: partitions }, (_, p) => id(group, p));
      const found = new Map((await docs.find({ _id: { $in: ids } }).toArray()).map((d) => [d._id, d.through]));
      return lowOf(ids.map((i) => found.get(i)));
    },
    async flush() {
      if (timer !== null) {
        clearTimeout(timer);
        timer = null;
      }
      while (inFlight !== null || pending.size > 0) {
        await (inFlight ?? write()).catch(() => {});
        if (failures > 0) throw new Error('checkpoints could not be written');
      }
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
  const pause = makeWakeableSleep();
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
    if (polling) pause.wake();
  });
  const poll = async (): Promise<void> => {
    if (polling) return;
    polling = true;
    try {
      while (waiters.size > 0) {
        await refresh();
        if (waiters.size === 0) break;
        await pause.sleep(pollMs);
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
export const honourConsistency = (gate: ConsistencyGate, timeoutMs: number, onTimeout?: () => void): ConsistencyMiddleware =>
  (req, _res, next) => {
    const token = parseConsistencyToken(req.headers[CONSISTENCY_HEADER]);
    if (token === null) return next();
    gate.wait(token, timeoutMs).then((reached) => {
      if (!reached) onTimeout?.();
      next();
    }, next);
  };

/** A middleware (Express's shape, without depending on Express): what honourConsistency returns. */
export type ConsistencyMiddleware = (req: { headers: IncomingHttpHeaders }, res: unknown, next: (err?: unknown) => void) => void;
