// Real-server adapters have their own entry point (@docshare/personal-data/mongo) so embedded mode never loads their drivers.
export * from './port.ts';
export * from './kek.ts';
export * from './fields.ts';
export * from './personal-data.ts';
export * from './decorators.ts';
export { makeMemoryKeyStore } from './memory-key-store.ts';
export * from './rotate.ts';
export { openFileKeyStore } from './file-key-store.ts';
