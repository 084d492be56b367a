/**
 * A short excerpt of a search hit around the query's words, for result lists.
 *
 * Words match as the index matches them: each word of the document (a run of letters, digits and
 * combining marks) goes through `tokenize()` (accents folded, lowercased), and a token matches a
 * query word when equal to it or within the AUTO edit distance of the query word (0 edits up to
 * 2 letters, 1 up to 5, else 2; a transposition is one edit), with the memory index's own
 * distance function. The excerpt is the window of `maxLength` characters holding the most
 * distinct query words (ties: more of them matched exactly, then title > description > content,
 * then the earliest), widened to `maxLength` on word boundaries, HTML-escaped, every matching word
 * in `<mark>`, `…` where the text is cut. Without any match (a hit by its category or tags): the
 * start of the description, else of the title.
 *
 * The work is bounded per hit and per page, whatever the documents and the query: the content is
 * read up to its first SNIPPET_CONTENT_LENGTH characters (title and description are short), and
 * the snippets of one page (`makeSnippets`) share their matches and at most
 * SNIPPET_FUZZY_WORK_PER_PAGE cells of edit-distance tables; once spent, the remaining words of
 * the page are matched exactly only (exact matches never need a table).
 */
import { at } from './checked.ts';
import { contentHead, HIT_CONTENT_LENGTH } from './port.ts';
import type { SearchDoc } from './port.ts';
import { allowedEdits, bitCount, boundedDistance, codesOf, lettersOf, tokenize } from './memory-search-index.ts';
import { MAX_QUERY_WORDS } from './elasticsearch-mapping.ts';

export interface SnippetOptions {
  /** Longest excerpt, in characters of text (marks and escapes not counted, `…` counted); default 160. */
  maxLength?: number;
  /** Characters of the content read, from its start; default SNIPPET_CONTENT_LENGTH. */
  contentLength?: number;
  /** Cells of edit-distance tables the snippets of one `makeSnippets` may fill; default SNIPPET_FUZZY_WORK_PER_PAGE. */
  fuzzyWork?: number;
}

export const DEFAULT_SNIPPET_LENGTH = 160;

/** The content a snippet reads: what a search hit carries (HIT_CONTENT_LENGTH). */
export const SNIPPET_CONTENT_LENGTH = HIT_CONTENT_LENGTH;

/**
 * Cells of edit-distance tables one page's snippets may fill (a six-letter word against another
 * is 36): a few milliseconds. Ordinary words rarely need a table (the letter filter and the
 * shared matches spare them); 28 words of six letters over "abcdef" need one for nearly every
 * word of the text, and filled 1.3 million tables for one page before this bound.
 */
export const SNIPPET_FUZZY_WORK_PER_PAGE = 250_000;

/** Work done by the snippets of one page, for tests and measurements. */
export interface SnippetWork {
  /** Characters of title, description and content read. */
  characters: number;
  /** Cells of edit-distance tables filled (at most the budget, plus the one table that crossed it). */
  fuzzyWork: number;
}

/** Builds the snippets of one page of hits for one query; see the module comment. Never throws. */
export interface Snippets {
  (doc: SearchDoc): string;
  readonly work: SnippetWork;
}

const ELLIPSIS = '…';
const WORD_RUN = /[\p{L}\p{N}\p{M}]+/gu;
const WORD_CHAR = /[\p{L}\p{N}\p{M}]/u;
const ASCII_WORD = /^[A-Za-z0-9]+$/;

interface QueryWord { text: string; codes: number[]; letters: number; max: number }
/** How a document word matches: the query word (index) it stands for, and whether exactly. */
interface Match { q: number; exact: boolean }
interface Found extends Match { start: number; end: number }

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);

function isWordChar(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  // Either half of a surrogate pair: astral letters and digits (and never cut between the halves).
  if (code >= 0xd800 && code <= 0xdfff) return true;
  return WORD_CHAR.test(text.charAt(at));
}

/**
 * Matches tokens against the query words; each distinct token is compared once, and the tables of
 * fuzzy comparisons fill at most `budget` cells (`work.fuzzyWork` counts them).
 */
