import { optionalVar } from './config.ts';

/**
 * `CORS_ORIGINS` (the gateway's and `npm start`'s, docs/http-caching-cors.md): a comma-separated
 * list of exact browser origins, or `*` for any; unset, no CORS at all. Read as configuration, so
 * a malformed entry stops the start with its reason.
 */

/** The origins that may call the API: `*` (any), or exact serialized origins (`https://app.example:8443`). */
export type CorsOrigins = '*' | readonly string[];

// scheme://host[:port], nothing after: no path (not even "/"), query, fragment or user info.
const ORIGIN_SHAPE = /^[a-z][a-z0-9+.-]*:\/\/[^/?#@\s]+$/i;

/**
 * One configured origin in the form browsers send it (`Origin` is serialized: lowercase scheme and
 * host, no default port), or the reason it is not an origin.
 */
export const normalizeOrigin = (entry: string): { origin: string } | { problem: string } => {
  const why = `"${entry}" is not an origin (scheme://host[:port], e.g. https://app.example or http://localhost:5173)`;
  if (!ORIGIN_SHAPE.test(entry)) return { problem: why };
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return { problem: why };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: `"${entry}" is not an http(s) origin` };
  return { origin: url.origin };
};

/** `CORS_ORIGINS` read: undefined (unset or empty: CORS off), `*`, or the normalized origins; else the problems. */
export const parseCorsOrigins = (raw: string | undefined): { origins: CorsOrigins | undefined } | { problems: string[] } => {
  const entries = (raw ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (entries.length === 0) return { origins: undefined };
  if (entries.includes('*')) {
    return entries.length === 1 ? { origins: '*' } : { problems: ['"*" (any origin) must be the only entry'] };
  }
  const origins = new Set<string>();
  const problems: string[] = [];
  for (const entry of entries) {
    const read = normalizeOrigin(entry);
    if ('origin' in read) origins.add(read.origin);
    else problems.push(read.problem);
  }
  return problems.length > 0 ? { problems } : { origins: [...origins] };
};

/** `CORS_ORIGINS` in a configuration schema (libs/http config.ts): a bad origin stops the start with its reason. */
export const corsOriginsVar = () => optionalVar().transform((raw, ctx): CorsOrigins | undefined => {
  const read = parseCorsOrigins(raw);
  if ('origins' in read) return read.origins;
  for (const problem of read.problems) ctx.addIssue({ code: 'custom', message: problem });
  return undefined;
});
