import { retrying } from '@docshare/contracts';
import { Client, errors } from '@elastic/elasticsearch';
import type { DiagnosticResult, estypes } from '@elastic/elasticsearch';
import { contentHead, FACET_SIZE, InvalidCursor } from './port.ts';
import type { SearchDoc, SearchFacets, SearchIndex, SearchOptions, SearchPage, SearchResult, VersionedDoc } from './port.ts';
import { at } from './checked.ts';
import { latestPerId, tokenize } from './memory-search-index.ts';
import {
  CATEGORY_FACET_TERMS, DEFAULT_INDEX_SETTINGS, MAX_QUERY_WORDS, SCHEMA_VERSION, SEARCH_FIELDS, SEARCH_INDEX_MAPPINGS,
  searchIndexSettings,
} from './elasticsearch-mapping.ts';
import type { SearchIndexSettingsOptions } from './elasticsearch-mapping.ts';
import {
  byCountThenName, byCountThenValue, checkKey, checkTtl, deadlineOf, decodeCursor, DEFAULT_CURSOR_MAX_AGE_SECONDS,
  DEFAULT_CURSOR_TTL_SECONDS, encodeCursor, normalFilters, offsetOf, queryKey, tagKeysOf,
} from './cursor.ts';
import type { CursorOptions, NormalFilters } from './cursor.ts';

export interface ElasticsearchSearchIndexOptions extends SearchIndexSettingsOptions, CursorOptions {
  /** Elasticsearch URL, e.g. http://127.0.0.1:19200. */
  node: string;
  /** Alias every read and write goes through; it points at one concrete index `<alias>-<timestamp>`. */
  alias: string;
  /**
   * When an upsert resolves, is the document searchable? `true` (default): the write refreshes the
   * shard, so a client that uploads and then searches finds its file, at the cost of one small
   * segment per write. `'wait_for'`: the write waits for the next scheduled refresh (up to
   * `refreshInterval`), cheaper for the index but slower per write. `false`: searchable within
   * `refreshInterval`, no wait. See docs/elasticsearch.md. Applies to `upsert` only: `upsertMany`
   * never refreshes (its caller calls `refresh()` once per batch).
   */
  refreshOnWrite?: boolean | 'wait_for';
  /** Per request; default 30 s. */
  requestTimeoutMs?: number;
  /** Retries of a request that failed to connect or got 502/503/504, with exponential backoff; default 3. */
  maxRetries?: number;
  /**
   * Key of the HMAC that signs cursors, so that an altered one is refused (InvalidCursor). Every
   * process answering the same searches needs the same key; the default is a fixed one: a forged
   * cursor could only read what a search can read anyway.
   */
  cursorSecret?: string;
  /** A point in time opened less than this long ago is shared by the searches that need a cursor (while it gives their first page); default 1000 ms. */
  pitReuseMs?: number;
}

/** A fresh index being filled by a rebuild: not behind the alias until `publish()`. */
export interface ElasticsearchRebuild extends SearchIndex {
  /** The concrete index being filled. */
  readonly indexName: string;
  /**
   * Refreshes the new index, then points the alias at it and deletes the index it pointed at, in
   * one atomic `_aliases` call. Fails, changing nothing, if the alias moved meanwhile (another
   * publish or clear). Idempotent once it succeeded.
   */
  publish(): Promise<void>;
  /** Deletes the new index instead of publishing it (a failed rebuild). */
  discard(): Promise<void>;
}

export interface ElasticsearchSearchIndex extends SearchIndex {
  /** Creates a fresh index, not behind the alias, and a SearchIndex writing into it. */
  rebuildInto(): Promise<{ index: ElasticsearchRebuild }>;
  /** Resolves when the alias's index answers (health at least yellow); rejects otherwise. For readiness checks. */
  ready(): Promise<void>;
  /** The concrete indices behind the alias: one, except for a moment during a racing first start. */
  indices(): Promise<string[]>;
}

/** What the index stores for a file: see SEARCH_INDEX_MAPPINGS. */
export interface Source {
  id: string;
  ownerId: number;
  visible: boolean;
  uploadedAt: string;
  title?: string;
  description?: string;
  tags?: string[];
  category?: string;
  content?: string;
  categoryId?: number;
  categoryName?: string;
  license?: string;
  tagKeys?: string[];
  /**
   * categoryId, license and content are absent from documents written before schema 2 (until a
   * rebuild). `content` holds the text's first HIT_CONTENT_LENGTH characters and `contentRest` the
   * others (absent when none), so that searches fetch only the start (documents written before
   * hold all of it in `content`).
   */
  original: {
    title: string; description: string; tags: string[]; category: string; categoryId?: number; license?: string;
    content?: string; contentRest?: string;
  };
}

/** The analysed form of a text: the words the memory index would see, joined by spaces. */
const analyse = (text: string): string => tokenize(text).join(' ');

