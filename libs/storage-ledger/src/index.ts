export * from './port.ts';
export { RECENT_KEYS, DEFAULT_LEASE_MS } from './record.ts';
export { makeMemoryStorageLedger } from './memory-storage-ledger.ts';
export { openFileStorageLedger } from './file-storage-ledger.ts';
