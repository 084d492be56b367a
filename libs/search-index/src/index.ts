export * from './port.ts';
export { makeMemorySearchIndex } from './memory-search-index.ts';
