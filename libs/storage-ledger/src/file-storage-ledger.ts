import { join } from 'node:path';
import { openDurableLog, type DurableLog } from '@docshare/durable-log';
import type { StorageLedger, StorageLedgerOptions } from './port.ts';
import { emptyRecord, makeLedger, type LedgerRecords, type UserRecord } from './record.ts';

/** One line of storage-ledger.log: a user's record at a version, or the seeding mark. */
type Line = { u: number; v: number; r: UserRecord } | { seeded: true };

const isLine = (payload: unknown): payload is Line =>
  typeof payload === 'object' && payload !== null
  && (('seeded' in payload && payload.seeded === true) || ('u' in payload && 'v' in payload && 'r' in payload));

/**
 * The records of embedded mode: `<dir>/storage-ledger.log`, a durable log (libs/durable-log) of
 * whole user records, the last one of each user winning; kept in memory, read back at open, and
 * compacted (one line per user) once the superseded lines outnumber the users.
 */
export const openFileLedgerRecords = async (dir: string, onWarning?: (message: string) => void): Promise<LedgerRecords> => {
  const records = new Map<number, { record: UserRecord; version: number }>();
  /** The version a write in flight will leave, per user: a second write at the same version loses. */
  const writing = new Map<number, number>();
  let seeded = false;
  const log: DurableLog = await openDurableLog(join(dir, 'storage-ledger.log'), ({ payload, where }) => {
    if (!isLine(payload)) throw new Error(`${where}: not a storage ledger record`);
    if ('seeded' in payload) seeded = true;
    else records.set(payload.u, { record: payload.r, version: payload.v });
  }, { name: 'storage ledger', ...(onWarning ? { onWarning } : {}) });

  const compactIfWorthIt = async (): Promise<void> => {
    if (log.size().records <= 2 * records.size + 1_000) return;
    await log.compact(function* live() {
      if (seeded) yield JSON.stringify({ seeded: true });
      for (const [u, { record, version }] of records) yield JSON.stringify({ u, v: version, r: record });
    });
  };

  return {
    read: async (userId) => {
      const stored = records.get(userId);
      return stored ? { record: structuredClone(stored.record), version: stored.version } : { record: emptyRecord(), version: 0 };
    },
    write: async (userId, version, record) => {
      if ((writing.get(userId) ?? records.get(userId)?.version ?? 0) !== version) return false;
      writing.set(userId, version + 1);
      const kept = structuredClone(record);
      try {
        await log.append(JSON.stringify({ u: userId, v: version + 1, r: kept }), () => records.set(userId, { record: kept, version: version + 1 }));
      } finally {
        if (writing.get(userId) === version + 1) writing.delete(userId);
      }
      await compactIfWorthIt();
      return true;
    },
    total: async () => [...records.values()].reduce((sum, { record }) => sum + record.used, 0),
    seed: async (count) => {
      if (seeded) return false;
      for (const [userId, used] of await count()) {
        if (records.has(userId)) continue;
        await log.append(JSON.stringify({ u: userId, v: 1, r: { ...emptyRecord(), used } }), () => records.set(userId, { record: { ...emptyRecord(), used }, version: 1 }));
      }
      await log.append(JSON.stringify({ seeded: true }), () => { seeded = true; });
      return true;
    },
    close: () => log.close(),
  };
};

export const openFileStorageLedger = async (dir: string, options: StorageLedgerOptions & { onWarning?: (message: string) => void }): Promise<StorageLedger> =>
  makeLedger(await openFileLedgerRecords(dir, options.onWarning), options);
