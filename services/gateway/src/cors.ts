import type { Request, RequestHandler } from 'express';
import type { CorsOrigins } from '@docshare/http';

// CORS_ORIGINS is read with the rest of the configuration (libs/http cors-origins.ts, libs/runtime config/edge.ts).
export { corsOriginsVar, normalizeOrigin, parseCorsOrigins, type CorsOrigins } from '@docshare/http';

/**
 * CORS at the edge (docs/http-caching-cors.md). `CORS_ORIGINS` names the browser origins that may
 * call the API from another site: a comma-separated list of exact origins, or `*` for any. Unset:
 * no CORS header at all, and a browser's cross-origin call fails as it always did.
 *
 * The API authenticates with a header token, never a cookie, so no answer ever carries
 * `Access-Control-Allow-Credentials`: `*` is never combined with credentials.
 */

/** The methods the API's routes use (preflight answer; PUT: a resumable upload's parts; PATCH: a webhook's changes). */
export const CORS_ALLOWED_METHODS: readonly string[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** The request headers a browser app may send (preflight answer). */
export const CORS_ALLOWED_HEADERS: readonly string[] = [
  'Content-Type', 'Authorization', 'X-Authorization', 'Idempotency-Key', 'X-Request-Id', 'Range', 'If-None-Match', 'If-Modified-Since', 'If-Range',
];
/** The response headers a browser app may read besides the CORS-safelisted ones (ETag: a part's, which completion names too). */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  'X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'RateLimit', 'Retry-After',
  'ETag', 'Last-Modified', 'Content-Range', 'Content-Disposition', 'Content-Length', 'Idempotent-Replayed', 'Accept-Ranges',
];
/** How long a browser may reuse a preflight answer (browsers cap it: Chromium at 2 h, Firefox at 24 h). */
export const CORS_MAX_AGE_SECONDS = 600;

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