function matcher(words: QueryWord[], budget: number, work: SnippetWork): (word: string) => Match | undefined {
  const exact = new Map(words.map((word, q) => [word.text, q]));
  const tokens = new Map<string, Match | null>();
  const words_ = new Map<string, Match | null>();

  function matchToken(token: string): Match | null {
    const known = tokens.get(token);
    if (known !== undefined) return known;
    let found: Match | null = null;
    const q = exact.get(token);
    if (q !== undefined) {
      found = { q, exact: true };
    } else if (work.fuzzyWork < budget) {
      const codes = codesOf(token);
      const letters = lettersOf(codes);
      for (const [i, word] of words.entries()) {
        if (word.max === 0 || Math.abs(codes.length - word.codes.length) > word.max) continue;
        if (bitCount(letters & ~word.letters) > word.max || bitCount(word.letters & ~letters) > word.max) continue;
        // Spent: from here on, words are matched exactly only.
        if (work.fuzzyWork >= budget) return null;
        work.fuzzyWork += codes.length * word.codes.length;
        if (boundedDistance(word.codes, codes, word.max) <= word.max) {
          found = { q: i, exact: false };
          break;
        }
      }
    }
    tokens.set(token, found);
    return found;
  }

  return (word) => {
    const known = words_.get(word);
    if (known !== undefined) return known ?? undefined;
    let best: Match | null = null;
    // An ASCII word is its own token, lowercased: no Unicode normalisation for the common case.
    for (const token of ASCII_WORD.test(word) ? [word.toLowerCase()] : tokenize(word)) {
      const found = matchToken(token);
      if (found && (!best || (found.exact && !best.exact))) best = found;
      if (best?.exact) break;
    }
    words_.set(word, best);
    return best ?? undefined;
  };
}

interface Window { field: number; start: number; end: number; distinct: number; exact: number }

/** Better window first: more distinct words, more exact ones, earlier field, earlier place. */
const better = (a: Window, b: Window): boolean =>
  a.distinct !== b.distinct ? a.distinct > b.distinct
    : a.exact !== b.exact ? a.exact > b.exact
      : a.field !== b.field ? a.field < b.field
        : a.start < b.start;

/** The best window of `found` (in text order) no longer than `budget`, by two pointers. */
function bestWindow(field: number, found: Found[], words: number, budget: number): Window | undefined {
  const counts = new Int32Array(words);
  const exactCounts = new Int32Array(words);
  let distinct = 0;
  let exact = 0;
  let best: Window | undefined;
  let j = 0;
  const add = (match: Found): void => {
    const count = at(counts, match.q);
    counts[match.q] = count + 1;
    if (count === 0) distinct++;
    if (!match.exact) return;
    const exactCount = at(exactCounts, match.q);
    exactCounts[match.q] = exactCount + 1;
    if (exactCount === 0) exact++;
  };
  const remove = (match: Found): void => {
    const count = at(counts, match.q) - 1;
    counts[match.q] = count;
    if (count === 0) distinct--;
    if (!match.exact) return;
    const exactCount = at(exactCounts, match.q) - 1;
    exactCounts[match.q] = exactCount;
    if (exactCount === 0) exact--;
  };
  for (const [i, first] of found.entries()) {
    if (j <= i) {
      add(first);
      j = i + 1;
    }
    while (j < found.length && at(found, j).end - first.start <= budget) add(at(found, j++));
    const window: Window = { field, start: first.start, end: at(found, j - 1).end, distinct, exact };
    if (!best || better(window, best)) best = window;
    remove(first);
  }
  return best;
}

/** The text from `start` to `end` (escaped), with the matches in it marked. */
function render(text: string, start: number, end: number, found: Found[]): string {
  let out = '';
  let at = start;
  for (const match of found) {
    if (match.end <= start || match.start < at) continue;
    if (match.end > end) break;
    out += escapeHtml(text.slice(at, match.start)) + '<mark>' + escapeHtml(text.slice(match.start, match.end)) + '</mark>';
    at = match.end;
  }
  return out + escapeHtml(text.slice(at, end));
}

/**
 * Bounds of an excerpt of at most `length` characters of `text` (ellipses included) that holds
 * [from, to) when it fits, centred on it, cut between words.
 */
function excerptBounds(text: string, from: number, to: number, length: number): { start: number; end: number } {
  if (text.length <= length) return { start: 0, end: text.length };
  const span = Math.min(to - from, length - 2);
  let start = Math.max(0, from - Math.floor((length - 2 - span) / 2));
  let end = Math.min(text.length, start + length);
  start = Math.max(0, end - length);
  // Room for the ellipses.
  if (start > 0) start++;
  if (end < text.length) end--;
  if (start > 0 && end < text.length && end - start > length - 2) end--;
  // Not inside a word: forward to the next word's start (unless the match would be cut), back likewise at the end.
  if (start > 0 && isWordChar(text, start - 1)) {
    let next = start;
    while (next < text.length && isWordChar(text, next)) next++;
    if (next <= from || from < start) start = next;
  }
  while (start < end && text[start] === ' ') start++;
  if (end < text.length && isWordChar(text, end)) {
    let previous = end;
    while (previous > start && isWordChar(text, previous - 1)) previous--;
    if (previous >= Math.min(to, end) && previous > start) end = previous;
    else if (previous > start && to > end) end = previous;
  }
  while (end > start && text[end - 1] === ' ') end--;
  // A word longer than the excerpt: cut inside it after all, but never between surrogate halves.
  if (end <= start) {
    start = Math.max(0, Math.min(from, text.length - length + 2));
    end = Math.min(text.length, start + length - (start > 0 ? 1 : 0) - 1);
  }
  if (isLowSurrogate(text, start)) start++;
  if (isLowSurrogate(text, end)) end--;
  return { start, end };
}

