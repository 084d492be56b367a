// The MongoDB adapter has its own entry point (@docshare/idempotency-store/mongo) so embedded mode never loads its driver.
export * from './port.ts';
export { COMPACT_EVERY_MS, openFileIdempotencyStore, type FileIdempotencyOptions, type FileIdempotencyStore } from './file-idempotency-store.ts';
