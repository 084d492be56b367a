/*
 * The embedded idempotency store's log (libs/idempotency-store: records {k, f, a, x}, `a` a stored
 * HTTP answer, `x` when it expires) keeps expired answers on disk until enough of the file is dead
 * for a compaction. Those answers are plain HTTP bodies (an upload's answer names its file), so
 * the migration drops the expired ones; the live ones (at most a day old) expire and leave with
 * the store's next compactions, as erasure's `removeScope` takes a user's at once.
 */

const expiresAt = (payload: unknown): number | null => {
  const x = typeof payload === 'object' && payload !== null ? (payload as { x?: unknown }).x : undefined;
  return typeof x === 'number' ? x : null;
};

/** A `rewrite` for rewriteLog over idempotency.log: drops the answers expired at `now` (ms), keeps the rest as they are. */
export const dropExpiredAnswers = (now: number) => (payloads: readonly unknown[]): Promise<unknown[]> =>
  Promise.resolve(payloads.map((payload) => {
    const x = expiresAt(payload);
    return x !== null && x <= now ? null : undefined;
  }));