const isLowSurrogate = (text: string, at: number): boolean => {
  const code = text.charCodeAt(at);
  return code >= 0xdc00 && code <= 0xdfff;
};

const collapse = (text: unknown): string => (typeof text === 'string' ? text.replace(/\s+/g, ' ').trim() : '');

const TRAILING_WORD = /[\p{L}\p{N}\p{M}]+$/u;

/** The start of a content that goes on after `length` characters, without the word cut at the end. */
function cutContent(text: string, length: number): string {
  const head = contentHead(text, length);
  return isWordChar(text, head.length) ? head.replace(TRAILING_WORD, '') : head;
}

/** The start of `text`, cut between words to `length` characters, escaped. */
function opening(text: string, length: number): string {
  if (text.length <= length) return escapeHtml(text);
  const { start, end } = excerptBounds(text, 0, 0, length);
  return escapeHtml(text.slice(start, end)) + ELLIPSIS;
}

const positive = (value: number | undefined, fallback: number): number =>
  (typeof value === 'number' && value >= 0 ? Math.floor(value) : fallback);

/** The snippets of one page of hits for the words of `text` (see the module comment). */
export function makeSnippets(text: string, options: SnippetOptions = {}): Snippets {
  const maxLength = Math.max(10, Math.floor(options.maxLength ?? DEFAULT_SNIPPET_LENGTH) || DEFAULT_SNIPPET_LENGTH);
  const contentLength = positive(options.contentLength, SNIPPET_CONTENT_LENGTH);
  const work: SnippetWork = { characters: 0, fuzzyWork: 0 };
  let match: ((word: string) => Match | undefined) | undefined;
  let words: QueryWord[] = [];
  try {
    words = [...new Set(tokenize(typeof text === 'string' ? text : ''))].slice(0, MAX_QUERY_WORDS).map((word) => {
      const codes = codesOf(word);
      return { text: word, codes, letters: lettersOf(codes), max: allowedEdits(codes.length) };
    });
    if (words.length > 0) match = matcher(words, positive(options.fuzzyWork, SNIPPET_FUZZY_WORK_PER_PAGE), work);
  } catch {
    // No words: every snippet is the opening below.
  }

  const snippet = (doc: SearchDoc): string => {
    const content = typeof doc?.content === 'string' ? doc.content : '';
    // Read no further than the budget; a content cut here ends with `…` when the excerpt reaches its end.
    const cut = content.length > contentLength;
    const fields = [collapse(doc?.title), collapse(doc?.description), collapse(cut ? cutContent(content, contentLength) : content)];
    try {
      if (match) {
        let best: Window | undefined;
        const perField: Found[][] = fields.map((field, f) => {
          work.characters += field.length;
          const found: Found[] = [];
          for (const run of field.matchAll(WORD_RUN)) {
            const hit = (match)(run[0]);
            if (hit) found.push({ ...hit, start: run.index, end: run.index + run[0].length });
          }
          const window = bestWindow(f, found, words.length, maxLength - 2);
          if (window && (!best || better(window, best))) best = window;
          return found;
        });
        if (best) {
          const field = at(fields, best.field);
          const { start, end } = excerptBounds(field, best.start, best.end, maxLength);
          const more = end < field.length || (best.field === 2 && cut);
          return (start > 0 ? ELLIPSIS : '') + render(field, start, end, at(perField, best.field)) + (more ? ELLIPSIS : '');
        }
      }
    } catch {
      // Falls back to the opening below: a snippet must never fail a search.
    }
    try {
      return opening(fields[1] !== '' ? at(fields, 1) : at(fields, 0), maxLength);
    } catch {
      return '';
    }
  };
  return Object.assign(snippet, { work });
}

/** A short HTML excerpt of `doc` around the words of `text` (see the module comment). Never throws. */
export function snippetOf(doc: SearchDoc, text: string, options: SnippetOptions = {}): string {
  return makeSnippets(text, options)(doc);
}
