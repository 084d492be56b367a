import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { storageLedgerContract } from '../src/contract.ts';
import { makeMemoryStorageLedger, memoryLedgerRecords } from '../src/memory-storage-ledger.ts';
import { makeLedger } from '../src/record.ts';

storageLedgerContract('memory', async (options) => makeMemoryStorageLedger(options));

describe('memory storage ledger', () => {
  it('a record written before session holds (no until in its entries) is repaired as before, resolveHold never asked', async () => {
    const records = memoryLedgerRecords();
    // Exactly what the previous version stored: a hold and a pending upload, both without `until`.
    assert.equal(await records.write(1, 0, {
      used: 100,
      entries: { 'hold:h': { bytes: 50, at: 1_000 }, 'upload:7': { bytes: 30, at: 1_000, change: { kind: 'upload', fileId: 7, bytes: 30 } } },
      recent: [],
    }), true);
    const askedHolds: string[] = [];
    const ledger = makeLedger(records, {
      now: () => 1_000 + 60_001,
      leaseMs: 60_000,
      resolve: async () => 'recorded',
      resolveHold: async (holdId) => {
        askedHolds.push(holdId);
        return 'open';
      },
    });
    assert.equal(await ledger.usage(1), 130);
    assert.deepEqual(askedHolds, []);
    assert.deepEqual((await records.read(1)).record.entries, {});
    await ledger.close();
  });
});
