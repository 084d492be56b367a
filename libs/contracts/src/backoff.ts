/**
 * Exponential backoff: `baseMs` before the first retry (attempt 1), doubling with each attempt, at
 * most `capMs`. Callers that need jitter spread it over this ceiling themselves.
 */
export const backoffMs = (attempt: number, baseMs: number, capMs: number): number =>
  Math.min(capMs, baseMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 30));
