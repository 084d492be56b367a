export * from './port.ts';
export { makeMemoryReadStore } from './memory-read-store.ts';