/** The `_source` of a document as the adapter writes it (exported for test/bulk-bench.ts's raw `_bulk`). */
export function toSource(doc: SearchDoc): Source {
  const head = contentHead(doc.content);
  const source: Source = {
    id: doc.id,
    ownerId: doc.ownerId,
    visible: doc.visible,
    uploadedAt: doc.uploadedAt,
    original: {
      title: doc.title, description: doc.description, tags: [...doc.tags], category: doc.category,
      categoryId: doc.categoryId, license: doc.license, content: head,
      ...(head.length < doc.content.length ? { contentRest: doc.content.slice(head.length) } : {}),
    },
  };
  // Invisible files are never returned: their words stay out of the index and out of its statistics.
  if (doc.visible) {
    source.title = analyse(doc.title);
    source.description = analyse(doc.description);
    source.tags = doc.tags.map(analyse).filter((tag) => tag !== '');
    source.category = analyse(doc.category);
    source.content = analyse(doc.content);
    source.categoryId = doc.categoryId;
    source.categoryName = doc.category;
    source.license = doc.license;
    source.tagKeys = tagKeysOf(doc.tags);
  }
  return source;
}

/** The document a `_source` holds; as a search hit (`hit`), with the start of its content only. */
function fromSource(source: Source, hit = false): SearchDoc {
  const { original } = source;
  const content = (original.content ?? '') + (original.contentRest ?? '');
  return {
    id: source.id,
    title: original.title,
    description: original.description,
    tags: [...original.tags],
    category: original.category,
    categoryId: original.categoryId ?? 0,
    license: original.license ?? '',
    content: hit ? contentHead(content) : content,
    ownerId: source.ownerId,
    visible: source.visible,
    uploadedAt: source.uploadedAt,
  };
}

/** Only what fromSource reads: the analysed words need not travel back. */
const SOURCE_FIELDS = ['id', 'ownerId', 'visible', 'uploadedAt', 'original'];

/** What a search hit reads: the content's start only (HIT_CONTENT_LENGTH), not up to 100,000 characters per hit. */
const HIT_SOURCE: estypes.SearchSourceFilter = { includes: SOURCE_FIELDS, excludes: ['original.contentRest'] };

/**
 * Rounds of one cursor page: when files of its snapshot were deleted or disabled since, the page
 * is refilled from further on, this many times at most (then it holds fewer hits, and its cursor
 * goes on from there).
 */
const MAX_CURSOR_ROUNDS = 3;

function checkPage(page: SearchPage): void {
  for (const [name, value] of Object.entries(page)) {
    if (!(Number.isInteger(value) && value >= 0)) throw new Error(`page.${name} must be a non-negative integer, got ${value}`);
  }
}

function checkVersion(version: number): void {
  // Elasticsearch's external versions are non-negative longs.
  if (!(Number.isSafeInteger(version) && version >= 0)) throw new Error(`version must be a non-negative integer, got ${version}`);
}

function errorType(error: unknown): string | undefined {
  if (!(error instanceof errors.ResponseError)) return undefined;
  const body: unknown = error.body;
  if (typeof body !== 'object' || body === null || !('error' in body)) return undefined;
  const detail: unknown = body.error;
  return typeof detail === 'object' && detail !== null && 'type' in detail && typeof detail.type === 'string' ? detail.type : undefined;
}

const isStatus = (error: unknown, status: number): boolean => error instanceof errors.ResponseError && error.statusCode === status;

/** One entry of a `_bulk` that failed for a reason other than a version conflict. */
export interface BulkFailure { id: string; status: number; type: string; reason: string }

/**
 * Some entries of an `upsertMany` failed (other than "already newer"). `cause` is the
 * `ResponseError` that a single-document write would have thrown for the deciding failure (the
 * first permanent one, else the first transient one), so `isTransient` (@docshare/http) sees a
 * 429 or 5xx as transient through it, as for any other Elasticsearch request; `transient` says
 * the same. The other entries of the call may be stored: replaying it is safe (external versions).
 */
export class SearchBulkError extends Error {
  override readonly name = 'SearchBulkError';
  readonly failures: readonly BulkFailure[];
  readonly transient: boolean;
  constructor(message: string, failures: readonly BulkFailure[], transient: boolean, cause: errors.ResponseError) {
    super(message, { cause });
    this.failures = failures;
    this.transient = transient;
  }
}

/** Too many requests or a server-side failure: worth retrying, as `isTransient` (@docshare/http) judges a ResponseError. */
const transientStatus = (status: number): boolean => status === 429 || status >= 500;

/**
 * The ResponseError a single-document request would have thrown for `status` and `error`, carrying
 * the diagnostics of the `_bulk` or `_mget` response that reported it (HTTP 200 as a whole).
 */
function itemError(response: DiagnosticResult, status: number, error: estypes.ErrorCause): errors.ResponseError {
  return new errors.ResponseError({ ...response, statusCode: status, body: { error, status } });
}

