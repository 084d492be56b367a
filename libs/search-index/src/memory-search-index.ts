import { randomBytes } from 'node:crypto';
import { at } from './checked.ts';
import { contentHead, FACET_SIZE, InvalidCursor } from './port.ts';
import type {
  CategoryFacet, FacetCount, SearchDoc, SearchFacets, SearchIndex, SearchOptions, SearchPage, SearchResult, VersionedDoc,
} from './port.ts';
import { MAX_QUERY_WORDS } from './elasticsearch-mapping.ts';
import {
  byCountThenName, byCountThenValue, checkKey, checkTtl, deadlineOf, decodeCursor, DEFAULT_CURSOR_MAX_AGE_SECONDS,
  DEFAULT_CURSOR_TTL_SECONDS, encodeCursor, normalFilters, offsetOf, queryKey, tagKeysOf,
} from './cursor.ts';
import type { CursorOptions, NormalFilters } from './cursor.ts';

/** BM25 parameters: Lucene's and Elasticsearch's defaults. */
const K1 = 1.2;
const B = 0.75;

/** Like Elasticsearch's fuzzy `max_expansions`: a typo'd term expands to at most this many vocabulary terms. */
const MAX_EXPANSIONS = 50;

/**
 * Work one search may spend finding the vocabulary terms within its words' typo distance, shared
 * evenly by the words that allow typos: a term looked at costs 1 (its letter filter), an
 * edit-distance table twice its cells. About 10 ms on one core. Three ordinary words over a
 * vocabulary of a few hundred thousand terms stay within it (the letter filter spares nearly all
 * tables); 28 words of six letters over "abcdef" against a vocabulary holding nearly all 46,656
 * such words needed 1.3 million tables, held the process for a second or more, and now each look
 * at the terms of the nearest lengths until their share is spent.
 */
export const FUZZY_WORK_PER_SEARCH = 1_000_000;

/** The indexed fields, with the boosts of the Elasticsearch multi_match; arrays per field follow this order. */
const FIELDS: { boost: number; text: (doc: SearchDoc) => string }[] = [
  { boost: 3, text: (doc) => doc.title },
  // Each tag is analysed on its own; joining them only adds separators, so the tokens are the same.
  { boost: 2, text: (doc) => doc.tags.join(' ') },
  { boost: 1.5, text: (doc) => doc.category },
  { boost: 1, text: (doc) => doc.description },
  { boost: 0.5, text: (doc) => doc.content },
];

const MARKS = /\p{M}/gu;
const WORD = /[\p{L}\p{N}]+/gu;

/** Tokens of `text` as the index sees them: diacritics folded, lowercased, split on anything but letters and digits. */
export function tokenize(text: string): string[] {
  // Decompose first so accents become separate marks we can drop ("café" -> "cafe", "ﬁ" -> "fi").
  return text.normalize('NFKD').replace(MARKS, '').toLowerCase().match(WORD) ?? [];
}

/**
 * The entries of an `upsertMany` that can be stored: per id, the one with the highest version (the
 * first of equal ones, as a later equal version would be refused), in the order of first appearance.
 */
export function latestPerId(entries: readonly VersionedDoc[]): VersionedDoc[] {
  const latest = new Map<string, VersionedDoc>();
  for (const entry of entries) {
    const seen = latest.get(entry.doc.id);
    if (!seen || entry.version > seen.version) latest.set(entry.doc.id, entry);
  }
  return [...latest.values()];
}

/** A document copy, cheaper than structuredClone on the hot paths (tags is its one non-scalar field). */
function copyDoc(doc: SearchDoc): SearchDoc {
  return { ...doc, tags: [...doc.tags] };
}

/** A document as a search hit carries it: a copy with the start of its content. */
function hitOf(doc: SearchDoc): SearchDoc {
  return { ...doc, tags: [...doc.tags], content: contentHead(doc.content) };
}

