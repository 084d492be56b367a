// Real-server adapters have their own entry point (@docshare/search-index/elasticsearch) so embedded mode never loads their drivers.
export * from './port.ts';
export { makeMemorySearchIndex } from './memory-search-index.ts';
export { snippetOf, DEFAULT_SNIPPET_LENGTH } from './snippet.ts';
export type { SnippetOptions } from './snippet.ts';
export type { MemorySearchIndexOptions } from './memory-search-index.ts';