/** What a single `get` answers for an `_mget` item's error: 404 for a missing index, 503 for an unavailable shard, else 500. */
function mgetItemStatus(type: string): number {
  if (type === 'index_not_found_exception') return 404;
  return type === 'no_shard_available_action_exception' || type === 'unavailable_shards_exception' ? 503 : 500;
}

/** An index named in the request was deleted meanwhile (by another process). */
const indexGone = (error: unknown): boolean => errorType(error) === 'index_not_found_exception';

/** How many failures an error message names; `failures` holds them all. */
const NAMED_FAILURES = 5;

/** The query of a search: each word scores by its best field (fuzzily), words add up; visible files passing the filters only. */
export function searchQuery(words: string[], filters: NormalFilters = { tags: [] }): estypes.QueryDslQueryContainer {
  const filter: estypes.QueryDslQueryContainer[] = [{ term: { visible: true } }];
  if (filters.categoryId !== undefined) filter.push({ term: { categoryId: filters.categoryId } });
  if (filters.license !== undefined) filter.push({ term: { license: filters.license } });
  for (const tag of filters.tags) filter.push({ term: { tagKeys: tag } });
  return {
    bool: {
      should: words.map((word) => ({
        multi_match: { query: word, fields: SEARCH_FIELDS, type: 'best_fields', fuzziness: 'AUTO' },
      })),
      minimum_should_match: 1,
      filter,
    },
  };
}

const FACET_ORDER: estypes.AggregationsAggregateOrder = [{ _count: 'desc' }, { _key: 'asc' }];

/** The facets as terms aggregations: categories by id with their most frequent name, licences, tag keys. */
const FACET_AGGREGATIONS: Record<string, estypes.AggregationsAggregationContainer> = {
  category: {
    terms: { field: 'categoryId', size: CATEGORY_FACET_TERMS, order: FACET_ORDER },
    aggs: { name: { terms: { field: 'categoryName', size: 1, order: FACET_ORDER } } },
  },
  license: { terms: { field: 'license', size: FACET_SIZE, order: FACET_ORDER } },
  tag: { terms: { field: 'tagKeys', size: FACET_SIZE, order: FACET_ORDER } },
};

interface Bucket { key: string | number; doc_count: number; name?: { buckets: Bucket[] } }

function bucketsOf(aggregations: Record<string, unknown> | undefined, name: string): Bucket[] {
  const aggregate = aggregations?.[name] as { buckets?: Bucket[] } | undefined;
  return Array.isArray(aggregate?.buckets) ? aggregate.buckets : [];
}

function facetsFrom(aggregations: Record<string, unknown> | undefined): SearchFacets {
  const counts = (name: string) => bucketsOf(aggregations, name)
    .map((bucket) => ({ value: String(bucket.key), count: bucket.doc_count })).sort(byCountThenValue).slice(0, FACET_SIZE);
  const category = bucketsOf(aggregations, 'category').map((bucket) => ({
    id: Number(bucket.key), name: String(bucket.name?.buckets[0]?.key ?? ''), count: bucket.doc_count,
  }));
  return { category: category.sort(byCountThenName).slice(0, FACET_SIZE), license: counts('license'), tag: counts('tag') };
}

const EMPTY_FACETS = (): SearchFacets => ({ category: [], license: [], tag: [] });

/** Best first; ties go to the newer upload, then to the smaller id, so pages are stable. */
export const SEARCH_SORT: estypes.Sort = ['_score', { uploadedAt: 'desc' }, { id: 'asc' }];

/** Last timestamp used in an index name by this process: names stay unique within it. */
let lastStamp = 0;

function indexStamp(): string {
  const now = Math.max(Date.now(), lastStamp + 1);
  lastStamp = now;
  // 2026-11-20T22:14:19.123Z -> 20261120-221419-123
  const iso = new Date(now).toISOString();
  return `${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}-${iso.slice(20, 23)}`;
}

interface Target {
  /** Index or alias the operations address. */
  name: string;
  viaAlias: boolean;
  refresh: estypes.Refresh;
  /** Set once a rebuild index is discarded: a write would auto-create an index of that name, with a dynamic mapping. */
  gone?: string;
}

function checkTarget(target: Target): void {
  if (target.gone) throw new Error(target.gone);
}

/** How searches page with cursors. */
interface CursorConfig {
  /** keep_alive of the points in time, e.g. "300s". */
  keepAlive: string;
  ttlSeconds: number;
  /** A cursor is refused this long after the opening of its point in time, however often used. */
  maxAgeMs: number;
  secret: string;
  reuseMs: number;
  /** `from + size` cap (the index's max_result_window). */
  window: number;
}

/** A point in time, with when its opening was sent. */
interface Pit { id: string; sentAt: number }

