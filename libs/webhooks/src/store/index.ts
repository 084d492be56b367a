export * from './port.ts';
export { encodeCursor, decodeCursor } from './cursor.ts';
export { makeMemoryWebhookStore } from './memory-store.ts';
export { openFileWebhookStore, type FileWebhookStore, type FileWebhookStoreOptions } from './file-store.ts';
