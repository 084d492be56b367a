import type { StorageLedger, StorageLedgerOptions } from './port.ts';
import { emptyRecord, makeLedger, type LedgerRecords, type UserRecord } from './record.ts';

/** The records in memory (tests, and a single process that needs no durability). */
export const memoryLedgerRecords = (): LedgerRecords => {
  const records = new Map<number, { record: UserRecord; version: number }>();
  let seeded = false;
  return {
    read: async (userId) => {
      const stored = records.get(userId);
      return stored ? { record: structuredClone(stored.record), version: stored.version } : { record: emptyRecord(), version: 0 };
    },
    write: async (userId, version, record) => {
      if ((records.get(userId)?.version ?? 0) !== version) return false;
      records.set(userId, { record: structuredClone(record), version: version + 1 });
      return true;
    },
    total: async () => [...records.values()].reduce((sum, { record }) => sum + record.used, 0),
    seed: async (count) => {
      if (seeded) return false;
      seeded = true;
      for (const [userId, used] of await count()) {
        const stored = records.get(userId);
        records.set(userId, { record: { ...(stored?.record ?? emptyRecord()), used }, version: (stored?.version ?? 0) + 1 });
      }
      return true;
    },
    close: async () => undefined,
  };
};

export const makeMemoryStorageLedger = (options: StorageLedgerOptions): StorageLedger => makeLedger(memoryLedgerRecords(), options);
