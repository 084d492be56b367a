import type { Request, RequestHandler, Response } from 'express';
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { M } from '@docshare/contracts';
import { sendError } from '@docshare/http';

export interface RateLimitOptions {
  limiter: RateLimiterAbstract;
  points: number;
  windowSeconds: number;
  /** The key a request is counted under: the user when the token is valid, else the client IP. */
  keyOf: (res: Response, ip: string) => string;
  /**
   * Requests that only look at the budget: they carry the headers but neither spend a point nor
   * get refused (operational probes, which must not fail because a client behind the same IP is
   * over its limit).
   */
  peekOnly?: (req: Request) => boolean;
  /**
   * Requests the limit does not apply to at all: no point spent, never refused, no RateLimit
   * headers (a resumable upload's part PUTs, bounded in bytes per second by docs-command instead).
   */
  exempt?: (req: Request) => boolean;
  /** Told about each request refused with 429, with the key it was counted under (metrics). */
  onLimited?: (key: string) => void;
}

const isLimiterResult = (value: unknown): value is RateLimiterRes =>
  typeof value === 'object' && value !== null && 'msBeforeNext' in value && 'remainingPoints' in value;

/**
 * decisions §3: N requests per window per user (per IP without a valid token). Every response
 * carries RateLimit-Limit/-Remaining/-Reset and the IETF draft's RateLimit-Policy and RateLimit
 * fields; over the limit: 429, the spec's message and Retry-After.
 */
export const rateLimit = (options: RateLimitOptions): RequestHandler => {
  const { limiter, points, windowSeconds } = options;
  const policy = `"default";q=${points};w=${windowSeconds}`;
  const setHeaders = (res: Response, remaining: number, resetSeconds: number): void => {
    res.setHeader('RateLimit-Limit', String(points));
    res.setHeader('RateLimit-Remaining', String(remaining));
    res.setHeader('RateLimit-Reset', String(resetSeconds));
    res.setHeader('RateLimit-Policy', policy);
    res.setHeader('RateLimit', `"default";r=${remaining};t=${resetSeconds}`);
  };
  return async (req, res, next) => {
    if (options.exempt?.(req)) return next();
    const key = options.keyOf(res, req.ip ?? req.socket.remoteAddress ?? 'unknown');
    if (options.peekOnly?.(req)) {
      try {
        const current = await limiter.get(key);
        setHeaders(res, current ? Math.max(0, current.remainingPoints) : points,
          current ? Math.max(0, Math.ceil(current.msBeforeNext / 1000)) : windowSeconds);
      } catch {
        // A probe answers even when the limiter's store does not.
      }
      return next();
    }
    try {
      const result = await limiter.consume(key);
      setHeaders(res, Math.max(0, result.remainingPoints), Math.max(0, Math.ceil(result.msBeforeNext / 1000)));
      next();
    } catch (rejection) {
      if (!isLimiterResult(rejection)) return next(rejection);
      const reset = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      setHeaders(res, 0, reset);
      res.setHeader('Retry-After', String(reset));
      options.onLimited?.(key);
      sendError(res, 429, M.rateLimited);
    }
  };
};
