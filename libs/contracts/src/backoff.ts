/**
 * Exponential backoff: `baseMs` before the first retry (attempt 1), doubling with each attempt, at
 * most `capMs`. Every retry loop of the project waits this, or `jitteredBackoffMs`.
 */
export const backoffMs = (attempt: number, baseMs: number, capMs: number): number =>
  Math.min(capMs, baseMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 30));

/** The same, spread between half and all of it, so replicas retrying together do not stampede. */
export const jitteredBackoffMs = (attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number => {
  const ceiling = backoffMs(attempt, baseMs, capMs);
  return ceiling / 2 + random() * (ceiling / 2);
};
