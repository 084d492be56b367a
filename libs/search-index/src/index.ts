export * from './port.ts';
export { makeMemorySearchIndex } from './memory-search-index.ts';
export { makeElasticsearchSearchIndex } from './elasticsearch-search-index.ts';
export type {
  ElasticsearchRebuild, ElasticsearchSearchIndex, ElasticsearchSearchIndexOptions,
} from './elasticsearch-search-index.ts';
