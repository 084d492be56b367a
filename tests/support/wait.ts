// Polling helpers: reads may lag writes (projections), so state checks retry until they hold.

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

/**
 * Run `fn` until it neither throws nor returns `false`; then return its value.
 * On timeout rethrow the last assertion error (so the failure shows expected vs got).
 */
export async function waitFor<T>(fn: () => Promise<T | false> | T | false, opts: WaitOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const intervalMs = opts.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = new Error('condition was false');
  for (;;) {
    try {
      const v = await fn();
      if (v !== false) return v;
      lastError = new Error('condition was false');
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) throw lastError;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Alias that reads well with assertion blocks. */
export const eventually = waitFor;
