/*
 * The per-user storage ledger: how many bytes each user's files take, the fact the storage quota
 * (STORAGE_QUOTA_BYTES) is enforced against. The write side owns it (docs-command): it is moved
 * by the same requests that record uploads and deletions, never read from a projection.
 *
 * One record per user, changed by one atomic compare-and-set per step (O(1): nothing in it grows
 * with the user's file count):
 *   used     bytes of the uploads recorded and not deleted (settled);
 *   entries  what is in flight: holds (`hold:<id>`, an upload whose body is being read) and
 *            pending changes (`upload:<fileId>`, `delete:<fileId>`, bound before their event is
 *            appended); each counts against the quota until it is settled or cancelled;
 *   recent   the last RECENT_KEYS changes settled, so a change settled twice counts once.
 *
 * An upload: reserve a hold → resize it to the file's real size → pend it as `upload:<fileId>`
 * → append the event → settle (recorded: `used += bytes`) or cancel (refused). A deletion: pend
 * `delete:<fileId>` → append → settle (`used -= bytes`) or cancel. Crash safety: a pending change
 * is recorded BEFORE its event is appended and keeps counting (an upload's bytes against the
 * quota, a deletion's bytes as still used) until settled; a crash between the append and the
 * settle leaves it pending, and the next operation of that user repairs every entry older than
 * the lease by asking the event log (`resolve`): recorded → settled, not recorded → dropped; a
 * hold left by a crash is dropped. So an acknowledged upload is always counted (pending, then
 * used), and a ledger left by a crash is wrong for at most a lease, never for good.
 *
 * A session hold (`reserve` with `until`): the room a resumable upload's session claims, from its
 * creation until it is completed (pended as `upload:<fileId>`), aborted (cancelled) or expires at
 * `until` (ms epoch). It outlives any request, so the lease alone cannot tell it was left by a
 * crash: once older than the lease the repair asks `resolveHold` (docs-command: is the session
 * still pending and unexpired?) — 'ended' → dropped, 'open' → kept and its lease restarted, so it
 * is asked at most once a lease; without `resolveHold` it is kept. Once `now() > until` it is
 * dropped without asking. Entries written without `until` (every hold before session holds
 * existed) are repaired as before; a record holding an entry with `until` is for this version on.
 */

/** A recorded upload adds its bytes; a recorded deletion gives them back. */
export interface StorageChange {
  kind: 'upload' | 'delete';
  fileId: number;
  bytes: number;
}

/** The key of an entry: `hold:<id>`, `upload:<fileId>` or `delete:<fileId>`. */
export const changeKey = (change: Pick<StorageChange, 'kind' | 'fileId'>): string => `${change.kind}:${change.fileId}`;
export const holdKey = (holdId: string): string => `hold:${holdId}`;

/** What a stale pending change turned out to be, asked of the event log. */
export type Resolution = 'recorded' | 'not_recorded';

export interface ReserveOptions {
  /** A session hold: kept past the lease while `resolveHold` says 'open', dropped once `now() > until` (ms epoch). */
  until?: number;
  /** All of `wanted` or nothing (no partial hold). */
  exact?: boolean;
}

/** Whether the session a session hold belongs to is still going, asked of its owner (docs-command: the upload's stream). */
export type HoldState = 'open' | 'ended';

export interface StorageLedger {
  /** Bytes the user's files take (settled) plus what is held or pending for them. */
  usage(userId: number): Promise<number>;
  /**
   * Holds room for an upload whose body declares `wanted` bytes (undefined: not declared): the
   * whole free space at most, or with `exact` all of `wanted` or nothing. Resolves with the bytes
   * held and the free space before the hold; `held` 0 (nothing held) when the user has no free
   * space left, or (`exact`) less than `wanted`. `until` makes it a session hold (see above). A
   * reserve of a hold already there replaces it (its own bytes are free to it: a retried reserve
   * of one session holds once).
   */
  reserve(userId: number, holdId: string, wanted: number | undefined, quotaBytes: number, options?: ReserveOptions): Promise<{ held: number; free: number }>;
  /**
   * Sets the hold to the file's real size (a session hold keeps its `until`; a hold no longer
   * there is made again); false (hold unchanged) when that no longer fits the quota.
   */
  resize(userId: number, holdId: string, bytes: number, quotaBytes: number): Promise<boolean>;
  /**
   * Records a change about to be appended (before the append), taking the hold's place when one
   * is named. Binding the same change again keeps one entry.
   */
  pend(userId: number, change: StorageChange, holdId?: string): Promise<void>;
  /** The change's event is recorded: applies it, once (a second settle, or one of a change never pended, does nothing). */
  settle(userId: number, change: Pick<StorageChange, 'kind' | 'fileId'>): Promise<void>;
  /** Drops a hold or a pending change whose event is known not to be recorded. */
  cancel(userId: number, key: string): Promise<void>;
  /** Bytes all users' files take (settled): one pass over the users' records (metrics). */
  total(): Promise<number>;
  /**
   * Sets every user's settled bytes once, when the ledger has never been seeded (upgrading a
   * deployment whose uploads predate the ledger); `count` is called only then.
   */
  seed(count: () => Promise<Map<number, number>>): Promise<boolean>;
  close(): Promise<void>;
}

export interface StorageLedgerOptions {
  /** What a pending change older than the lease became: asked of the event log (docs-command: the file's stream). */
  resolve: (change: StorageChange) => Promise<Resolution>;
  /** How long an entry is left to its request before the user's next operation repairs it (default 10 minutes). */
  leaseMs?: number;
  /**
   * Whether the session of a session hold older than the lease (and not past its `until`) still
   * goes on: 'ended' → the hold is dropped. Absent: such holds are kept until their `until`.
   */
  resolveHold?: (holdId: string) => Promise<HoldState>;
  now?: () => number;
}
