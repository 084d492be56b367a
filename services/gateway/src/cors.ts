import type { Request, RequestHandler } from 'express';
import { optionalVar } from '@docshare/http';

/**
 * CORS at the edge (docs/http-caching-cors.md). `CORS_ORIGINS` names the browser origins that may
 * call the API from another site: a comma-separated list of exact origins, or `*` for any. Unset:
 * no CORS header at all, and a browser's cross-origin call fails as it always did.
 *
 * The API authenticates with a header token, never a cookie, so no answer ever carries
 * `Access-Control-Allow-Credentials`: `*` is never combined with credentials.
 */

/** The origins that may call the API: `*` (any), or exact serialized origins (`https://app.example:8443`). */
export type CorsOrigins = '*' | readonly string[];

/** The methods the API's routes use (preflight answer). */
export const CORS_ALLOWED_METHODS: readonly string[] = ['GET', 'HEAD', 'POST', 'DELETE'];
/** The request headers a browser app may send (preflight answer). */
export const CORS_ALLOWED_HEADERS: readonly string[] = [
  'Content-Type', 'Authorization', 'X-Authorization', 'Idempotency-Key', 'X-Request-Id', 'Range', 'If-None-Match', 'If-Modified-Since', 'If-Range',
];
/** The response headers a browser app may read besides the CORS-safelisted ones. */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  'X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'RateLimit', 'Retry-After',
  'ETag', 'Last-Modified', 'Content-Range', 'Content-Disposition', 'Content-Length', 'Idempotent-Replayed', 'Accept-Ranges',
];
/** How long a browser may reuse a preflight answer (browsers cap it: Chromium at 2 h, Firefox at 24 h). */
export const CORS_MAX_AGE_SECONDS = 600;

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

/**
 * The pattern of the route a path belongs to, among Express patterns (`/docs/:fileId`), matched
 * as Express does (case-sensitive, an optional trailing slash); undefined for any other path.
 */
export const routeMatcher = (patterns: readonly string[]): ((path: string) => string | undefined) => {
  const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const expressions = patterns.map((pattern) => ({
    pattern,
    expression: new RegExp(`^${pattern.split(/(:[A-Za-z_]\w*)/).map((part) => (part.startsWith(':') ? '[^/]+' : escape(part))).join('')}${pattern.endsWith('/') ? '' : '/?'}$`),
  }));
  return (path) => expressions.find(({ expression }) => expression.test(path))?.pattern;
};

/** A CORS preflight: OPTIONS with an Origin and Access-Control-Request-Method (Fetch standard). */
export const isPreflight = (req: Request): boolean =>
  req.method === 'OPTIONS' && req.get('origin') !== undefined && req.get('access-control-request-method') !== undefined;

export interface CorsOptions {
  origins: CorsOrigins;
  /**
   * The route a path belongs to (its pattern, for the request metrics and logs): a preflight is
   * answered on the gateway's routes and probes only, and elsewhere goes on (404).
   */
  routeOf: (path: string) => string | undefined;
}

/**
 * Adds the CORS headers to every answer for an allowed Origin (`Vary: Origin` to every answer),
 * and answers preflights itself with 204, before authentication, the rate limit and the
 * services: a preflight carries no token, spends no budget and never reaches a service. A
 * preflight from an origin that is not allowed gets a 204 without any Access-Control-Allow-*
 * header, which the browser takes as a refusal. Plain OPTIONS requests (no preflight) go on to
 * the routes (405 `Invalid request method`, as any method a path does not have).
 */
export const cors = (options: CorsOptions): RequestHandler => {
  const { origins } = options;
  const allowed = origins === '*' ? () => true : ((set: ReadonlySet<string>) => (origin: string) => set.has(origin))(new Set(origins));
  const exposed = CORS_EXPOSED_HEADERS.join(', ');
  const methods = CORS_ALLOWED_METHODS.join(', ');
  const headers = CORS_ALLOWED_HEADERS.join(', ');
  return (req, res, next) => {
    // Whether an answer carries the CORS headers depends on Origin, for every answer (caches).
    res.vary('Origin');
    const origin = req.get('origin');
    const allow = origin !== undefined && allowed(origin);
    if (allow) res.setHeader('Access-Control-Allow-Origin', origins === '*' ? '*' : origin);
    const route = isPreflight(req) ? options.routeOf(req.path) : undefined;
    if (route === undefined) {
      if (allow) res.setHeader('Access-Control-Expose-Headers', exposed);
      return next();
    }
    res.locals.route = route;
    if (allow) {
      res.setHeader('Access-Control-Allow-Methods', methods);
      res.setHeader('Access-Control-Allow-Headers', headers);
      res.setHeader('Access-Control-Max-Age', String(CORS_MAX_AGE_SECONDS));
    }
    res.status(204).end();
  };
};