type Operations = Pick<SearchIndex, 'upsert' | 'get' | 'getMany' | 'upsertMany' | 'refresh' | 'search'> & {
  /** Stops sharing the current point in time (the index behind the alias changed). */
  forgetPit(): void;
  /** Closes the shared point in time, if any. */
  closePit(): Promise<void>;
};

const totalOf = (response: estypes.SearchResponse<Source>): number => {
  const { total } = response.hits;
  return typeof total === 'number' ? total : (total?.value ?? 0);
};

const sameFirstPage = (a: estypes.SearchResponse<Source>, b: estypes.SearchResponse<Source>): boolean =>
  totalOf(a) === totalOf(b) && a.hits.hits.length === b.hits.hits.length && a.hits.hits.every((hit, i) => hit._id === b.hits.hits[i]?._id);

/** A continuation that Elasticsearch refuses (the point in time expired or its index is gone; 400: its values do not fit). */
const cursorRefused = (error: unknown): boolean => isStatus(error, 404) || isStatus(error, 400);

/**
 * The `search_after` values of a cursor: [_score, uploadedAt (epoch ms), id] as SEARCH_SORT, and the
 * `_shard_doc` tiebreaker a search on a point in time appends.
 */
function searchAfterOf(payload: Record<string, unknown>): estypes.SortResults {
  const after = payload.a;
  if (Array.isArray(after) && (after.length === 3 || (after.length === 4 && typeof after[3] === 'number'))
    && typeof after[0] === 'number' && typeof after[1] === 'number' && typeof after[2] === 'string') {
    return after;
  }
  throw new InvalidCursor('malformed cursor');
}

/** The id of a hit: every document the adapter writes has one, so a hit without it is a broken answer. */
function idOf(hit: { _id?: string | undefined }): string {
  if (hit._id === undefined) throw new Error('Elasticsearch returned a hit without _id');
  return hit._id;
}