/**
 * Most entries of a snapshot one cursor page passes over because their file is gone or hidden
 * since: many deletions cannot make one page read a whole snapshot (the page then holds fewer
 * hits, and its cursor goes on from there).
 */
const MAX_SKIPPED_PER_PAGE = 1000;

interface Entry {
  doc: SearchDoc;
  version: number;
  /** False once replaced: postings drop dead entries lazily instead of searching their arrays. */
  live: boolean;
  /** Per field (as FIELDS): number of tokens; 0 for invisible documents, which are not indexed. */
  lengths: number[];
  // Scratch of the running search (searches are synchronous, so one at a time): scoring through
  // these fields rather than through Maps keyed by entry keeps a query over many matches fast.
  queryRound: number;
  score: number;
  termRound: number;
  termScore: number;
}

/** Documents holding a term in a field, with the term's frequency there; may include dead entries. */
interface Postings {
  entries: Entry[];
  frequencies: number[];
  /** Live entries: BM25's document frequency. */
  live: number;
}

/** BM25 collection statistics of one field: documents with at least one token in it, and their token total. */
interface FieldStats {
  docCount: number;
  totalLength: number;
}

/** A word of the vocabulary, with its postings in each field (as FIELDS). */
interface Term {
  text: string;
  codes: number[];
  /** Which letters (code point mod 32) the term holds: lets the fuzzy scan skip most terms without an edit-distance table. */
  letters: number;
  postings: (Postings | undefined)[];
  /** Fields whose postings are defined: the term leaves the vocabulary at 0. */
  fieldCount: number;
}

/** The code points of `text`. */
export function codesOf(text: string): number[] {
  const codes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const code = text.codePointAt(i);
    if (code === undefined) break;
    codes.push(code);
    if (code > 0xffff) i++;
  }
  return codes;
}

/** Which letters (code point mod 32) `codes` hold, as a bit set: two words differing in k of them are at least k edits apart. */
export function lettersOf(codes: number[]): number {
  let letters = 0;
  for (const code of codes) letters |= 1 << (code & 31);
  return letters;
}

