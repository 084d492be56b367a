export * from './port.ts';
export { makeMemoryReadStore } from './memory-read-store.ts';
export { DOCSHARE_READ_MODEL_INDEXES, makeMongoReadStore } from './mongo-read-store.ts';
export type { MongoReadStoreOptions, ReadModelIndex } from './mongo-read-store.ts';
