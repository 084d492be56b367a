import { storageLedgerContract } from '../src/contract.ts';
import { makeMemoryStorageLedger } from '../src/memory-storage-ledger.ts';

storageLedgerContract('memory', async (options) => makeMemoryStorageLedger(options));