export function bitCount(bits: number): number {
  let x = bits - ((bits >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/** Edits allowed in a query term of `length` code points, as Elasticsearch's `fuzziness: AUTO`. */
export function allowedEdits(length: number): number {
  return length <= 2 ? 0 : length <= 5 ? 1 : 2;
}

// Rows of the edit-distance table, reused across calls: the vocabulary scan runs it thousands of times per query.
let rowBefore = new Int32Array(64);
let rowPrevious = new Int32Array(64);
let rowCurrent = new Int32Array(64);

/**
 * Optimal-string-alignment distance (Damerau: a transposition counts as one edit) between `a` and
 * `b`, or `max + 1` as soon as it is known to exceed `max`.
 */
export function boundedDistance(a: number[], b: number[], max: number): number {
  const n = a.length;
  const m = b.length;
  if (Math.abs(n - m) > max) return max + 1;
  if (rowCurrent.length <= m) {
    rowBefore = new Int32Array(m + 1);
    rowPrevious = new Int32Array(m + 1);
    rowCurrent = new Int32Array(m + 1);
  }
  let before = rowBefore;
  let previous = rowPrevious;
  let current = rowCurrent;
  for (let j = 0; j <= m; j++) previous[j] = j;
  for (let i = 1; i <= n; i++) {
    current[0] = i;
    let rowMin = i;
    const ai = a[i - 1];
    for (let j = 1; j <= m; j++) {
      const bj = b[j - 1];
      let value = Math.min(at(previous, j) + 1, at(current, j - 1) + 1, at(previous, j - 1) + (ai === bj ? 0 : 1));
      if (i > 1 && j > 1 && ai === b[j - 2] && a[i - 2] === bj) value = Math.min(value, at(before, j - 2) + 1);
      current[j] = value;
      if (value < rowMin) rowMin = value;
    }
    if (rowMin > max) return max + 1;
    [before, previous, current] = [previous, current, before];
  }
  const distance = at(previous, m);
  return distance > max ? max + 1 : distance;
}

/** Term lengths within `max` edits of `length`, nearest first: the likeliest typos are looked at first. */
function lengthsAround(length: number, max: number): number[] {
  const lengths = [length];
  for (let d = 1; d <= max; d++) lengths.push(length - d, length + d);
  return lengths.filter((candidate) => candidate > 0);
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Best first; ties go to the newer upload, then to the smaller id, so pages are stable. */
function rank(a: Entry, b: Entry): number {
  return b.score - a.score || compareText(b.doc.uploadedAt, a.doc.uploadedAt) || compareText(a.doc.id, b.doc.id);
}

/** Above this many wanted hits (from + size), sorting every match beats keeping a sorted top list. */
const TOP_LIMIT = 1000;

/** The first `k` entries in `rank` order, without sorting every match. */
function firstRanked(entries: Entry[], k: number): Entry[] {
  const top: Entry[] = [];
  for (const entry of entries) {
    const last = top[top.length - 1];
    if (top.length === k && last !== undefined && rank(entry, last) >= 0) continue;
    let lo = 0;
    let hi = top.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (rank(entry, at(top, mid)) < 0) hi = mid;
      else lo = mid + 1;
    }
    top.splice(lo, 0, entry);
    if (top.length > k) top.pop();
  }
  return top;
}

function checkPage(page: SearchPage): void {
  for (const [name, value] of Object.entries(page)) {
    if (!(Number.isInteger(value) && value >= 0)) throw new Error(`page.${name} must be a non-negative integer, got ${value}`);
  }
}

/** Whether a document passes the (normalised) filters. */
function passes(doc: SearchDoc, filters: NormalFilters): boolean {
  if (filters.categoryId !== undefined && doc.categoryId !== filters.categoryId) return false;
  if (filters.license !== undefined && doc.license !== filters.license) return false;
  if (filters.tags.length > 0) {
    const keys = tagKeysOf(doc.tags);
    if (!filters.tags.every((tag) => keys.includes(tag))) return false;
  }
  return true;
}

/** Facet counts over `docs`, as the Elasticsearch terms aggregations count them. */
function facetsOf(docs: Iterable<SearchDoc>): SearchFacets {
  const categories = new Map<number, { count: number; names: Map<string, number> }>();
  const licenses = new Map<string, number>();
  const tags = new Map<string, number>();
  for (const doc of docs) {
    let category = categories.get(doc.categoryId);
    if (!category) categories.set(doc.categoryId, (category = { count: 0, names: new Map() }));
    category.count++;
    category.names.set(doc.category, (category.names.get(doc.category) ?? 0) + 1);
    licenses.set(doc.license, (licenses.get(doc.license) ?? 0) + 1);
    for (const key of tagKeysOf(doc.tags)) tags.set(key, (tags.get(key) ?? 0) + 1);
  }
  const counts = (map: Map<string, number>): FacetCount[] =>
    [...map].map(([value, count]) => ({ value, count })).sort(byCountThenValue).slice(0, FACET_SIZE);
  const category: CategoryFacet[] = [...categories].map(([id, { count, names }]) => {
    // The name most of its documents carry (a renamed category until they are all re-indexed), as a terms sub-aggregation of size 1.
    const [name] = [...names].map(([value, n]) => ({ value, count: n })).sort(byCountThenValue);
    return { id, name: name?.value ?? '', count };
  });
  return { category: category.sort(byCountThenName).slice(0, FACET_SIZE), license: counts(licenses), tag: counts(tags) };
}

/**
 * The ranked matches of a search that a cursor continues: the entries as they were (a replaced
 * document gets a new Entry, so these keep their documents), and their scores until sorted.
 */
interface Snapshot {
  key: string;
  entries: Entry[];
  /** Scores by position in `entries` while not yet sorted (the entries' own score is scratch of later searches). */
  scores: Float64Array | undefined;
  /** TTL after the last use, never past the deadline. */
  expires: number;
  /** Its first page plus the maximum age: no use extends it. */
  deadline: number;
}

export interface MemorySearchIndexOptions extends CursorOptions {
  /** Entries all live snapshots may hold together; the oldest snapshots are dropped beyond it. Default 1,000,000. */
  maxSnapshotEntries?: number;
}

/** The embedded full-text index: BM25 per field with boosts and AUTO fuzziness, mirroring the Elasticsearch adapter. */
export function makeMemorySearchIndex(options: MemorySearchIndexOptions = {}): SearchIndex {
  const ttlMs = checkTtl(options.cursorTtlSeconds ?? DEFAULT_CURSOR_TTL_SECONDS) * 1000;
  const maxAgeMs = checkTtl(options.cursorMaxAgeSeconds ?? DEFAULT_CURSOR_MAX_AGE_SECONDS, 'cursorMaxAgeSeconds') * 1000;
  const maxSnapshotEntries = options.maxSnapshotEntries ?? 1_000_000;
  /** Cursors live in this process only: a key of its own signs them. */
  const secret = randomBytes(32);
  /** Oldest first (Map order): a used snapshot moves to the end. */
  const snapshots = new Map<string, Snapshot>();
  let snapshotEntries = 0;
  let entries = new Map<string, Entry>();
  let fields: FieldStats[] = [];
  let vocabulary = new Map<string, Term>();
  /** Vocabulary by length in code points, so a fuzzy scan only visits terms that can be close enough. */
  let byLength = new Map<number, Set<Term>>();
  /** Numbers each search and each of its terms, to tell fresh entry scratch from stale. */
  let round = 0;

  function reset(): void {
    entries = new Map();
    fields = FIELDS.map(() => ({ docCount: 0, totalLength: 0 }));
    vocabulary = new Map();
    byLength = new Map();
  }
  reset();

  function termOf(text: string): Term {
    let term = vocabulary.get(text);
    if (term) return term;
    const codes = codesOf(text);
    term = { text, codes, letters: lettersOf(codes), postings: FIELDS.map(() => undefined), fieldCount: 0 };
    vocabulary.set(text, term);
    let bucket = byLength.get(codes.length);
    if (!bucket) byLength.set(codes.length, (bucket = new Set()));
    bucket.add(term);
    return term;
  }

  function index(entry: Entry, frequencies: Map<string, number>[]): void {
    frequencies.forEach((counts, f) => {
      const field = at(fields, f);
      const length = at(entry.lengths, f);
      if (length === 0) return;
      field.docCount++;
      field.totalLength += length;
      for (const [text, frequency] of counts) {
        const term = termOf(text);
        const postings = term.postings[f];
        if (postings) {
          postings.entries.push(entry);
          postings.frequencies.push(frequency);
          postings.live++;
        } else {
          // Literals sized to one: most terms are rare, and an empty array would grow to 17 slots.
          term.postings[f] = { entries: [entry], frequencies: [frequency], live: 1 };
          term.fieldCount++;
        }
      }
    });
  }

  function unindex(entry: Entry): void {
    entry.live = false;
    FIELDS.forEach(({ text: textOf }, f) => {
      const field = at(fields, f);
      const length = at(entry.lengths, f);
      if (length === 0) return;
      field.docCount--;
      field.totalLength -= length;
      // Re-tokenising on the rarer replace is cheaper than keeping every document's terms.
      for (const text of new Set(tokenize(textOf(entry.doc)))) {
        const term = vocabulary.get(text);
        const postings = term?.postings[f];
        if (!term || !postings) continue;
        if (--postings.live > 0) {
          if (postings.live * 2 < postings.entries.length) compact(postings);
          continue;
        }
        term.postings[f] = undefined;
        if (--term.fieldCount > 0) continue;
        vocabulary.delete(text);
        byLength.get(term.codes.length)?.delete(term);
      }
    });
  }

  /** Drops dead entries once they are the majority, so a list costs at most twice its live size. */
  function compact(postings: Postings): void {
    let kept = 0;
    for (let i = 0; i < postings.entries.length; i++) {
      const entry = at(postings.entries, i);
      if (!entry.live) continue;
      postings.entries[kept] = entry;
      postings.frequencies[kept] = at(postings.frequencies, i);
      kept++;
    }
    postings.entries.length = kept;
    postings.frequencies.length = kept;
  }

  function makeEntry(doc: SearchDoc, version: number): { entry: Entry; frequencies: Map<string, number>[] } {
    const frequencies: Map<string, number>[] = [];
    const lengths: number[] = [];
    for (const { text } of FIELDS) {
      const counts = new Map<string, number>();
      // Deleted or disabled files are never returned, so their words need not be searchable.
      const tokens = doc.visible ? tokenize(text(doc)) : [];
      for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
      frequencies.push(counts);
      lengths.push(tokens.length);
    }
    const entry: Entry = { doc, version, live: true, lengths, queryRound: 0, score: 0, termRound: 0, termScore: 0 };
    return { entry, frequencies };
  }

  /**
   * Vocabulary terms `query` matches, with a weight: 1 when exact, less the more edits it takes.
   * The typo scan spends at most `budget` (FUZZY_WORK_PER_SEARCH's units), nearest lengths first;
   * the exact term is always found.
   */
  function expand(query: string, budget: number): { term: Term; weight: number }[] {
    const codes = codesOf(query);
    const max = allowedEdits(codes.length);
    if (max === 0) {
      const exact = vocabulary.get(query);
      return exact ? [{ term: exact, weight: 1 }] : [];
    }
    const letters = lettersOf(codes);
    const found: { term: Term; distance: number; weight: number }[] = [];
    const exact = vocabulary.get(query);
    if (exact) found.push({ term: exact, distance: 0, weight: 1 });
    let work = 0;
    scan: for (const length of lengthsAround(codes.length, max)) {
      for (const term of byLength.get(length) ?? []) {
        if (++work > budget) break scan;
        if (term === exact) continue;
        // Each letter one word has and the other lacks costs at least one edit.
        if (bitCount(letters & ~term.letters) > max || bitCount(term.letters & ~letters) > max) continue;
        work += 2 * codes.length * length;
        const distance = boundedDistance(codes, term.codes, max);
        if (distance > max) continue;
        // Lucene's FuzzyQuery weighs a term 1 - edits / (length of the shorter of the two).
        found.push({ term, distance, weight: 1 - distance / Math.min(codes.length, length) });
      }
    }
    if (found.length > MAX_EXPANSIONS) {
      found.sort((a, b) => a.distance - b.distance || compareText(a.term.text, b.term.text));
      found.length = MAX_EXPANSIONS;
    }
    return found;
  }

  function checkVersion(version: number): void {
    if (!Number.isFinite(version)) throw new Error(`version must be a finite number, got ${version}`);
  }

  /** Visible entries matching any of `words`, each with its score in `entry.score`, unordered. */
  function match(words: string[]): Entry[] {
    const queryRound = ++round;
    const matched: Entry[] = [];
    const fuzzyWords = words.filter((query) => allowedEdits(codesOf(query).length) > 0).length;
    const budget = Math.floor(FUZZY_WORK_PER_SEARCH / Math.max(1, fuzzyWords));
    for (const query of words) {
      const expansions = expand(query, budget);
      // multi_match best_fields: a query term scores by its best field (and best expansion); terms add up.
      const termRound = ++round;
      const touched: Entry[] = [];
      fields.forEach((field, f) => {
        if (field.docCount === 0) return;
        const averageLength = field.totalLength / field.docCount;
        for (const { term, weight } of expansions) {
          const postings = term.postings[f];
          if (!postings) continue;
          const idf = Math.log(1 + (field.docCount - postings.live + 0.5) / (postings.live + 0.5));
          const factor = (FIELDS[f]?.boost ?? 1) * weight * idf;
          const { entries: holders, frequencies } = postings;
          for (let i = 0; i < holders.length; i++) {
            const entry = at(holders, i);
            if (!entry.live) continue;
            const frequency = at(frequencies, i);
            const norm = K1 * (1 - B + (B * at(entry.lengths, f)) / averageLength);
            const score = (factor * frequency) / (frequency + norm);
            if (entry.termRound !== termRound) {
              entry.termRound = termRound;
              entry.termScore = score;
              touched.push(entry);
            } else if (score > entry.termScore) {
              entry.termScore = score;
            }
          }
        }
      });
      for (const entry of touched) {
        if (entry.queryRound !== queryRound) {
          entry.queryRound = queryRound;
          entry.score = 0;
          matched.push(entry);
        }
        entry.score += entry.termScore;
      }
    }
    return matched;
  }

  /** Drops expired snapshots, then the oldest ones while all of them together hold more than the bound. */
  function evict(room: number): void {
    const now = Date.now();
    for (const [id, snapshot] of snapshots) {
      if (snapshot.expires > now && snapshotEntries + room <= maxSnapshotEntries) continue;
      snapshots.delete(id);
      snapshotEntries -= snapshot.entries.length;
    }
  }

  /** Stores a snapshot under a fresh random id. */
  function keep(snapshot: Snapshot): string {
    evict(snapshot.entries.length);
    const id = randomBytes(12).toString('base64url');
    snapshots.set(id, snapshot);
    snapshotEntries += snapshot.entries.length;
    return id;
  }

  /** Sorts a snapshot taken from a partial ranking, by the scores it kept. */
  function sortSnapshot(snapshot: Snapshot): void {
    const { scores, entries } = snapshot;
    if (!scores) return;
    const order = Array.from(entries.keys());
    order.sort((a, b) => {
      const x = at(entries, a);
      const y = at(entries, b);
      return at(scores, b) - at(scores, a) || compareText(y.doc.uploadedAt, x.doc.uploadedAt) || compareText(x.doc.id, y.doc.id);
    });
    snapshot.entries = order.map((i) => at(entries, i));
    snapshot.scores = undefined;
  }

  /**
   * The page after a cursor: the snapshot's order and total, each file as it is now. A file deleted
   * or disabled since the snapshot is left out at once (its title, description and text are no
   * longer shown); a changed one shows its current version.
   */
  function resume(cursor: string, key: string, size: number, facets: boolean): SearchResult {
    const payload = decodeCursor(cursor, secret);
    checkKey(payload, key);
    const deadline = deadlineOf(payload);
    const from = offsetOf(payload);
    const id = payload.m;
    const now = Date.now();
    const snapshot = typeof id === 'string' ? snapshots.get(id) : undefined;
    if (typeof id !== 'string' || !snapshot || snapshot.expires <= now) throw new InvalidCursor('expired cursor');
    if (snapshot.key !== key) throw new InvalidCursor('cursor of another search: its text or filters differ');
    // Used again: lives another TTL (never past its deadline), and is the newest for eviction.
    snapshot.expires = Math.min(now + ttlMs, snapshot.deadline);
    snapshots.delete(id);
    snapshots.set(id, snapshot);
    sortSnapshot(snapshot);
    const { entries: ranked } = snapshot;
    const hits: SearchDoc[] = [];
    let next = from;
    for (let skipped = 0; next < ranked.length && hits.length < size && skipped <= MAX_SKIPPED_PER_PAGE; next++) {
      const current = entries.get(at(ranked, next).doc.id);
      if (current?.doc.visible) hits.push(hitOf(current.doc));
      else skipped++;
    }
    const result: SearchResult = { total: ranked.length, hits, from };
    if (facets) result.facets = facetsOf(ranked.map((entry) => entry.doc));
    if (size > 0 && next < ranked.length) result.nextCursor = encodeCursor({ m: id, o: next, q: key, e: deadline }, secret);
    return result;
  }

  function store(doc: SearchDoc, version: number): boolean {
    const current = entries.get(doc.id);
    if (current && current.version >= version) return false;
    // Invisible documents stay as tombstones: their version stops an older replayed write.
    if (current) {
      unindex(current);
      // The replaced entry lives on only in cursor snapshots, which read its order and facet
      // fields, never its text (pages show the current entry): a deleted file's text is freed
      // now, not when the last snapshot holding it expires.
      current.doc = { ...current.doc, content: '' };
    }
    const { entry, frequencies } = makeEntry(copyDoc(doc), version);
    entries.set(doc.id, entry);
    index(entry, frequencies);
    return true;
  }

  return {
    async upsert(doc: SearchDoc, version: number): Promise<boolean> {
      checkVersion(version);
      return store(doc, version);
    },

    async get(id: string): Promise<VersionedDoc | null> {
      const entry = entries.get(id);
      return entry ? { doc: copyDoc(entry.doc), version: entry.version } : null;
    },

    async getMany(ids: readonly string[]): Promise<Map<string, VersionedDoc>> {
      const found = new Map<string, VersionedDoc>();
      for (const id of ids) {
        const entry = entries.get(id);
        if (entry) found.set(id, { doc: copyDoc(entry.doc), version: entry.version });
      }
      return found;
    },

    async upsertMany(batch: readonly VersionedDoc[]): Promise<number> {
      // Every version checked before anything is stored, as the Elasticsearch adapter does.
      for (const { version } of batch) checkVersion(version);
      let stored = 0;
      for (const { doc, version } of latestPerId(batch)) if (store(doc, version)) stored++;
      return stored;
    },

    // Every write is searchable as soon as it is stored.
    async refresh(): Promise<void> {},

    async search(text: string, page: SearchPage, options: SearchOptions = {}): Promise<SearchResult> {
      checkPage(page);
      const filters = normalFilters(options.filters);
      const words = [...new Set(tokenize(text))].slice(0, MAX_QUERY_WORDS);
      const key = queryKey(words, filters);
      if (options.cursor !== undefined) return resume(options.cursor, key, page.size, options.facets === true);

      const matched = match(words).filter((entry) => passes(entry.doc, filters));
      const end = page.from + page.size;
      const partial = end <= TOP_LIMIT && end * 8 < matched.length;
      const ranked = partial ? firstRanked(matched, end) : matched.sort(rank);
      const hits = ranked.slice(page.from, end);
      const result: SearchResult = { total: matched.length, hits: hits.map((entry) => hitOf(entry.doc)), from: page.from };
      if (options.facets === true) result.facets = facetsOf(matched.map((entry) => entry.doc));
      const next = page.from + hits.length;
      if (page.size > 0 && next < matched.length) {
        const now = Date.now();
        const deadline = now + maxAgeMs;
        const snapshot: Snapshot = {
          key,
          entries: matched,
          scores: partial ? Float64Array.from(matched, (entry) => entry.score) : undefined,
          expires: Math.min(now + ttlMs, deadline),
          deadline,
        };
        result.nextCursor = encodeCursor({ m: keep(snapshot), o: next, q: key, e: deadline }, secret);
      }
      return result;
    },

    async clear(): Promise<void> {
      // Cursors end with the index they walked, as the Elasticsearch adapter's do.
      snapshots.clear();
      snapshotEntries = 0;
      reset();
    },

    async close(): Promise<void> {
      snapshots.clear();
      snapshotEntries = 0;
    },
  };
}
