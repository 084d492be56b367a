import { retrying } from '@docshare/contracts';
import { changeKey, holdKey, type StorageChange, type StorageLedger, type StorageLedgerOptions } from './port.ts';

/**
 * One entry in flight: a hold (no `change`) or a pending change; `at` is when it was made or its
 * lease last restarted (ms); `until` (ms epoch) only on a session hold (port.ts).
 */
export interface LedgerEntry { bytes: number; at: number; change?: StorageChange; until?: number }

/** A user's record (port.ts); `recent` holds the keys of the last RECENT_KEYS changes settled. */
export interface UserRecord { used: number; entries: Record<string, LedgerEntry>; recent: string[] }

/** How many settled changes a record remembers (a bounded window: a settle repeated within it counts once). */
export const RECENT_KEYS = 64;
export const DEFAULT_LEASE_MS = 10 * 60_000;

/** A user's record and the version the adapter stores it at (0: none yet). */
export interface Versioned { record: UserRecord; version: number }

/**
 * What an adapter stores: one record per user, written only at the version it was read at
 * (compare-and-set), plus the seeding mark. Everything else is the ledger's (makeLedger).
 */
export interface LedgerRecords {
  read(userId: number): Promise<Versioned>;
  /** Writes `record` if the stored version is still `version`; false when another write came first. */
  write(userId: number, version: number, record: UserRecord): Promise<boolean>;
  /** Σ used over all records. */
  total(): Promise<number>;
  /** Writes the seeded totals and the mark, unless marked already; false then. */
  seed(count: () => Promise<Map<number, number>>): Promise<boolean>;
  close(): Promise<void>;
}

export const emptyRecord = (): UserRecord => ({ used: 0, entries: {}, recent: [] });

const inFlight = (record: UserRecord): number => Object.values(record.entries).reduce((sum, entry) => sum + entry.bytes, 0);
const usageOf = (record: UserRecord): number => record.used + inFlight(record);

const HOLD_PREFIX = holdKey('');

/** A hold entry of `bytes` made now; a session hold's `until` only when there is one (no `until: undefined` stored). */
const holdEntry = (bytes: number, at: number, until: number | undefined): LedgerEntry =>
  until === undefined ? { bytes, at } : { bytes, at, until };

const without = (record: UserRecord, key: string): UserRecord => {
  const { [key]: _gone, ...entries } = record.entries;
  return { ...record, entries };
};

/** Applies a recorded change to a record, once. */
const applied = (record: UserRecord, key: string): UserRecord => {
  const entry = record.entries[key];
  const { [key]: _gone, ...entries } = record.entries;
  if (!entry?.change || record.recent.includes(key)) return { ...record, entries };
  const delta = entry.change.kind === 'upload' ? entry.change.bytes : -entry.change.bytes;
  return { used: Math.max(0, record.used + delta), entries, recent: [...record.recent, key].slice(-RECENT_KEYS) };
};

class Raced extends Error {}

/** The StorageLedger over an adapter's records: every step one read and one compare-and-set. */
export const makeLedger = (records: LedgerRecords, options: StorageLedgerOptions): StorageLedger => {
  const now = options.now ?? Date.now;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;

  /**
   * Reads the user's record, repairs its stale entries, passes it to `change` and writes what
   * that returns (unchanged: no write); read again and redone when another write came first.
   */
  const update = <T>(userId: number, change: (record: UserRecord) => { record: UserRecord; result: T }): Promise<T> =>
    retrying(async () => {
      const { record, version } = await records.read(userId);
      const repaired = await repair(record);
      const next = change(repaired);
      if (next.record === record) return next.result;
      if (!(await records.write(userId, version, next.record))) throw new Raced();
      return next.result;
    }, { attempts: 50, baseMs: 1, capMs: 20, retryIf: (error) => error instanceof Raced });

  /**
   * The record with its entries older than the lease resolved: holds dropped, changes settled or
   * dropped; session holds dropped past their `until`, else (older than the lease) as
   * `resolveHold` answers, once each, an open one's lease restarted.
   */
  const repair = async (record: UserRecord): Promise<UserRecord> => {
    let repaired = record;
    for (const [key, entry] of Object.entries(record.entries)) {
      const at = now();
      if (entry.until !== undefined) {
        if (at > entry.until) repaired = without(repaired, key);
        else if (at - entry.at > leaseMs && options.resolveHold) {
          const state = await options.resolveHold(key.slice(HOLD_PREFIX.length));
          repaired = state === 'ended'
            ? without(repaired, key)
            : { ...repaired, entries: { ...repaired.entries, [key]: { ...entry, at: now() } } };
        }
        continue;
      }
      if (at - entry.at <= leaseMs) continue;
      const recorded = entry.change ? await options.resolve(entry.change) === 'recorded' : false;
      repaired = recorded ? applied(repaired, key) : without(repaired, key);
    }
    return repaired;
  };

  return {
    usage: (userId) => update(userId, (record) => ({ record, result: usageOf(record) })),

    reserve: (userId, holdId, wanted, quotaBytes, { until, exact = false } = {}) => update(userId, (record) => {
      const key = holdKey(holdId);
      const free = quotaBytes - usageOf(record) + (record.entries[key]?.bytes ?? 0);
      if (free <= 0 || (exact && wanted !== undefined && free < wanted)) return { record, result: { held: 0, free } };
      const held = Math.min(free, wanted ?? free);
      return { record: { ...record, entries: { ...record.entries, [key]: holdEntry(held, now(), until) } }, result: { held, free } };
    }),

    resize: (userId, holdId, bytes, quotaBytes) => update(userId, (record) => {
      const key = holdKey(holdId);
      const entry = record.entries[key];
      const held = entry?.bytes ?? 0;
      if (bytes > held && usageOf(record) - held + bytes > quotaBytes) return { record, result: false };
      return { record: { ...record, entries: { ...record.entries, [key]: holdEntry(bytes, now(), entry?.until) } }, result: true };
    }),

    pend: (userId, change, holdId) => update(userId, (record) => {
      const entries = { ...record.entries };
      if (holdId !== undefined) delete entries[holdKey(holdId)];
      entries[changeKey(change)] = { bytes: change.kind === 'upload' ? change.bytes : 0, at: now(), change };
      return { record: { ...record, entries }, result: undefined };
    }),

    settle: (userId, change) => update(userId, (record) => {
      const key = changeKey(change);
      return { record: key in record.entries ? applied(record, key) : record, result: undefined };
    }),

    cancel: (userId, key) => update(userId, (record) => ({ record: key in record.entries ? without(record, key) : record, result: undefined })),

    total: () => records.total(),
    seed: (count) => records.seed(count),
    close: () => records.close(),
  };
};
