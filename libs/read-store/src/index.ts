// Real-server adapters have their own entry point (@docshare/read-store/mongo) so embedded mode never loads their drivers.
export * from './port.ts';
export { makeMemoryReadStore } from './memory-read-store.ts';
