import express, { type Express, type Request, type RequestHandler } from 'express';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { M } from '@docshare/contracts';
import { tokenFrom, type Tokens, type UrlSigner } from '@docshare/auth';
import {
  CLIENT_ADDRESS_HEADER, CORRELATION_HEADER, DEFAULT_HTTP_LIMITS, IDENTITY_HEADER, PROBE_PATHS, REQUEST_ID_HEADER, counter, errorHandler, requestDeadline,
  requestId, requestLog, sendError, uploadSlot, type Logger, type Ops,
} from '@docshare/http';
import { ROUTES, requestMatcher, signedResource, type Route, type Upstream } from './routes.ts';
import { rateLimit } from './rate-limit.ts';
import { openApiDocument } from './openapi.ts';
import { LOCAL_ROUTES, OPENAPI_PATH, mountDocs, unreadBody } from './docs-ui.ts';
import { makeMemorySessionTokens, sessionConsistency, type SessionTokens } from './consistency.ts';
import { cors, routeMatcher, type CorsOrigins } from './cors.ts';
import { makeMemoryRevokedUsers, type RevokedUsers } from './revocations.ts';
import { forgetErasedUsers } from './erased-users.ts';

/** How the caller authenticated: decided once per request, before rate limiting and routing. */
type Auth = { state: 'missing' } | { state: 'invalid' } | { state: 'valid'; userId: number };

/** The key of an authenticated caller's budgets (rate limit, uploads in flight). */
const authKey = (auth: Auth): string | undefined => (auth.state === 'valid' ? `user:${auth.userId}` : undefined);

export interface GatewayOptions {
  tokens: Pick<Tokens, 'verify'>;
  limiter: RateLimiterAbstract;
  rateLimitPoints: number;
  rateLimitWindowSeconds: number;
  /** The handler of each service: the service's app in one process, a proxy to it otherwise. */
  upstreams: Record<Upstream, RequestHandler>;
  ops: Ops;
  logger: Logger;
  publicBaseUrl: string;
  /** Express `trust proxy` setting, for the client IP behind a load balancer. */
  trustProxy?: boolean | number | string;
  /** Total time of a request on a route that is not a transfer (`HTTP_REQUEST_TIMEOUT_MS`). */
  requestTimeoutMs?: number;
  /** Each user's consistency token (read-your-writes); default: this process's memory. */
  sessions?: SessionTokens;
  /** The browser origins that may call the API cross-origin (`CORS_ORIGINS`); absent: no CORS headers (cors.ts). */
  corsOrigins?: CorsOrigins;
  /**
   * docs-command's link signer (the JWT secret's): a part PUT is outside the rate limit only when
   * its link is genuine and current, so forged ones spend the caller's IP budget like any request
   * (and are refused by docs-command). Absent: every part PUT is outside it.
   */
  partLinks?: Pick<UrlSigner, 'verify'>;
  /** Users whose tokens are refused although they verify (erased accounts, revocations.ts); default: this process's memory. */
  revocations?: RevokedUsers;
}

/**
 * Transfers (an upload, a file's bytes, a resumable upload's part) take as long as the bytes take:
 * they are bounded by their progress (the socket's idle timeout), never by a total time.
 */
const isTransfer: (req: Request) => boolean = requestMatcher(ROUTES.filter((route) => route.transfer === true));

/** The routes the rate limit does not apply to when their link is signed (a resumable upload's part PUTs, an erasure's status, an export's ZIP; routes.ts), each with its matcher. */
const UNLIMITED: ReadonlyArray<{ route: Route; matches: (req: Request) => boolean }> = ROUTES
  .filter((route) => route.rateLimited === false).map((route) => ({ route, matches: requestMatcher([route]) }));

/**
 * The edge: request ids, JWT (verified once, algorithm pinned), the rate limit, routing to the
 * services with the caller's identity set by the gateway alone, and the spec's envelope for
 * unknown routes and wrong methods. It never serves /metrics: that is for the metrics listener
 * (`METRICS_PORT`, internal), so on this public port /metrics is an unknown route like any other.
 */
