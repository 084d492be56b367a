import { randomUUID } from 'node:crypto';
import { DocshareError, M, tooLarge } from '@docshare/contracts';
import { holdKey, openFileStorageLedger, type Resolution, type StorageChange, type StorageLedger } from '@docshare/storage-ledger';
import type { EventStore } from '@docshare/event-store';
import type { FileEventBody, FileState } from './domain/file.ts';
import { fileStateFrom } from './blob-sweeper.ts';
import { resolvedHold } from './resumable.ts';

/*
 * The per-user storage quota (STORAGE_QUOTA_BYTES), enforced against the storage ledger the write
 * side owns (libs/storage-ledger): what each user's recorded files take, moved by the requests
 * that record uploads and deletions, plus what is held or pending for uploads in flight, in every
 * process (the ledger is shared). An upload holds room from before its body is read; the hold
 * becomes a pending change just before its event is appended and is settled (or cancelled) right
 * after, so a user's bytes are counted at every moment, once, and a deletion's bytes are free as
 * soon as it is answered (read-your-writes without waiting for any read model).
 */

/** One upload's claim on its user's free space, from before its body is read until it is recorded. */
export interface StorageReservation {
  /** The limit to read the file with: `maxUploadBytes`, or the user's free space when that is smaller. */
  limitFor(maxUploadBytes: number): number;
  /** A file too large for a limit the quota set means the quota: rethrows it as such. */
  explain(error: unknown): never;
  /** Checks the file's real size once spooled, and from then on holds exactly that many bytes. */
  confirm(size: number): Promise<void>;
  /** Turns the hold into the file's pending upload, just before its event is appended. */
  pend(fileId: number, size: number): Promise<void>;
  /** Gives the hold back when the upload was not pended (refused before); safe to call twice. */
  release(): Promise<void>;
}

export const quotaExceeded = (): DocshareError => tooLarge(M.storageQuotaExceeded);

export interface StorageQuotaOptions {
  /** Bytes each user may store; 0 (or less) means unlimited. */
  quotaBytes: number;
  ledger: StorageLedger;
}

export const makeStorageQuota = ({ quotaBytes, ledger }: StorageQuotaOptions) => {
  const limited = quotaBytes > 0;
  /**
   * Reserves room for one upload of `userId` whose body declares `declared` bytes (undefined when
   * chunked). Throws `Storage quota exceeded` when the user is already at or over the quota, before
   * anything of the body is read. Holds the declared size (the file is not larger), or the whole
   * free space when none is declared, until the real size is known. Without a quota nothing is
   * held, and the upload is still counted (pend).
   */
  const reserve = async (userId: number, declared: number | undefined): Promise<StorageReservation> => {
    const holdId = randomUUID();
    const { held, free } = limited ? await ledger.reserve(userId, holdId, declared, quotaBytes) : { held: 0, free: Infinity };
    if (limited && held <= 0) throw quotaExceeded();
    let quotaLimited = false;
    let done = false;
    return {
      limitFor: (maxUploadBytes) => {
        quotaLimited = free < maxUploadBytes;
        return Math.min(free, maxUploadBytes);
      },
      explain: (error) => {
        if (quotaLimited && error instanceof DocshareError && error.kind === 'too_large') throw quotaExceeded();
        throw error;
      },
      confirm: async (size) => {
        if (done) throw new Error('storage reservation used after release');
        if (limited && !(await ledger.resize(userId, holdId, size, quotaBytes))) throw quotaExceeded();
      },
      pend: async (fileId, size) => {
        done = true;
        await ledger.pend(userId, { kind: 'upload', fileId, bytes: size }, limited ? holdId : undefined);
      },
      release: async () => {
        if (done) return;
        done = true;
        if (limited) await ledger.cancel(userId, holdKey(holdId));
      },
    };
  };

  /** Records a deletion of `fileId` (`bytes` of its owner's) as pending, just before its event is appended. */
  const pendDeletion = (ownerId: number, fileId: number, bytes: number): Promise<void> =>
    ledger.pend(ownerId, { kind: 'delete', fileId, bytes });

  return { reserve, pendDeletion };
};

/** What a file's stream says of a ledger change left pending (the ledger's repair asks it). */
export const resolvedBy = (fileState: (fileId: number) => Promise<FileState>) => async (change: StorageChange): Promise<Resolution> => {
  const state = await fileState(change.fileId);
  const recorded = change.kind === 'upload' ? state.status !== 'none' : state.status === 'deleted';
  return recorded ? 'recorded' : 'not_recorded';
};

/** Bytes each user's files take, counted from the whole event log: the ledger's seed for data recorded before it existed. */
export const storageFromEvents = async (events: EventStore, batch = 1_000): Promise<Map<number, number>> => {
  const used = new Map<number, number>();
  const sizes = new Map<number, { ownerId: number; size: number }>();
  for (let after = 0; ;) {
    const page = await events.readAll(after, batch);
    for (const { position, event } of page) {
      after = position;
      const body = { type: event.type, data: event.data } as FileEventBody;
      if (body.type === 'docs.file.uploaded.v1') {
        const { fileId, ownerId, size } = body.data;
        sizes.set(fileId, { ownerId, size });
        used.set(ownerId, (used.get(ownerId) ?? 0) + size);
      } else if (body.type === 'docs.file.deleted.v1') {
        const file = sizes.get(body.data.fileId);
        if (file) used.set(file.ownerId, (used.get(file.ownerId) ?? 0) - file.size);
      }
    }
    if (page.length < batch) return used;
  }
};

/**
 * The storage ledger of embedded mode: a file under `dir` (libs/storage-ledger), its repairs asked
 * of the event log, seeded from the log once (data recorded before the ledger existed).
 */
export const openEmbeddedStorageLedger = async (dir: string, events: EventStore, onWarning?: (message: string) => void): Promise<StorageLedger> => {
  const ledger = await openFileStorageLedger(dir, {
    resolve: resolvedBy(fileStateFrom(events)), resolveHold: resolvedHold(events), ...(onWarning ? { onWarning } : {}),
  });
  await ledger.seed(() => storageFromEvents(events));
  return ledger;
};
