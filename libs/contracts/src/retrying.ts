import { jitteredBackoffMs } from './backoff.ts';

/**
 * Waits `ms`, or less when `signal` aborts (it then resolves, never rejects: the caller checks
 * why it woke). Like any awaited timer it keeps the process alive until it ends: a program that
 * awaits a sleep at its top level must not exit under it (Node's exit 13, "unsettled top-level
 * await"). A loop that must not hold a stopping process passes a signal and aborts it on stop.
 */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> => new Promise((resolve) => {
  if (signal?.aborted) return resolve();
  const done = (): void => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', done);
    resolve();
  };
  const timer = setTimeout(done, Math.max(0, ms));
  signal?.addEventListener('abort', done, { once: true });
});

/**
 * A sleep another part of the program can cut short: `wake()` ends the sleep in progress at once,
 * or, when nothing sleeps, the next one (a wake is never lost between a check and a sleep). A
 * loop that polls and is also told when there is work (the outbox relay, a consumer) sleeps on it.
 */
export interface WakeableSleep {
  sleep(ms: number): Promise<void>;
  wake(): void;
}

export const makeWakeableSleep = (): WakeableSleep => {
  let pending = false;
  let current: (() => void) | null = null;
  return {
    sleep(ms) {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          current = null;
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, ms));
        current = done;
      });
    },
    wake() {
      if (current) current();
      else pending = true;
    },
  };
};

export interface RetryOptions {
  /** Attempts in all, the first included; default: until it succeeds (or `stopped`). */
  attempts?: number;
  /** The first wait, doubled after each failure up to `capMs` and jittered (backoff.ts). */
  baseMs: number;
  capMs: number;
  /** Whether a failure is worth another attempt; default: every one. False rethrows it at once. */
  retryIf?: (error: unknown, attempt: number) => boolean;
  /** Told before each wait (a log line, a metric). */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
  /** The wait after a failure, when the failure says how long (a Retry-After); default: backoff. */
  delayMs?: (error: unknown, attempt: number) => number | undefined;
  /** Stops the retries: the wait ends at once and the last failure is thrown. */
  signal?: AbortSignal;
  random?: () => number;
}

/**
 * Calls `fn` (with the attempt's number, from 1) until it resolves, waiting a jittered, growing
 * backoff between failures; throws the last failure once `attempts` are spent, `retryIf` declines
 * it or `signal` aborts. The one retry loop: nothing else in the product writes its own.
 */
export const retrying = async <T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      const last = options.attempts !== undefined && attempt >= options.attempts;
      if (last || options.signal?.aborted || (options.retryIf && !options.retryIf(error, attempt))) throw error;
      const delay = options.delayMs?.(error, attempt) ?? jitteredBackoffMs(attempt, options.baseMs, options.capMs, options.random);
      options.onRetry?.(error, attempt, delay);
      await sleep(delay, options.signal);
      if (options.signal?.aborted) throw error;
    }
  }
};
