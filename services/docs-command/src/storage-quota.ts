import type { Readable } from 'node:stream';
import { DocshareError, M, tooLarge } from '@docshare/contracts';

/*
 * The per-user storage quota (STORAGE_QUOTA_BYTES). What a user stores is counted from events by
 * the stats projection (`bytes_stored`: uploads add their size, deletions give it back), so it
 * survives restarts and rebuilds; this module reads it through `usedBy` and adds what this process
 * is receiving right now for the same user, so that concurrent uploads cannot jointly overshoot.
 *
 * An upload holds a reservation from before its body is read until its event is recorded and the
 * stats read model counts it: at every moment a user's bytes are either in the read model or held
 * here, and never counted twice: the read model says which of the user's uploads it counts
 * (`through`, the position of the last one), and a hold whose recorded upload is at or below it
 * no longer counts (it is dropped once `applied` says so, in the background). A reservation first
 * waits for the user's consistency token (their last write, e.g. a deletion) to reach the read
 * model. So sequential and concurrent uploads through one process are exact. Across processes the
 * holds are not shared: see docs/architecture.md.
 */

export interface StorageQuotaOptions {
  /** Bytes each user may store; 0 (or less) means unlimited. */
  quotaBytes: number;
  /**
   * Bytes the user's files take, as the stats read model counts them (`bytes_stored`), and the
   * position of the last of the user's uploads and deletions it counts.
   */
  usedBy: (userId: number) => Promise<{ bytes: number; through: number }>;
  /** Resolves once the stats read model has applied everything up to a consistency token, or after `timeoutMs`. */
  applied?: (token: number, timeoutMs: number) => Promise<unknown>;
}

/** How long a reservation waits for the user's own last write to reach the read model. */
const READ_WAIT_MS = 5_000;
/** How long a recorded upload's hold waits for the read model before it is dropped anyway. */
const HOLD_WAIT_MS = 30_000;

/** One upload's claim on its user's free space, from before its body is read until it is recorded. */
export interface StorageReservation {
  /** The limit to read the file with: `maxUploadBytes`, or the user's free space when that is smaller. */
  limitFor(maxUploadBytes: number): number;
  /** `File too large` from reading within a limit the quota set means the quota: rethrows it as such. */
  explain(error: unknown): never;
  /** Checks the file's real size once spooled, and from then on holds exactly that many bytes. */
  confirm(size: number): Promise<void>;
  /**
   * Gives the held bytes back; safe to call twice. With the token of the recorded upload, the hold
   * stops counting once the read model counts the upload, and is dropped then (the caller does not wait).
   */
  release(token?: number): void;
}

export const quotaExceeded = (): DocshareError => tooLarge(M.storageQuotaExceeded);

/** How many times `usedBy` is read again when an upload of the same user finished during the read. */
const MAX_REREADS = 5;

const UNLIMITED: StorageReservation = {
  limitFor: (max) => max,
  explain: (error) => { throw error; },
  confirm: async () => undefined,
  release: () => undefined,
};

/** Parses a declared `Content-Length`: the body's size when it is sent as a plain decimal, else undefined (chunked). */
export const declaredLength = (header: string | undefined): number | undefined =>
  header !== undefined && /^\d{1,15}$/.test(header.trim()) ? Number(header) : undefined;

/** Bodies up to this size are read to their end before a refusal that comes before the body (see drainSmallBody). */
export const DRAIN_BEFORE_REFUSAL_BYTES = 64 * 1024;

/**
 * Reads and drops a request body that is small (declared, or found to be, at most `limit` bytes)
 * before the server answers without it. An answer that leaves body bytes unread closes the
 * connection, and a client still writing a small upload (fetch, most libraries) sees a reset
 * instead of the answer; a large body is left unread (the answer closes the connection), which is
 * the point of refusing first.
 */
