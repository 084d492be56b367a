export * from './port.ts';
export { encodeCursor, decodeCursor } from './cursor.ts';
export { makeMemoryWebhookStore } from './memory-store.ts';
