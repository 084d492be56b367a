// Real-server adapters have their own entry point (@docshare/search-index/elasticsearch) so embedded mode never loads their drivers.
export * from './port.ts';
export { makeMemorySearchIndex } from './memory-search-index.ts';
export { makeSnippets, snippetOf, DEFAULT_SNIPPET_LENGTH, SNIPPET_CONTENT_LENGTH, SNIPPET_FUZZY_WORK_PER_PAGE } from './snippet.ts';
export type { SnippetOptions, Snippets, SnippetWork } from './snippet.ts';
export type { MemorySearchIndexOptions } from './memory-search-index.ts';
