/** What search knows of a file. `visible` is false once the file is deleted or disabled. */
export interface SearchDoc {
  id: string;
  title: string;
  description: string;
  tags: string[];
  category: string;
  categoryId: number;
  /** One of the Creative Commons licences (LICENSES of @docshare/contracts). */
  license: string;
  /** Text extracted from the file's bytes ('' until extracted, or when extraction failed). */
  content: string;
  ownerId: number;
  visible: boolean;
  uploadedAt: string;
}

/**
 * Search hits carry at most this many characters of `content`, its start: what a snippet reads
 * (`get` and `getMany` carry all of it). A page of 100 hits of 100,000 characters each would
 * otherwise move and parse 10 MB per search.
 */
export const HIT_CONTENT_LENGTH = 10_000;

/** The start of `text`, at most `length` characters, never half of a surrogate pair. */
export function contentHead(text: string, length = HIT_CONTENT_LENGTH): string {
  if (text.length <= length) return text;
  const last = text.charCodeAt(length - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? length - 1 : length);
}

export interface SearchPage { from: number; size: number }

/** Narrows a search: every given filter must hold. */
export interface SearchFilters {
  categoryId?: number;
  license?: string;
  /** Every one of these tags (compared as `tagKey` does: trimmed, lowercased). */
  tags?: string[];
}

export interface SearchOptions {
  filters?: SearchFilters;
  /** Count the matches per category, licence and tag (SearchResult.facets). */
  facets?: boolean;
  /**
   * A `nextCursor` of an earlier search with the same text and filters: the page that follows it,
   * from the same snapshot of the index (`page.from` is then ignored). An unknown, altered,
   * expired or mismatched cursor rejects with InvalidCursor.
   */
  cursor?: string;
}

export interface FacetCount { value: string; count: number }
export interface CategoryFacet { id: number; name: string; count: number }
/** Counts over every match (filters applied), most frequent first, then by value; at most FACET_SIZE per facet. */
export interface SearchFacets { category: CategoryFacet[]; license: FacetCount[]; tag: FacetCount[] }

export interface SearchResult {
  total: number;
  /** The page's documents, each with `content` cut to its head (contentHead). */
  hits: SearchDoc[];
  /** Matches ranked before the first hit: `page.from`, or where the cursor left off. */
  from?: number;
  facets?: SearchFacets;
  /** Present when more matches follow this page: pass it as `cursor` for the next one. */
  nextCursor?: string;
}

/** At most this many values per facet. */
export const FACET_SIZE = 50;

/** A cursor that cannot be continued: malformed, altered, for another query, or expired. */
export class InvalidCursor extends Error {
  override readonly name = 'InvalidCursor';
}

/** How tags compare in filters and facets: Unicode NFC, trimmed, lowercased. */
export const tagKey = (tag: string): string => tag.normalize('NFC').trim().toLowerCase();

/** A stored document with its version. */
export interface VersionedDoc { doc: SearchDoc; version: number }

/**
 * Full-text index of files. Writes carry a version (the file stream's version): a write with a
 * version not newer than the stored one is ignored, so replays and duplicates change nothing.
 *
 * When a write becomes searchable: reads by id (`get`, `getMany`) see every stored write at once.
 * `search` sees an `upsert` as the adapter is configured (Elasticsearch's `refreshOnWrite`, by
 * default at once), and an `upsertMany` only after `refresh()` (or within the adapter's periodic
 * refresh): a batch writer that needs read-your-writes calls `refresh()` once per batch.
 */
export interface SearchIndex {
  /** Stores `doc` at `version` unless the index already holds that id at `version` or later; true when stored. */
  upsert(doc: SearchDoc, version: number): Promise<boolean>;
  get(id: string): Promise<VersionedDoc | null>;
  /** The stored documents of these ids (absent ids are left out), with their versions: one round trip (ES `_mget`). */
  getMany(ids: readonly string[]): Promise<Map<string, VersionedDoc>>;
  /**
   * Stores each doc at its version unless the index already holds that id at that version or later
   * (ES `_bulk` with version_type external; a version conflict is "already newer", not an error);
   * one round trip, none for an empty call. Resolves to how many were stored. Not necessarily
   * searchable until `refresh()`. Entries with the same id: the one with the highest version wins
   * (the others count as not stored). Any other failure of an entry rejects the call (entries
   * before or after it may be stored: replaying the call is safe); an invalid version rejects it
   * before anything is written.
   */
  upsertMany(entries: readonly VersionedDoc[]): Promise<number>;
  /** Makes every stored write visible to `search` (ES `_refresh` of the index). */
  refresh(): Promise<void>;
  /**
   * Visible documents matching `text` in title, tags, category, description or content, best first
   * (title > tags > category > description > content), tolerant of a one-letter typo in words of
   * four letters or more; `total` counts every match, `hits` holds the page. `options` narrow the
   * matches, ask for facets, or continue from a cursor (SearchOptions).
   */
  search(text: string, page: SearchPage, options?: SearchOptions): Promise<SearchResult>;
  /** Empties the index (used before a rebuild). */
  clear(): Promise<void>;
  close(): Promise<void>;
}
