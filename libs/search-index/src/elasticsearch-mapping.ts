/**
 * The Elasticsearch index of files, as data: mapping, settings and the query's field boosts. The
 * adapter creates every index from these; `infra/elasticsearch/mapping.ts` re-exports and prints
 * them for ops. Explained in docs/elasticsearch.md.
 *
 * Text analysis happens in the application, not in Elasticsearch: the minimal distribution has no
 * `analysis-common` module (no `asciifolding`, no char filters, only the `standard` tokenizer), so
 * the adapter indexes and queries `tokenize()`'s output (diacritics folded, lowercased, split on
 * anything but letters and digits, words joined by single spaces), exactly the words the memory
 * index sees. Elasticsearch then only has to split on spaces: the built-in `whitespace` analyzer.
 */
import type { estypes } from '@elastic/elasticsearch';

/** Analyzer of the text fields, index and query side. */
export const TEXT_ANALYZER = 'whitespace';

/** multi_match fields with their boosts: title > tags > category > description > content. */
export const SEARCH_FIELDS = ['title^3', 'tags^2', 'category^1.5', 'description', 'content^0.5'];

/**
 * A search uses the first this many distinct words of its text and ignores the rest. Each word is
 * a fuzzy (AUTO) clause on four fields, and Lucene's edit-distance automata are costly: on the
 * local node (512 MB heap, 500 documents) 32 ten-letter words take ~0.5 s and 150 trip the request
 * circuit breaker. The API's 200-character limit on a search term allows at most ~28 words of six
 * letters or more, so only queries of many short (cheap) words lose words to this cap.
 */
export const MAX_QUERY_WORDS = 32;

/**
 * Elasticsearch's `index.max_result_window` (its default, set explicitly): `from + size` may not
 * exceed it. Cursors (search_after on a point in time) are not bound by it.
 */
export const MAX_RESULT_WINDOW = 10_000;

/** Version of the mapping, in its `_meta`: 2 added content, categoryId, categoryName, license, tagKeys. */
export const SCHEMA_VERSION = 2;

/**
 * Terms fetched for the category facet before the adapter orders them by count, then name (the
 * aggregation can only break ties by id) and keeps FACET_SIZE: categories are few, so all of them.
 */
export const CATEGORY_FACET_TERMS = 1000;

const text = { type: 'text', analyzer: TEXT_ANALYZER } as const;

/**
 * `_source` of a file: `id`, `ownerId`, `visible`, `uploadedAt` as in SearchDoc; `title`,
 * `description`, `tags`, `category`, `content` hold the analysed words, `categoryId`, `license`,
 * `categoryName` (the category as written), `tagKeys` (`tagKey` of each tag) the filter and facet
 * values: all absent while the file is invisible, so hidden files neither weigh in the scores (as
 * in the memory index) nor count in facets. `original` keeps the SearchDoc's text fields,
 * categoryId and license as written, stored but not indexed, and is what reads return.
 */
export const SEARCH_INDEX_MAPPINGS = {
  dynamic: 'strict',
  _meta: { schema: SCHEMA_VERSION },
  properties: {
    id: { type: 'keyword' },
    title: text,
    description: text,
    tags: text,
    category: text,
    content: text,
    categoryId: { type: 'integer' },
    categoryName: { type: 'keyword' },
    license: { type: 'keyword' },
    tagKeys: { type: 'keyword' },
    ownerId: { type: 'integer' },
    visible: { type: 'boolean' },
    uploadedAt: { type: 'date', format: 'strict_date_optional_time' },
    original: { type: 'object', enabled: false },
  },
} as const satisfies estypes.MappingTypeMapping;

export interface SearchIndexSettingsOptions {
  /** `index.max_result_window` of the indices the adapter creates, and its cap of `from + size`: MAX_RESULT_WINDOW. */
  maxResultWindow?: number;
  /** Primary shards: 1 (a few hundred thousand small documents fit one shard). */
  shards?: number;
  /** Replicas: 0 on a single node (a replica could never be allocated and health would stay yellow). */
  replicas?: number;
  /** How often new writes become searchable without an explicit refresh: "1s", Elasticsearch's default, set explicitly. */
  refreshInterval?: string;
}

export const DEFAULT_INDEX_SETTINGS: Required<SearchIndexSettingsOptions> = {
  shards: 1, replicas: 0, refreshInterval: '1s', maxResultWindow: MAX_RESULT_WINDOW,
};

/** `settings` of a new index. BM25 with Lucene's defaults (k1 1.2, b 0.75) is the default similarity: not repeated. */
export function searchIndexSettings(options: SearchIndexSettingsOptions = {}): estypes.IndicesIndexSettings {
  return {
    number_of_shards: options.shards ?? DEFAULT_INDEX_SETTINGS.shards,
    number_of_replicas: options.replicas ?? DEFAULT_INDEX_SETTINGS.replicas,
    refresh_interval: options.refreshInterval ?? DEFAULT_INDEX_SETTINGS.refreshInterval,
    max_result_window: options.maxResultWindow ?? MAX_RESULT_WINDOW,
  };
}
