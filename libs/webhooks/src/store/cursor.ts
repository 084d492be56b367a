import { invalid, M } from '@docshare/contracts';

/**
 * The listings' keyset cursor: the last item's (at, id), as base64url JSON. Opaque to clients;
 * every adapter reads it the same way, so a page boundary is exact (no skip) however the data
 * grows between pages.
 */
export interface Keyset { at: number; id: string }

export const encodeCursor = (key: Keyset): string => Buffer.from(JSON.stringify([key.at, key.id]), 'utf8').toString('base64url');

/** The keyset in `cursor`; anything this module did not write throws invalid (M.invalidCursor). */
export const decodeCursor = (cursor: string): Keyset => {
  let parsed: unknown;
  try {
    if (!/^[A-Za-z0-9_-]{1,512}$/.test(cursor)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid(M.invalidCursor);
  }
  if (!Array.isArray(parsed) || parsed.length !== 2) throw invalid(M.invalidCursor);
  const [at, id] = parsed as unknown[];
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || typeof id !== 'string' || id === '') throw invalid(M.invalidCursor);
  return { at, id };
};

/** Descending keyset order: a later `at` first, then the larger id. Negative when `a` comes first. */
export const compareDesc = (a: Keyset, b: Keyset): number => (a.at !== b.at ? b.at - a.at : a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