export const drainSmallBody = async (req: Readable & { complete?: boolean; headers: Record<string, unknown> }, limit = DRAIN_BEFORE_REFUSAL_BYTES): Promise<void> => {
  if (req.complete || req.readableEnded) return;
  const declared = declaredLength(typeof req.headers['content-length'] === 'string' ? req.headers['content-length'] : undefined);
  if (declared !== undefined && declared > limit) return;
  await new Promise<void>((resolve) => {
    let read = 0;
    const done = (): void => {
      req.off('data', onData);
      req.off('end', done);
      req.off('error', done);
      req.off('close', done);
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read > limit) {
        req.pause();
        done();
      }
    };
    req.on('data', onData);
    req.on('end', done);
    req.on('error', done);
    req.on('close', done);
    req.resume();
  });
};

export const makeStorageQuota = ({ quotaBytes, usedBy, applied }: StorageQuotaOptions) => {
  /** Holds per user of uploads in flight in this process; `token` once the upload is recorded. */
  const holds = new Map<number, Set<{ bytes: number; token?: number }>>();
  /** Per user, how many holds have been dropped: a read of `usedBy` that overlaps one may miss its bytes. */
  const releases = new Map<number, number>();
  const holdsOf = (userId: number): Set<{ bytes: number; token?: number }> => {
    let mine = holds.get(userId);
    if (!mine) holds.set(userId, (mine = new Set()));
    return mine;
  };
  const heldBy = (userId: number): number => [...holds.get(userId) ?? []].reduce((sum, h) => sum + h.bytes, 0);
  const drop = (userId: number, hold: { bytes: number; token?: number }): void => {
    const mine = holds.get(userId);
    mine?.delete(hold);
    if (mine?.size === 0) holds.delete(userId);
    releases.set(userId, (releases.get(userId) ?? 0) + 1);
  };

  /**
   * Bytes in use for `userId`: what the read model counts, plus the holds of uploads it does not
   * count yet. Read again when a hold was dropped during the read (the read may predate its upload).
   */
  const inUse = async (userId: number): Promise<number> => {
    for (let attempt = 1; ; attempt++) {
      const before = releases.get(userId) ?? 0;
      const used = await usedBy(userId);
      if ((releases.get(userId) ?? 0) === before || attempt >= MAX_REREADS) {
        let pending = 0;
        for (const hold of holds.get(userId) ?? []) if (hold.token === undefined || hold.token > used.through) pending += hold.bytes;
        return used.bytes + pending;
      }
    }
  };

  /**
   * Reserves room for one upload of `userId` whose body declares `declared` bytes (undefined when
   * chunked). Throws `Storage quota exceeded` when the user is already at or over the quota, before
   * anything of the body is read. Holds the declared size (the file is not larger), or the whole
   * free space when none is declared, until the real size is known.
   */
  const reserve = async (userId: number, declared: number | undefined, token?: number): Promise<StorageReservation> => {
    if (quotaBytes <= 0) return UNLIMITED;
    // The user's own last write (a deletion, an upload through another replica) counts first.
    if (token !== undefined && applied) await applied(token, READ_WAIT_MS);
    const free = quotaBytes - await inUse(userId);
    if (free <= 0) throw quotaExceeded();
    const hold: { bytes: number; token?: number } = { bytes: Math.min(free, declared ?? free) };
    holdsOf(userId).add(hold);
    let quotaLimited = false;
    let released = false;
    const release = (recorded?: number): void => {
      if (released) return;
      released = true;
      if (recorded === undefined || !applied) return drop(userId, hold);
      hold.token = recorded;
      applied(recorded, HOLD_WAIT_MS).then(() => drop(userId, hold), () => drop(userId, hold));
    };
    return {
      limitFor: (maxUploadBytes) => {
        quotaLimited = free < maxUploadBytes;
        return Math.min(free, maxUploadBytes);
      },
      explain: (error) => {
        if (quotaLimited && error instanceof DocshareError && error.message === M.fileTooLarge) throw quotaExceeded();
        throw error;
      },
      confirm: async (size) => {
        if (released) throw new Error('storage reservation used after release');
        if (size > hold.bytes) {
          // More than was held (a declared length smaller than the body): check against the quota as it is now.
          const others = await inUse(userId) - hold.bytes;
          if (others + size > quotaBytes) throw quotaExceeded();
        }
        hold.bytes = size;
      },
      release,
    };
  };

  return { reserve, heldBy };
};

export type StorageQuota = ReturnType<typeof makeStorageQuota>;
