import { randomUUID } from 'node:crypto';
import express, { type RequestHandler, type Request, type Response } from 'express';
import { invalid, unauthorized, LIMITS, M } from '@docshare/contracts';
import { sendError, sendUnavailable } from './errors.ts';

/** The header the gateway sets to the authenticated user's id; any client-sent value is removed first. */
export const IDENTITY_HEADER = 'x-docshare-user-id';
/**
 * The header the gateway sets to the client's address (express `req.ip`: TRUST_PROXY decides
 * whether a load balancer's X-Forwarded-For is believed); any client-sent value is removed first.
 */
export const CLIENT_ADDRESS_HEADER = 'x-docshare-client-address';
export const REQUEST_ID_HEADER = 'x-request-id';
export const CORRELATION_HEADER = 'x-correlation-id';

/**
 * A file's bytes handed to the gateway (distributed mode): the gateway asks with
 * BLOB_HANDOFF_HEADER (never passed on from a client); docs-command then checks the link and
 * answers the headers with the blob's key (BLOB_KEY_HEADER) and the chosen range
 * (BLOB_RANGE_HEADER, `start-end`) instead of the bytes, which the gateway streams from the blob
 * store itself. Both answer headers stay between the two.
 */
export const BLOB_HANDOFF_HEADER = 'x-docshare-blob-handoff';
export const BLOB_KEY_HEADER = 'x-docshare-blob-key';
export const BLOB_RANGE_HEADER = 'x-docshare-blob-range';

const CLIENT_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Keeps a well-formed client X-Request-Id or makes one; always echoes it. */
export const requestId = (): RequestHandler => (req, res, next) => {
  const sent = req.get(REQUEST_ID_HEADER);
  const id = sent !== undefined && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
  req.headers[REQUEST_ID_HEADER] = id;
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
};

/** The request's id and correlation id, as the gateway set them. */
export const metaOf = (req: Request): { requestId: string; correlationId: string } => {
  const requestIdValue = req.get(REQUEST_ID_HEADER) ?? randomUUID();
  return { requestId: requestIdValue, correlationId: req.get(CORRELATION_HEADER) ?? requestIdValue };
};

/** The authenticated user's id, set by the gateway; throws when the route was reached without one. */
export const actorOf = (req: Request): number => {
  const raw = req.get(IDENTITY_HEADER);
  const id = raw === undefined ? NaN : Number(raw);
  if (!Number.isSafeInteger(id) || id <= 0) throw unauthorized(M.missingToken);
  return id;
};

/**
 * Who asks, as far as counting viewers goes: the user the gateway authenticated (null without a
 * valid token), the client's address as the gateway saw it, and the User-Agent.
 */
export const requesterOf = (req: Request): { userId: number | null; address: string; userAgent: string } => {
  const id = Number(req.get(IDENTITY_HEADER) ?? NaN);
  return {
    userId: Number.isSafeInteger(id) && id > 0 ? id : null,
    address: req.get(CLIENT_ADDRESS_HEADER) ?? req.ip ?? '',
    userAgent: req.get('user-agent') ?? '',
  };
};

const JSON_TYPES = ['application/json', 'application/*+json'];
const parseJson = express.json({ limit: '1mb', type: JSON_TYPES });

/**
 * JSON bodies up to 1 MiB (or `limit`: the internal extraction route takes up to 200,000
 * characters of text); anything that is not a JSON object reads as `{}` so validation answers.
 */
export const jsonBody = (limit?: string): RequestHandler => {
  const parse = limit === undefined ? parseJson : express.json({ limit, type: JSON_TYPES });
  return (req, res, next) => parse(req, res, (error?: unknown) => {
    if (error) return next(error);
    if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) req.body = {};
    next();
  });
};

/** The request body as a plain object. */
export const bodyOf = (req: Request): Record<string, unknown> =>
  req.body !== null && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};

/** A page request from `page` / `per_page` (query or body). */
export const pageOf = (
  source: Record<string, unknown>, defaults: { perPage: number; max: number } = { perPage: LIMITS.perPageDefault, max: LIMITS.perPageMax },
): { page: number; perPage: number } => {
  const parse = (value: unknown, fallback: number, message: string, max: number): number => {
    if (value === undefined || value === '') return fallback;
    const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,9}$/.test(value.trim()) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n) || n < 1 || n > max) throw invalid(message);
    return n;
  };
  return {
    page: parse(source.page, 1, M.invalidPage, 1_000_000),
    perPage: parse(source.per_page, defaults.perPage, M.invalidPerPage, defaults.max),
  };
};

/** The probes every service answers on its own port (decisions §13). */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);
/** The operational endpoints (the probes and, where a service serves it, /metrics): never logged per request. */
export const OPS_PATHS: ReadonlySet<string> = new Set([...PROBE_PATHS, '/metrics']);

/**
 * One JSON log line per request, with the request and correlation ids the gateway set, plus
 * whatever `fields` adds once the response is finished.
 */
export const requestLog = (
  logger: { info(obj: object, msg: string): void },
  fields: (req: Request, res: Response) => object = () => ({}),
): RequestHandler => (req, res, next) => {
  if (OPS_PATHS.has(req.path)) return next();
  const started = performance.now();
  res.on('finish', () => {
    logger.info({
      requestId: req.get(REQUEST_ID_HEADER), correlationId: req.get(CORRELATION_HEADER), method: req.method,
      path: req.path, status: res.statusCode, ms: Math.round(performance.now() - started), ...fields(req, res),
    }, 'request');
  });
  next();
};

/**
 * Bounds the total time of a request (`HTTP_REQUEST_TIMEOUT_MS`), except those `exempt` names
 * (transfers, bounded by their progress instead). Past the deadline a request still sending its
 * body is the client's: 408 `Request timeout`; one the server is still working on answers 503 with
 * Retry-After and the route's failure message. Either way the connection then closes, so a late
 * answer of the handler goes nowhere.
 */
export const requestDeadline = (
  ms: number, exempt: (req: Request) => boolean, logger: { warn(obj: object, msg: string): void },
): RequestHandler => (req, res, next) => {
  if (exempt(req)) return next();
  const timer = setTimeout(() => {
    if (res.writableEnded || res.destroyed) return;
    logger.warn({ requestId: res.locals.requestId, method: req.method, path: req.path, ms }, 'request deadline passed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.setHeader('Connection', 'close');
    if (!req.complete) return sendError(res, 408, M.requestTimeout);
    sendUnavailable(res);
  }, ms);
  res.once('close', () => clearTimeout(timer));
  next();
};