/** Writes, reads and searches against `target`, which may change (clear of a rebuild index). */
function operations(client: Client, target: Target, cursors: CursorConfig): Operations {
  /** The point in time that searches needing a cursor share while it is younger than `reuseMs`. */
  let shared: Pit | undefined;
  let opening: Promise<Pit> | undefined;
  let openingSentAt = 0;

  /** A point in time whose opening was sent at or after `since`: the shared one, the one being opened, or a new one. */
  async function pitSince(since: number): Promise<Pit> {
    if (shared && shared.sentAt >= since) return shared;
    if (opening && openingSentAt >= since) return opening;
    const sentAt = Date.now();
    const started = (async () => {
      const response = await client.openPointInTime({ index: target.name, keep_alive: cursors.keepAlive });
      const pit = { id: response.id, sentAt };
      if (!shared || shared.sentAt < sentAt) shared = pit;
      return pit;
    })();
    opening = started;
    openingSentAt = sentAt;
    try {
      return await started;
    } finally {
      if (opening === started) opening = undefined;
    }
  }

  type Body = Omit<estypes.SearchRequest, 'index' | 'pit'>;
  const onPit = (pit: string, body: Body, keepAlive = cursors.keepAlive) => client.search<Source>({
    ...body,
    pit: { id: pit, keep_alive: keepAlive },
    // A shard whose context is gone must fail the search, not answer part of the matches.
    allow_partial_search_results: false,
  });

  /** Cursors on a point in time end with it: its opening plus the maximum age. */
  const deadlineOfPit = (pit: Pit): number => pit.sentAt + cursors.maxAgeMs;

  /** A point in time kept for another TTL, never much past the deadline of the cursor using it. */
  const keepAliveUntil = (deadline: number): string =>
    `${Math.max(1, Math.min(cursors.ttlSeconds, Math.ceil((deadline - Date.now()) / 1000)))}s`;

  function page(response: estypes.SearchResponse<Source>, from: number, size: number, key: string, pit: Pit | undefined, facets: boolean): SearchResult {
    const total = totalOf(response);
    const hits = response.hits.hits;
    const result: SearchResult = { total, hits: hits.flatMap((hit) => (hit._source ? [fromSource(hit._source, true)] : [])), from };
    if (facets) result.facets = facetsFrom(response.aggregations);
    const next = from + hits.length;
    const last = hits[hits.length - 1];
    if (pit !== undefined && size > 0 && last?.sort && next < total) {
      result.nextCursor = encodeCursor({ p: response.pit_id ?? pit.id, a: last.sort, o: next, q: key, e: deadlineOfPit(pit) }, cursors.secret);
    }
    return result;
  }

  /** The stored documents of these ids (real-time reads), whole or as search hits; one `_mget`. */
  async function read(ids: readonly string[], hit: boolean): Promise<Map<string, VersionedDoc>> {
    checkTarget(target);
    const found = new Map<string, VersionedDoc>();
    const unique = [...new Set(ids)];
    if (unique.length === 0) return found;
    // Real-time, like get: a write is read back before any refresh.
    const response = await client.mget<Source>({
      index: target.name, ids: unique, _source_includes: SOURCE_FIELDS, ...(hit ? { _source_excludes: HIT_SOURCE.excludes } : {}),
    }, { meta: true });
    for (const item of response.body.docs) {
      if ('error' in item) {
        // A missing index (or alias) or an unavailable shard: what get would have thrown, not "absent".
        const { type, reason } = item.error;
        throw new Error(`Elasticsearch _mget from ${target.name}: ${item._id}: ${type}: ${reason ?? ''}`, {
          cause: itemError(response, mgetItemStatus(type), item.error),
        });
      }
      if (item.found && item._source && item._version !== undefined) {
        found.set(item._id, { doc: fromSource(item._source, hit), version: item._version });
      }
    }
    return found;
  }

  /**
   * The page after a cursor: its point in time gives the order (and the total and facets, as of
   * the first page); the documents are read as they are now, so a file deleted or disabled since
   * is left out at once, and a changed one shows its current version. Pages refill from further
   * on when files were left out (MAX_CURSOR_ROUNDS).
   */
  async function resume(pit: string, after: estypes.SortResults, base: Body, from: number, size: number, key: string, facets: boolean, deadline: number): Promise<SearchResult> {
    const keepAlive = keepAliveUntil(deadline);
    const hits: SearchDoc[] = [];
    let total = 0;
    let facetCounts: SearchFacets | undefined;
    let consumed = 0;
    let last = after;
    let pitId = pit;
    let more = true;
    for (let round = 0; round < MAX_CURSOR_ROUNDS && (round === 0 || hits.length < size) && more; round++) {
      const want = size - hits.length;
      const response = await onPit(pitId, {
        ...base, _source: false, size: want, search_after: last, ...(round === 0 ? {} : { aggs: undefined, track_total_hits: false }),
      }, keepAlive);
      if (round === 0) {
        total = totalOf(response);
        if (facets) facetCounts = facetsFrom(response.aggregations);
      }
      pitId = response.pit_id ?? pitId;
      const found = response.hits.hits;
      more = found.length === want && want > 0;
      const now = await read(found.map(idOf), true);
      for (const hit of found) {
        if (hits.length === size || !hit.sort) break;
        consumed++;
        last = hit.sort;
        const current = now.get(idOf(hit))?.doc;
        if (current?.visible) hits.push(current);
      }
    }
    const result: SearchResult = { total, hits, from };
    if (facetCounts) result.facets = facetCounts;
    const next = from + consumed;
    if (size > 0 && consumed > 0 && next < total) {
      result.nextCursor = encodeCursor({ p: pitId, a: last, o: next, q: key, e: deadline }, cursors.secret);
    }
    return result;
  }

  return {
    async upsert(doc: SearchDoc, version: number): Promise<boolean> {
      checkTarget(target);
      checkVersion(version);
      try {
        await client.index({
          index: target.name,
          id: doc.id,
          version,
          version_type: 'external',
          document: toSource(doc),
          refresh: target.refresh,
          // Writing to a missing alias would otherwise auto-create a concrete index of that name with a dynamic mapping.
          require_alias: target.viaAlias,
        });
        return true;
      } catch (error) {
        // version_conflict_engine_exception: the index holds this id at this version or a later one.
        if (isStatus(error, 409)) return false;
        throw error;
      }
    },

    async get(id: string): Promise<VersionedDoc | null> {
      checkTarget(target);
      try {
        const response = await client.get<Source>({ index: target.name, id, _source_includes: SOURCE_FIELDS });
        if (!response.found || !response._source || response._version === undefined) return null;
        return { doc: fromSource(response._source), version: response._version };
      } catch (error) {
        // A missing document answers 404 with found: false; a missing index is an error.
        if (isStatus(error, 404) && errorType(error) === undefined) return null;
        throw error;
      }
    },

    getMany: (ids: readonly string[]): Promise<Map<string, VersionedDoc>> => read(ids, false),

    async upsertMany(entries: readonly VersionedDoc[]): Promise<number> {
      checkTarget(target);
      // Checked before anything is written: the call is refused whole.
      for (const { version } of entries) checkVersion(version);
      // Same id twice in one _bulk: the lower version would conflict or be overwritten; send only the winner.
      const batch = latestPerId(entries);
      if (batch.length === 0) return 0;
      const response = await client.bulk({
        index: target.name,
        operations: batch.flatMap(({ doc, version }) => [
          { index: { _id: doc.id, version, version_type: 'external' as const } },
          toSource(doc),
        ]),
        // Searchable at the caller's refresh() (or the periodic refresh), never per batch here.
        refresh: false,
        // As upsert: a missing alias fails the entries instead of auto-creating a dynamic index.
        require_alias: target.viaAlias,
      }, { meta: true });
      let stored = 0;
      const failures: BulkFailure[] = [];
      const causes: errors.ResponseError[] = [];
      response.body.items.forEach((item, i) => {
        const result = item.index;
        const id = batch[i]?.doc.id ?? '?';
        if (!result) {
          failures.push({ id, status: 500, type: 'unexpected_bulk_item', reason: JSON.stringify(item) });
          causes.push(itemError(response, 500, { type: 'unexpected_bulk_item', reason: JSON.stringify(item) }));
        } else if (result.status === 200 || result.status === 201) {
          stored++;
        } else if (result.status !== 409) {
          // 409 (version_conflict_engine_exception): the index holds this id at this version or later.
          const error = result.error ?? { type: `status_${result.status}` };
          failures.push({ id, status: result.status, type: error.type, reason: error.reason ?? '' });
          causes.push(itemError(response, result.status, error));
        }
      });
      if (failures.length === 0) return stored;
      const permanent = failures.findIndex((failure) => !transientStatus(failure.status));
      const deciding = permanent === -1 ? 0 : permanent;
      const named = failures.slice(0, NAMED_FAILURES).map(({ id, status, type, reason }) => `${id}: ${status} ${type}: ${reason}`);
      if (failures.length > NAMED_FAILURES) named.push(`and ${failures.length - NAMED_FAILURES} more`);
      throw new SearchBulkError(
        `Elasticsearch _bulk into ${target.name}: ${failures.length} of ${batch.length} documents failed `
        + `(${permanent === -1 ? 'transient, retry' : 'permanent'}; ${stored} stored): ${named.join('; ')}`,
        failures,
        permanent === -1,
        at(causes, deciding),
      );
    },

    async refresh(): Promise<void> {
      checkTarget(target);
      await client.indices.refresh({ index: target.name });
    },

    async search(text: string, requested: SearchPage, options: SearchOptions = {}): Promise<SearchResult> {
      checkTarget(target);
      checkPage(requested);
      const filters = normalFilters(options.filters);
      const words = [...new Set(tokenize(text))].slice(0, MAX_QUERY_WORDS);
      const key = queryKey(words, filters);
      const facets = options.facets === true;
      const base: Body = {
        query: searchQuery(words, filters),
        sort: SEARCH_SORT,
        track_total_hits: true,
        _source: HIT_SOURCE,
        ...(facets ? { aggs: FACET_AGGREGATIONS } : {}),
      };

      if (options.cursor !== undefined) {
        // The page after the cursor, on its point in time: no from, so no max_result_window.
        const payload = decodeCursor(options.cursor, cursors.secret);
        checkKey(payload, key);
        const deadline = deadlineOf(payload);
        const from = offsetOf(payload);
        const pit = payload.p;
        if (typeof pit !== 'string' || pit === '') throw new InvalidCursor('malformed cursor');
        const size = Math.min(requested.size, cursors.window);
        try {
          return await resume(pit, searchAfterOf(payload), base, from, size, key, facets, deadline);
        } catch (error) {
          if (cursorRefused(error)) throw new InvalidCursor('expired cursor', { cause: error });
          throw error;
        }
      }

      if (words.length === 0) return { total: 0, hits: [], from: requested.from, ...(facets ? { facets: EMPTY_FACETS() } : {}) };
      // Elasticsearch refuses from + size > max_result_window: pages beyond it come back empty (with the total).
      const from = Math.min(requested.from, cursors.window);
      const size = Math.min(requested.size, cursors.window - from);
      const body: Body = { ...base, from, size };
      // The first page on the live index: a search sees every write refreshed before it (read-your-writes).
      const sentAt = Date.now();
      const live = await client.search<Source>({ index: target.name, ...body });
      const result = page(live, requested.from, size, key, undefined, facets);
      const last = live.hits.hits[live.hits.hits.length - 1];
      if (!(size > 0 && last && requested.from + live.hits.hits.length < result.total)) return result;

      // More follow: the cursor goes on in a point in time. The shared one serves if it gives this
      // very page and total (then the walk is its ranking from the start); else one opened after
      // this search was sent, whose page is answered instead (as fresh as the live one, or fresher).
      const candidate = shared && Date.now() - shared.sentAt < cursors.reuseMs ? shared : undefined;
      if (candidate) {
        try {
          const check = await onPit(candidate.id, { ...body, aggs: undefined, _source: false });
          if (sameFirstPage(check, live)) {
            const boundary = check.hits.hits[check.hits.hits.length - 1]?.sort;
            if (boundary) {
              result.nextCursor = encodeCursor({
                p: check.pit_id ?? candidate.id, a: boundary, o: requested.from + check.hits.hits.length, q: key, e: deadlineOfPit(candidate),
              }, cursors.secret);
              return result;
            }
          }
        } catch (error) {
          // Expired, or its index replaced by a clear or rebuild in another process: open another.
          if (!cursorRefused(error)) throw error;
        }
      }
      let pit: Pit;
      try {
        pit = await pitSince(sentAt);
      } catch {
        // No point in time to be had (search.max_open_pit_context reached under heavy writes and
        // deep searching, a closing index): the page without a cursor, never a failed search
        // (Elasticsearch down already failed the live search above).
        return result;
      }
      return page(await onPit(pit.id, body), requested.from, size, key, pit, facets);
    },

    forgetPit(): void {
      shared = undefined;
    },

    async closePit(): Promise<void> {
      const pit = shared;
      shared = undefined;
      if (pit) await client.closePointInTime({ id: pit.id }, { ignore: [404] }).catch(() => {});
    },
  };
}

