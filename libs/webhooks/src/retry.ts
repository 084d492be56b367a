/**
 * When to try a failed delivery again (issue 23: Standard Webhooks' schedule, 5 s, 5 min, 30 min,
 * 2 h, 5 h, 10 h, 14 h, 20 h, 24 h after each failure; WEBHOOK_RETRY_SCHEDULE replaces it).
 */

/** The longest a receiver's Retry-After may push a retry: beyond it the receiver is treated as any failing one. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * A Retry-After header (RFC 9110 §10.2.3) in ms from now: delta-seconds or an HTTP-date (a date
 * in the past is 0); undefined when absent or unreadable.
 */
export const parseRetryAfter = (value: string | undefined, nowMs: number): number | undefined => {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const ms = Number(text) * 1000;
    return Number.isSafeInteger(ms) ? ms : MAX_RETRY_AFTER_MS;
  }
  // An HTTP-date always names its weekday and month in letters; Date.parse alone accepts bare numbers too.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
};

/**
 * The wait before the next attempt after `failedAttempts` failures (1-based: after the first
 * failure, `scheduleMs[0]`), or null when the schedule is spent (the task becomes a dead letter).
 * The delay is jittered ±10 % so endpoints that failed together do not retry together; a
 * Retry-After longer than it wins, capped at 24 h.
 */
export const nextRetryDelay = (
  scheduleMs: readonly number[], failedAttempts: number, retryAfterMs?: number, random: () => number = Math.random,
): number | null => {
  if (!Number.isInteger(failedAttempts) || failedAttempts < 1) throw new RangeError(`failedAttempts must be a positive integer, got ${failedAttempts}`);
  const base = scheduleMs[failedAttempts - 1];
  if (base === undefined) return null;
  const jittered = Math.round(base * (0.9 + 0.2 * random()));
  const asked = retryAfterMs === undefined ? 0 : Math.min(Math.max(0, retryAfterMs), MAX_RETRY_AFTER_MS);
  return Math.max(jittered, asked);
};
