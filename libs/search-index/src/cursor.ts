/**
 * What both adapters share for filters, facets and cursors: the normal form of the filters, the
 * key a cursor is bound to, the cursor's encoding, and the facet order.
 *
 * A cursor is `<payload>.<mac>`, both base64url: the payload is the adapter's JSON (where to go
 * on, and the key of the text and filters it belongs to), the mac an HMAC-SHA256 of it (16 bytes),
 * so a truncated, altered or made-up cursor is refused as InvalidCursor before anything is read.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { isRecord } from './checked.ts';
import { InvalidCursor, tagKey } from './port.ts';
import type { CategoryFacet, FacetCount, SearchFilters } from './port.ts';

/** Filters as compared: tags as their distinct non-empty `tagKey`s, sorted. */
export interface NormalFilters {
  categoryId?: number;
  license?: string;
  tags: string[];
}

/** Checks and normalises `filters` (a blank tag names no tag and is left out). */
export function normalFilters(filters: SearchFilters | undefined): NormalFilters {
  const normal: NormalFilters = { tags: [] };
  if (filters === undefined || filters === null) return normal;
  if (typeof filters !== 'object') throw new Error('filters must be an object');
  if (filters.categoryId !== undefined) {
    if (!Number.isSafeInteger(filters.categoryId)) throw new Error(`filters.categoryId must be an integer, got ${filters.categoryId}`);
    normal.categoryId = filters.categoryId;
  }
  if (filters.license !== undefined) {
    if (typeof filters.license !== 'string') throw new Error('filters.license must be a string');
    normal.license = filters.license;
  }
  if (filters.tags !== undefined) {
    if (!Array.isArray(filters.tags) || !filters.tags.every((tag) => typeof tag === 'string')) {
      throw new Error('filters.tags must be an array of strings');
    }
    normal.tags = [...new Set(filters.tags.map(tagKey).filter((key) => key !== ''))].sort();
  }
  return normal;
}

/** The distinct non-empty tag keys of a document's tags: what tag filters and facets see. */
export const tagKeysOf = (tags: readonly string[]): string[] => [...new Set(tags.map(tagKey).filter((key) => key !== ''))];

/** What a cursor is bound to: the searched words and the filters (short hash). */
export function queryKey(words: readonly string[], filters: NormalFilters): string {
  const canonical = JSON.stringify([words, filters.categoryId ?? null, filters.license ?? null, filters.tags]);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
}

/** Longest cursor accepted (an Elasticsearch PIT id is ~200 characters). */
const MAX_CURSOR_LENGTH = 4096;

function mac(secret: string | Buffer, body: string): Buffer {
  return createHmac('sha256', secret).update(body).digest().subarray(0, 16);
}

export function encodeCursor(payload: Record<string, unknown>, secret: string | Buffer): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${mac(secret, body).toString('base64url')}`;
}

/** The payload of a cursor this secret signed; InvalidCursor for anything else. */
export function decodeCursor(cursor: unknown, secret: string | Buffer): Record<string, unknown> {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH) throw new InvalidCursor('malformed cursor');
  const dot = cursor.indexOf('.');
  const body = cursor.slice(0, dot);
  const signature = cursor.slice(dot + 1);
  if (dot <= 0 || !/^[\w-]+$/.test(body) || !/^[\w-]+$/.test(signature)) throw new InvalidCursor('malformed cursor');
  const given = Buffer.from(signature, 'base64url');
  const expected = mac(secret, body);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new InvalidCursor('altered or foreign cursor');
  try {
    const payload: unknown = JSON.parse(Buffer.from(body, 'base64url').toString());
    if (isRecord(payload)) return payload;
  } catch {
    // Falls through: a signed body is ours, so this means a bug, still not a 500.
  }
  throw new InvalidCursor('malformed cursor');
}

/** The cursor's `q` must be the key of this search's text and filters. */
export function checkKey(payload: Record<string, unknown>, key: string): void {
  if (payload.q !== key) throw new InvalidCursor('cursor of another search: its text or filters differ');
}

/** A non-negative integer field of a cursor payload. */
export function offsetOf(payload: Record<string, unknown>): number {
  const offset = payload.o;
  if (!(typeof offset === 'number' && Number.isSafeInteger(offset) && offset >= 0)) throw new InvalidCursor('malformed cursor');
  return offset;
}

/** Unicode code point order, as Elasticsearch orders keyword terms (UTF-8 bytes). */
function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.codePointAt(i);
    const y = b.codePointAt(i);
    if (x === undefined || y === undefined) break;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

export const byCountThenValue = (a: FacetCount, b: FacetCount): number => b.count - a.count || compareCodePoints(a.value, b.value);
export const byCountThenName = (a: CategoryFacet, b: CategoryFacet): number =>
  b.count - a.count || compareCodePoints(a.name, b.name) || a.id - b.id;

/** Cursor options shared by both adapters. */
export interface CursorOptions {
  /** How long a cursor stays usable after the page that gave it (each use extends it, up to its maximum age); default 300 s. */
  cursorTtlSeconds?: number;
  /** How long a cursor stays usable at most, from its first page, however often it is used; default 900 s. */
  cursorMaxAgeSeconds?: number;
}

export const DEFAULT_CURSOR_TTL_SECONDS = 300;
export const DEFAULT_CURSOR_MAX_AGE_SECONDS = 900;

/**
 * The deadline a cursor carries (`e`, epoch milliseconds: its first page plus the maximum age);
 * InvalidCursor once it has passed, however recently the cursor was used.
 */
export function deadlineOf(payload: Record<string, unknown>, now = Date.now()): number {
  const deadline = payload.e;
  if (!(typeof deadline === 'number' && Number.isSafeInteger(deadline))) throw new InvalidCursor('malformed cursor');
  if (deadline <= now) throw new InvalidCursor('expired cursor: past its maximum age');
  return deadline;
}

export function checkTtl(seconds: number, name = 'cursorTtlSeconds'): number {
  if (!(Number.isFinite(seconds) && seconds > 0)) throw new Error(`${name} must be a positive number, got ${seconds}`);
  return seconds;
}