export const makeGateway = (options: GatewayOptions): Express => {
  const { tokens, logger, ops } = options;
  const revocations = options.revocations ?? makeMemoryRevokedUsers();
  const sessions = options.sessions ?? makeMemorySessionTokens();
  const rateLimited = counter(ops.registry, 'docshare_rate_limited_requests_total',
    'Requests the gateway refused with 429 (rate limit), by what the budget belongs to: a user (valid token) or a client IP', ['by']);
  const app = express();
  app.set('case sensitive routing', true);
  app.disable('x-powered-by');
  app.set('etag', false);
  if (options.trustProxy !== undefined) app.set('trust proxy', options.trustProxy);

  app.use(requestId());
  app.use(requestDeadline(options.requestTimeoutMs ?? DEFAULT_HTTP_LIMITS.requestTimeoutMs, isTransfer, logger));
  app.use(ops.httpMetrics);
  app.use(requestLog(logger, (_req, res) => {
    const auth = res.locals.auth as Auth | undefined;
    return { route: res.locals.route ?? 'unmatched', userId: auth?.state === 'valid' ? auth.userId : undefined };
  }));
  // JSON answers are never stored by any cache; the view page and file content set their own
  // Cache-Control (docs/http-caching-cors.md).
  app.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  // CORS before anything that may answer (401, 429, 404): those answers must be readable by the
  // app too. Preflights are answered here: no token, no rate limit, no service.
  if (options.corsOrigins !== undefined) {
    app.use(cors({ origins: options.corsOrigins, routeOf: routeMatcher([...[...ROUTES, ...LOCAL_ROUTES].map((route) => route.path), ...PROBE_PATHS]) }));
  }

  // Async only for a verified token (is its user revoked?); everything else is decided at once.
  app.use(async (req, res, next) => {
    delete req.headers[IDENTITY_HEADER];
    req.headers[CLIENT_ADDRESS_HEADER] = req.ip ?? '';
    req.headers[CORRELATION_HEADER] = res.locals.requestId as string;
    req.headers[REQUEST_ID_HEADER] = res.locals.requestId as string;
    const token = tokenFrom(req.get('x-authorization'), req.get('authorization'));
    let auth: Auth = { state: 'missing' };
    if (token !== undefined) {
      const verified = tokens.verify(token);
      auth = verified.ok ? { state: 'valid', userId: verified.userId } : { state: 'invalid' };
      // An erased account's tokens still verify: refused as any bad token (401 Invalid JWT token).
      if (auth.state === 'valid') {
        try {
          if (await revocations.isRevoked(auth.userId)) auth = { state: 'invalid' };
        } catch (err) {
          return next(err);
        }
      }
    }
    res.locals.auth = auth;
    if (auth.state === 'valid') req.headers[IDENTITY_HEADER] = String(auth.userId);
    next();
  });

  app.use(rateLimit({
    limiter: options.limiter,
    points: options.rateLimitPoints,
    windowSeconds: options.rateLimitWindowSeconds,
    keyOf: (res, ip) => authKey(res.locals.auth as Auth) ?? `ip:${ip}`,
    peekOnly: (req) => PROBE_PATHS.has(req.path),
    exempt: (req) => {
      const route = UNLIMITED.find((unlimited) => unlimited.matches(req))?.route;
      if (route === undefined) return false;
      if (options.partLinks === undefined) return true;
      const resource = signedResource(route, req.path, req.query);
      return resource !== undefined && options.partLinks.verify(resource, req.query.expires, req.query.signature, Math.floor(Date.now() / 1000));
    },
    onLimited: (key) => rateLimited.inc({ by: key.startsWith('user:') ? 'user' : 'ip' }),
  }));
  app.use(ops.router);
  app.use(forgetErasedUsers({
    revocations, sessions, logger,
    forgetLimits: (userId) => options.limiter.delete(authKey({ state: 'valid', userId })!).then(() => undefined),
  }));
  app.use(sessionConsistency(sessions, (res) => {
    const auth = res.locals.auth as Auth;
    return auth.state === 'valid' ? auth.userId : null;
  }));

  const requireAuth: RequestHandler = (_req, res, next) => {
    const auth = res.locals.auth as Auth;
    if (auth.state === 'missing') return sendError(res, 401, M.missingToken);
    if (auth.state === 'invalid') return sendError(res, 401, M.invalidToken);
    next();
  };

  const spec = openApiDocument(options.publicBaseUrl);
  app.get(OPENAPI_PATH, unreadBody, (_req, res) => {
    res.locals.route = OPENAPI_PATH;
    res.json(spec);
  });
  // `/`, the API reference page (Swagger UI) and its static files: public, rate limited like any path.
  mountDocs(app);

  const methodNotAllowed = (allow: string): RequestHandler => (_req, res) => {
    res.setHeader('Allow', allow);
    sendError(res, 405, M.invalidMethod);
  };
  for (const route of ROUTES) {
    // Express answers HEAD with the GET handler; a GET that records must not be triggered by one.
    if (route.recordsOnGet) app.head(route.path, methodNotAllowed('GET'));
    const upstream = options.upstreams[route.upstream];
    const handlers: RequestHandler[] = [(_req, res, next) => {
      res.locals.route = route.path;
      if (route.failure) res.locals.failureMessage = route.failure;
      next();
    }];
    if (route.auth) handlers.push(requireAuth);
    // Uploads in flight are capped per process and per user (HTTP_MAX_UPLOADS*, docs/ops.md); a
    // resumable upload's parts are not (a client sends several at once; docs-command bounds their bytes).
    if (route.operationId === 'upload') handlers.push(uploadSlot((_req, res) => authKey(res.locals.auth as Auth)));
    handlers.push(upstream);
    app[route.method](route.path, ...handlers);
  }

  const methodsByPath = new Map<string, string[]>();
  for (const route of [...ROUTES, ...LOCAL_ROUTES.map((local) => ({ ...local, recordsOnGet: false }))]) {
    const methods = [route.method.toUpperCase(), ...(route.method === 'get' && !route.recordsOnGet ? ['HEAD'] : [])];
    methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), ...methods]);
  }
  for (const [path, methods] of methodsByPath) app.all(path, methodNotAllowed(methods.join(', ')));

  app.use((_req, res) => sendError(res, 404, M.notFound));
  app.use(errorHandler(logger));
  return app;
};
