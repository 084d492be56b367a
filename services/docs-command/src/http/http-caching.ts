import { createHash } from 'node:crypto';
import type { FileFacts } from '../commands/domain/file.ts';

/*
 * HTTP caching of the two answers that are not JSON (docs/http-caching-cors.md): a file's bytes
 * behind a signed link, and its public page. Validators (RFC 9110 §8.8) and the evaluation of
 * conditional requests (§13): If-None-Match, If-Modified-Since, If-Range. JSON answers are
 * never stored (the gateway's Cache-Control: no-store).
 */

/** What a cache can check an answer with: an entity tag and the time it last changed. */
export interface Validators {
  /** An entity tag, quoted (`"…"`, weak: `W/"…"`). */
  etag: string;
  /** Last-Modified, to the second (what an HTTP-date can say). */
  lastModified: Date;
}

/**
 * Cache-Control of a file's bytes served here: only the client's own cache may keep them, and it
 * must ask again before each use. The link is checked again every time (its signature, its expiry,
 * whether the file may still be downloaded), and a 304 then saves the bytes.
 */
export const STREAMED_CONTENT_CACHE_CONTROL = 'private, no-cache';
/** Cache-Control of the view page: kept by the browser, revalidated on every visit (each visit is a view). */
export const PAGE_CACHE_CONTROL = 'private, no-cache';

const tag = (digest: Buffer): string => `"${digest.subarray(0, 18).toString('base64url')}"`;
const seconds = (iso: string): Date => new Date(Math.floor(Date.parse(iso) / 1000) * 1000);

/**
 * The validators of a file's bytes. The bytes of a file never change (a file id has exactly one
 * upload, stored under a key made for it), so the entity tag comes from the blob's key: strong,
 * the same across requests, restarts and replicas, different for every upload, and computed
 * without reading a byte. Last-Modified is the upload time.
 */
export const contentValidators = (file: Pick<FileFacts, 'blobKey' | 'uploadedAt'>): Validators => ({
  etag: tag(createHash('sha256').update(`docshare content\n${file.blobKey}`).digest()),
  lastModified: seconds(file.uploadedAt),
});

/**
 * The validators of a file's view page, from the page rendered without its script nonce
 * (`template`): the entity tag is the digest of those bytes, so it changes with anything the page
 * shows (and with its layout or PUBLIC_BASE_URL); Last-Modified is when the file's facts last
 * changed (FileFacts.changedAt).
 *
 * The tag is weak: every 200 carries a fresh CSP nonce, so two pages with the same tag differ in
 * those bytes (a strong tag promises identical bytes; a nonce that repeats would not be a
 * nonce). A weak tag is all If-None-Match needs, and the page takes no Range.
 */
export const pageValidators = (template: string, file: Pick<FileFacts, 'changedAt' | 'uploadedAt'>): Validators => ({
  etag: `W/${tag(createHash('sha256').update(template).digest())}`,
  lastModified: seconds(file.changedAt ?? file.uploadedAt),
});

/** An HTTP-date (IMF-fixdate). */
export const httpDate = (date: Date): string => date.toUTCString();

// asctime (`Sun Nov  6 08:49:37 1994`) carries no zone: HTTP dates are UTC.
const ASCTIME = /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}$/;
// The three forms RFC 9110 §5.6.7 accepts: IMF-fixdate, RFC 850 and asctime.
const HTTP_DATE = /^(?:[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT|[A-Z][a-z]+, \d\d-[A-Z][a-z]{2}-\d\d \d\d:\d\d:\d\d GMT)$/;

/** An HTTP-date in milliseconds since the epoch; undefined for anything else. */
export const parseHttpDate = (value: string): number | undefined => {
  const text = value.trim();
  const ms = ASCTIME.test(text) ? Date.parse(`${text} GMT`) : HTTP_DATE.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(ms) ? undefined : ms;
};

/** The entity tags of an If-None-Match / If-Match list, `*` as itself; malformed members are skipped. */
export const parseEntityTags = (header: string): string[] => {
  if (header.trim() === '*') return ['*'];
  return [...header.matchAll(/\s*((?:W\/)?"[^"]*")\s*(?:,|$)/g)].map((match) => match[1] as string);
};

const opaque = (etag: string): string => (etag.startsWith('W/') ? etag.slice(2) : etag);

/** Weak comparison (RFC 9110 §8.8.3.2): the same opaque tag, either or both weak. */
export const weakMatch = (a: string, b: string): boolean => opaque(a) === opaque(b);
/** Strong comparison: both strong and the same. */
export const strongMatch = (a: string, b: string): boolean => !a.startsWith('W/') && !b.startsWith('W/') && a === b;

export interface ConditionalHeaders {
  ifNoneMatch?: string | undefined;
  ifModifiedSince?: string | undefined;
}

/**
 * Whether a GET or HEAD is answered 304 Not Modified (RFC 9110 §13.2.2, steps 3 and 4):
 * If-None-Match, weakly compared, `*` matching any current representation; only without it,
 * If-Modified-Since (an invalid date is ignored).
 */
export const notModified = (headers: ConditionalHeaders, validators: Validators): boolean => {
  if (headers.ifNoneMatch !== undefined) {
    const tags = parseEntityTags(headers.ifNoneMatch);
    return tags.includes('*') || tags.some((tag) => weakMatch(tag, validators.etag));
  }
  if (headers.ifModifiedSince === undefined) return false;
  const since = parseHttpDate(headers.ifModifiedSince);
  return since !== undefined && validators.lastModified.getTime() <= since;
};

/**
 * Whether the Range of a request is honoured given its If-Range (RFC 9110 §13.1.5): always without
 * one; with an entity tag, only when it matches strongly; with a date, only when it is exactly
 * Last-Modified. Otherwise the whole representation is sent (200).
 */
export const rangeAllowed = (ifRange: string | undefined, validators: Validators): boolean => {
  if (ifRange === undefined) return true;
  const value = ifRange.trim();
  if (value.startsWith('"') || value.startsWith('W/')) return strongMatch(value, validators.etag);
  const date = parseHttpDate(value);
  return date !== undefined && date === validators.lastModified.getTime();
};
