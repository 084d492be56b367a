import type { ServerResponse } from 'node:http';
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
  unprocessable: 422,
  too_large: 413,
  range_not_satisfiable: 416,
  rate_limited: 429,
  unavailable: 503,
};

/** The HTTP status for a failure kind. */
export const statusOf = (kind: FailureKind): number => STATUS[kind];

/** How long a connection answered early stays half-open so that its client reads the answer. */
const LINGER_MS = 2_000;

/**
 * Makes `res` the connection's last answer, given before the request's body has all arrived (an
 * upload over the limit, a 401 on a large body, a deadline). Node would read and discard the rest
 * of the body to keep the connection; told to close, it destroys the socket the moment the answer
 * is written, and a client still sending then gets a reset that can discard the answer unread. So
 * the socket stops reading, sends the answer and its FIN, and is destroyed after a short linger.
 */
export const closeEarly = (res: ServerResponse): void => {
  if (!res.headersSent) res.setHeader('Connection', 'close');
  const socket = res.socket;
  if (socket === null) return;
  // Once answered, the request is no longer Node's to abort when its socket closes: whatever still
  // waits for the rest of its body (a form being read, an upload's spool file, a proxied request)
  // would wait for ever, holding its descriptors. It learns here that the body will never come.
  const req = res.req as ServerResponse['req'] | undefined;
  if (req !== undefined) {
    socket.once('close', () => {
      if (!req.complete && !req.destroyed) req.destroy();
    });
  }
  // Node calls destroySoon once the last answer is written (res._last).
  socket.destroySoon = (): void => {
    socket.pause();
    // Nothing may read the rest of the request any more (Node's body dump resumes the socket).
    socket.resume = () => socket;
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  };
};

/**
 * Sends the spec's error envelope. An answer given before the request's body has all arrived (an
 * upload over the limit, a 401 on a large body) closes the connection once it is sent: Node would
 * otherwise read and discard the rest of the body, however large, to keep the connection alive.
 */
export const sendError = (res: Response, status: number, message: string): void => {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // Node's own `req` field: absent when a response is made without a request (unit tests).
  const req = (res as { req?: { complete?: boolean } }).req;
  if (req !== undefined && req.complete === false) closeEarly(res);
  // An error is never stored by a cache, whatever the route had set for its success.
  res.setHeader('Cache-Control', 'no-store');
  res.status(status).json({ status: 'error', message });
};

/**
 * 503 with Retry-After and the route's failure message (`Error during search`, ...), or `fallback`
 * where the route names none: a dependency is down, the client may try again.
 */
export const sendUnavailable = (res: Response, fallback: string = M.unavailable): void => {
  if (!res.headersSent) res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
  sendError(res, 503, typeof res.locals.failureMessage === 'string' ? res.locals.failureMessage : fallback);
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
  // Another docshare service answered 5xx or 429 (text-extractor → docs-command).
  'ServiceUnavailableError',
]);
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ESOCKETTIMEDOUT', 'ECONNABORTED',
  // Out of descriptors (this process's, or the system's): they come back as transfers end. The
  // request that meets it, often not the one that used them up, is told to retry, never a 500.
  'EMFILE', 'ENFILE',
]);

/**
 * True for failures of a dependency that pass (a server restarting, a network blip, an overloaded
 * Elasticsearch), as opposed to an event or request this code cannot handle. A request that meets
 * one answers 503 with Retry-After; a projector retries the event in place.
 */
export const isTransient = (error: unknown): boolean => {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as {
    name?: unknown; code?: unknown; meta?: { statusCode?: unknown }; errorLabels?: unknown; cause?: unknown; errorResponse?: unknown;
  };
  if (typeof e.name === 'string' && TRANSIENT_NAMES.has(e.name)) return true;
  if (typeof e.code === 'string' && TRANSIENT_CODES.has(e.code)) return true;
  const status = e.meta?.statusCode;
  if (e.name === 'ResponseError' && typeof status === 'number' && (status === 429 || status >= 500)) return true;
  if (Array.isArray(e.errorLabels) && e.errorLabels.includes('RetryableWriteError')) return true;
  // The MongoDB driver's MongoBulkWriteError (insertMany) carries the network error it met as `errorResponse`.
  if (e.name === 'MongoBulkWriteError' && e.errorResponse instanceof Error && e.errorResponse !== error && isTransient(e.errorResponse)) return true;
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
  400: M.badRequest,
  408: M.requestTimeout,
  411: 'Length required',
  413: M.bodyTooLarge,
  414: 'URI too long',
  415: 'Unsupported media type',
  417: 'Expectation failed',
  431: M.headersTooLarge,
};

/** The envelope's message for a client error status that has no message of its own. */
export const clientErrorMessage = (status: number): string => CLIENT_MESSAGES[status] ?? M.badRequest;

/** zlib's errors: a body that does not decode under its Content-Encoding. */
const isDecodeError = (error: { code?: unknown }): boolean =>
  typeof error.code === 'string' && (error.code.startsWith('Z_') || error.code.startsWith('ERR_BROTLI') || error.code.startsWith('ERR_ZSTD'));

/**
 * The one place errors become responses: DocshareErrors with their message, body-parser errors as
 * 400/413, other errors that carry a 4xx status (malformed percent-escapes, bodies that do not
 * decode) as that 4xx, a dependency that is down as 503 with Retry-After, anything else as a 500
 * with the route's failure message (and the stack in the log only).
 */
export const errorHandler = (logger: Logger): ErrorRequestHandler => (error, req, res, _next) => {
  if (error instanceof DocshareError) {
    if (error.kind === 'unavailable') {
      logger.warn({ err: error, requestId: res.locals.requestId }, 'unavailable');
      // A backend failure answers with the route's own message where the spec names one.
      return sendUnavailable(res, error.message);
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
      : isDecodeError(error as { code?: unknown }) ? M.malformedBody
        : clientErrorMessage(clientStatus);
    return sendError(res, clientStatus, message);
  }
  if (isTransient(error)) {
    logger.warn({ err: error, requestId: res.locals.requestId, method: req.method, path: req.path }, 'dependency unavailable');
    return sendUnavailable(res);
  }
  logger.error({ err: error, requestId: res.locals.requestId, method: req.method, path: req.path }, 'request failed');
  const message = typeof res.locals.failureMessage === 'string' ? res.locals.failureMessage : M.internal;
  sendError(res, 500, message);
};
