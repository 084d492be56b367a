import type { ErrorRequestHandler, Response } from 'express';
import { DocshareError, M, type FailureKind } from '@docshare/contracts';
import type { Logger } from 'pino';

const STATUS: Record<FailureKind, number> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  too_large: 413,
  range_not_satisfiable: 416,
  rate_limited: 429,
  unavailable: 503,
};

/** The HTTP status for a failure kind. */
export const statusOf = (kind: FailureKind): number => STATUS[kind];

/** Sends the spec's error envelope. */
export const sendError = (res: Response, status: number, message: string): void => {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(status).json({ status: 'error', message });
};

/**
 * Sets the message a route answers with when something unexpected fails (the spec names one for
 * some endpoints: `Error during deletion`, `Error during search`, `Error fetching user stats`).
 */
export const failureMessage = (message: string) =>
  (_req: unknown, res: Response, next: () => void): void => {
    res.locals.failureMessage = message;
    next();
  };

interface BodyParserError { type?: string; status?: number; statusCode?: number; expose?: boolean }

const TRANSIENT_NAMES = new Set([
  'MongoNetworkError', 'MongoNetworkTimeoutError', 'MongoServerSelectionError', 'MongoNotConnectedError',
  'MongoTopologyClosedError', 'PoolClearedError', 'PoolClearedOnNetworkError', 'MongoWriteConcernError',
  'ConnectionError', 'TimeoutError', 'NoLivingConnectionsError',
]);
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ESOCKETTIMEDOUT', 'ECONNABORTED']);

/**
 * True for failures of a dependency that pass (a server restarting, a network blip, an overloaded
 * Elasticsearch), as opposed to an event or request this code cannot handle. A request that meets
 * one answers 503 with Retry-After; a projector retries the event in place.
 */
export const isTransient = (error: unknown): boolean => {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; code?: unknown; meta?: { statusCode?: unknown }; errorLabels?: unknown; cause?: unknown };
  if (typeof e.name === 'string' && TRANSIENT_NAMES.has(e.name)) return true;
  if (typeof e.code === 'string' && TRANSIENT_CODES.has(e.code)) return true;
  const status = e.meta?.statusCode;
  if (e.name === 'ResponseError' && typeof status === 'number' && (status === 429 || status >= 500)) return true;
  if (Array.isArray(e.errorLabels) && e.errorLabels.includes('RetryableWriteError')) return true;
  return e.cause !== undefined && e.cause !== error && isTransient(e.cause);
};

/** Seconds a client is told to wait after a 503 (a dependency restarting takes seconds). */
export const RETRY_AFTER_SECONDS = 5;

/** A client-caused error that carries its own 4xx status (a malformed URI escape, an undecodable body). */
const clientStatusOf = (error: BodyParserError): number | undefined => {
  const status = error.status ?? error.statusCode;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status < 500 ? status : undefined;
};

/** The message for a 4xx error that is not one of ours: never an internal detail. */
const CLIENT_MESSAGES: Record<number, string> = {
  408: 'Request timeout',
  411: 'Length required',
  413: 'Request body too large',
  414: 'URI too long',
  415: 'Unsupported media type',
  431: 'Request header fields too large',
};

/**
 * The one place errors become responses: DocshareErrors with their message, body-parser errors as
 * 400/413, other errors that carry a 4xx status (malformed percent-escapes, bodies that do not
 * decode) as that 4xx, a dependency that is down as 503 with Retry-After, anything else as a 500
 * with the route's failure message (and the stack in the log only).
 */
export const errorHandler = (logger: Logger): ErrorRequestHandler => (error, req, res, _next) => {
  if (error instanceof DocshareError) {
    if (error.kind === 'unavailable') {
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      logger.warn({ err: error, requestId: res.locals.requestId }, 'unavailable');
      // A backend failure answers with the route's own message where the spec names one.
      const message = typeof res.locals.failureMessage === 'string' ? res.locals.failureMessage : error.message;
      return sendError(res, statusOf(error.kind), message);
    }
    sendError(res, statusOf(error.kind), error.message);
    return;
  }
  const parserError = error as BodyParserError;
  if (parserError.type === 'entity.parse.failed') return sendError(res, 400, M.malformedJson);
  if (parserError.type === 'entity.too.large') return sendError(res, 413, M.bodyTooLarge);
  if (parserError.type === 'encoding.unsupported' || parserError.type === 'charset.unsupported') {
    return sendError(res, 400, M.malformedJson);
  }
  if (parserError.type === 'request.aborted') return;
  const clientStatus = clientStatusOf(parserError);
  if (clientStatus !== undefined) {
    // body-parser marks a body that does not inflate under its Content-Encoding, URIError from a
    // malformed %-escape in a path is marked by express: the client's mistake, never a 500.
    logger.info({ err: error, requestId: res.locals.requestId, status: clientStatus }, 'client error');
    const message = error instanceof URIError ? M.malformedUrl
      : parserError.type === undefined || clientStatus !== 400 ? CLIENT_MESSAGES[clientStatus] ?? M.badRequest
        : M.malformedBody;
    return sendError(res, clientStatus, message);
  }
  if (isTransient(error)) {
    logger.warn({ err: error, requestId: res.locals.requestId, method: req.method, path: req.path }, 'dependency unavailable');
    res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
    const message = typeof res.locals.failureMessage === 'string' ? res.locals.failureMessage : M.unavailable;
    return sendError(res, 503, message);
  }
  logger.error({ err: error, requestId: res.locals.requestId, method: req.method, path: req.path }, 'request failed');
  const message = typeof res.locals.failureMessage === 'string' ? res.locals.failureMessage : M.internal;
  sendError(res, 500, message);
};