/**
 * The Elasticsearch search index. Reads and writes go through `alias`; at start, a missing alias is
 * created with a first index `<alias>-<timestamp>` behind it. `clear()` and a rebuild's `publish()`
 * replace that index with a fresh one (the minimal distribution has no `_delete_by_query`).
 */
export async function makeElasticsearchSearchIndex(options: ElasticsearchSearchIndexOptions): Promise<ElasticsearchSearchIndex> {
  const { node, alias, refreshOnWrite = true, requestTimeoutMs = 30_000, maxRetries = 3 } = options;
  const settings = {
    shards: options.shards ?? DEFAULT_INDEX_SETTINGS.shards,
    replicas: options.replicas ?? DEFAULT_INDEX_SETTINGS.replicas,
    refreshInterval: options.refreshInterval ?? DEFAULT_INDEX_SETTINGS.refreshInterval,
    maxResultWindow: options.maxResultWindow ?? DEFAULT_INDEX_SETTINGS.maxResultWindow,
  };
  if (!(Number.isSafeInteger(settings.maxResultWindow) && settings.maxResultWindow > 0)) {
    throw new Error(`maxResultWindow must be a positive integer, got ${settings.maxResultWindow}`);
  }
  const ttlSeconds = Math.max(1, Math.round(checkTtl(options.cursorTtlSeconds ?? DEFAULT_CURSOR_TTL_SECONDS)));
  const cursors: CursorConfig = {
    keepAlive: `${ttlSeconds}s`,
    ttlSeconds,
    maxAgeMs: checkTtl(options.cursorMaxAgeSeconds ?? DEFAULT_CURSOR_MAX_AGE_SECONDS, 'cursorMaxAgeSeconds') * 1000,
    secret: options.cursorSecret ?? 'docshare-search-cursor-v1',
    reuseMs: options.pitReuseMs ?? 1000,
    window: settings.maxResultWindow,
  };
  const client = new Client({ node, requestTimeout: requestTimeoutMs, maxRetries });

  /** Creates a new empty index, behind the alias or not; its name is `<alias>-<timestamp>`. */
  async function createIndex(behindAlias: boolean, refreshInterval = settings.refreshInterval): Promise<string> {
    // Another process took the same millisecond: take the next one (6 tries in all).
    return retrying(async () => {
      const index = `${alias}-${indexStamp()}`;
      await client.indices.create({
        index,
        settings: searchIndexSettings({ ...settings, refreshInterval }),
        mappings: SEARCH_INDEX_MAPPINGS,
        ...(behindAlias ? { aliases: { [alias]: {} } } : {}),
      });
      return index;
    }, { attempts: 6, baseMs: 0, capMs: 0, retryIf: (error) => errorType(error) === 'resource_already_exists_exception' });
  }

  async function aliasIndices(): Promise<string[]> {
    try {
      return Object.keys(await client.indices.getAlias({ name: alias })).sort();
    } catch (error) {
      if (isStatus(error, 404)) return [];
      throw error;
    }
  }

  async function ensureAlias(): Promise<void> {
    if (await client.indices.existsAlias({ name: alias })) return;
    if (await client.indices.exists({ index: alias })) {
      throw new Error(`"${alias}" is a concrete index, not an alias: move its documents or delete it, then restart`);
    }
    const mine = await createIndex(true);
    // Two processes starting at once may both have created an index behind the alias: the oldest
    // stays. Another process may delete its own between the listing and the read: list again.
    await retrying(async () => {
      const holders = await aliasIndices();
      if (holders.length <= 1) return;
      const found = await client.indices.getSettings({ index: holders, name: 'index.creation_date' });
      const created = (index: string): number => Number(found[index]?.settings?.index?.creation_date ?? Number.MAX_SAFE_INTEGER);
      const [keeper] = [...holders].sort((a, b) => created(a) - created(b) || (a < b ? -1 : a > b ? 1 : 0));
      if (keeper !== mine) await client.indices.delete({ index: mine }, { ignore: [404] });
    }, { attempts: 5, baseMs: 20, capMs: 500, retryIf: indexGone });
  }

  /**
   * Points the alias at `index` and deletes what it pointed at, atomically: `remove_index` fails
   * the whole call if another swap deleted that index first, so two racing swaps never leave two
   * indices behind the alias.
   */
  async function swapAliasTo(index: string): Promise<void> {
    const previous = (await aliasIndices()).filter((name) => name !== index);
    try {
      await client.indices.updateAliases({
        actions: [{ add: { index, alias } }, ...previous.map((name) => ({ remove_index: { index: name } }))],
      });
    } catch (error) {
      if (errorType(error) === 'index_not_found_exception') {
        throw new Error(`alias ${alias} changed while ${index} was being published (another clear or rebuild?); nothing was changed`, { cause: error });
      }
      throw error;
    }
  }

  /**
   * Brings the indices behind the alias to this mapping: adds the fields they lack (a put-mapping
   * is additive; an index made by an older version lacks the schema 2 fields) and records the
   * schema in `_meta`. Documents written before keep lacking the new fields until a rebuild.
   */
  async function upgradeMappings(): Promise<void> {
    const names = await aliasIndices();
    if (names.length === 0) return;
    const found = await client.indices.getMapping({ index: names });
    for (const name of names) {
      const mapping = found[name]?.mappings;
      const have = mapping?.properties ?? {};
      const missing = Object.fromEntries(Object.entries(SEARCH_INDEX_MAPPINGS.properties).filter(([field]) => !(field in have)));
      const schema = Number(mapping?._meta?.schema ?? 1);
      if (Object.keys(missing).length === 0 && schema >= SCHEMA_VERSION) continue;
      await client.indices.putMapping({
        index: name,
        properties: missing,
        // upgradedFrom: its older documents lack the new fields until `npm run rebuild -- search`.
        _meta: { ...mapping?._meta, schema: SCHEMA_VERSION, ...(schema < SCHEMA_VERSION ? { upgradedFrom: schema } : {}) },
      });
    }
  }

  try {
    await ensureAlias();
    // An index another process starting at once just dropped (ensureAlias) may still be listed.
    await retrying(upgradeMappings, { attempts: 5, baseMs: 20, capMs: 500, retryIf: indexGone });
  } catch (error) {
    await client.close();
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`Elasticsearch at ${node}: cannot prepare alias ${alias}: ${reason}`, { cause: error });
  }

  const main: Target = { name: alias, viaAlias: true, refresh: refreshOnWrite };

  async function clearLive(): Promise<void> {
    const fresh = await createIndex(false);
    try {
      await swapAliasTo(fresh);
    } catch (error) {
      await client.indices.delete({ index: fresh }, { ignore: [404] });
      throw error;
    }
  }

  const { forgetPit, closePit, ...live } = operations(client, main, cursors);

  return {
    ...live,

    async clear(): Promise<void> {
      await clearLive();
      // Its index is deleted: cursors on it end (InvalidCursor), and the next ones need a new point in time.
      forgetPit();
    },

    async close(): Promise<void> {
      await closePit();
      await client.close();
    },

    async rebuildInto(): Promise<{ index: ElasticsearchRebuild }> {
      // No periodic refresh while filling: nobody searches the new index before publish() refreshes it.
      let name = await createIndex(false, '-1');
      const target: Target = { name, viaAlias: false, refresh: false };
      let published = false;
      const { forgetPit: forgetRebuildPit, closePit: closeRebuildPit, ...writes } = operations(client, target, cursors);
      const rebuild: ElasticsearchRebuild = {
        ...writes,
        get indexName(): string {
          return name;
        },
        async clear(): Promise<void> {
          if (published) {
            await clearLive();
            forgetPit();
            return;
          }
          forgetRebuildPit();
          checkTarget(target);
          const previous = name;
          name = await createIndex(false, '-1');
          target.name = name;
          await client.indices.delete({ index: previous }, { ignore: [404] });
        },
        async publish(): Promise<void> {
          if (published) return;
          checkTarget(target);
          await client.indices.putSettings({ index: name, settings: { refresh_interval: settings.refreshInterval } });
          await client.indices.refresh({ index: name });
          await swapAliasTo(name);
          published = true;
          forgetPit();
          // It is the live index now: this handle goes through the alias too, like the search index.
          Object.assign(target, main);
        },
        async discard(): Promise<void> {
          if (published) throw new Error(`${name} is published: it is the live index`);
          target.gone = `rebuild index ${name} was discarded`;
          await client.indices.delete({ index: name }, { ignore: [404] });
        },
        // The client belongs to the search index that made this rebuild.
        async close(): Promise<void> {
          await closeRebuildPit();
        },
      };
      return { index: rebuild };
    },

    async ready(): Promise<void> {
      const health = await client.cluster.health({ index: alias, wait_for_status: 'yellow', timeout: '2s' });
      if (health.timed_out || health.status === 'red') {
        throw new Error(`Elasticsearch index ${alias} is not ready: health ${health.status}${health.timed_out ? ' (timed out)' : ''}`);
      }
    },

    indices: aliasIndices,
  };
}
