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

interface BodyParserError { type?: string; status?: number }

/**
 * The one place errors become responses: DocshareErrors with their message, body-parser errors as
 * 400/413, anything else as a 500 with the route's failure message (and the stack in the log only).
 */
export const errorHandler = (logger: Logger): ErrorRequestHandler => (error, req, res, _next) => {
  if (error instanceof DocshareError) {
    if (error.kind === 'unavailable') {
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
  logger.error({ err: error, requestId: res.locals.requestId, method: req.method, path: req.path }, 'request failed');
  const message = typeof res.locals.failureMessage === 'string' ? res.locals.failureMessage : M.internal;
  sendError(res, 500, message);
};
