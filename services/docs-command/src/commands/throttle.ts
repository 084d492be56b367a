import { Transform, type Readable } from 'node:stream';

/*
 * The per-user byte budget of docshare's part URLs (UPLOAD_PART_BYTES_PER_SECOND): part PUTs do not
 * spend the request rate limit, so what bounds a user is bytes per second, shared by all their
 * parts in flight in this process. Each chunk books its time on the user's line (`free`: when the
 * bytes booked so far will have "passed"); a chunk booked in the future is held that long before it
 * goes on, so the request is read only as fast as the budget allows (TCP backpressure does the
 * rest). A burst of BURST_MS worth of bytes goes through unheld. Per process: with several
 * docs-command replicas a user's budget is that many times the setting (docs/ops.md).
 */

/** How far a quiet user's line may lag behind now: a burst of this many milliseconds of budget passes at once. */
const BURST_MS = 250;
/** Above this many users remembered, lines long past are forgotten (they would book from now anyway). */
const PRUNE_AT = 10_000;

export interface ByteThrottle {
  /** `body`, paced to the user's budget (the same stream when unlimited); errors of `body` pass through. */
  pace(userId: number, body: Readable): Readable;
}

export const makeByteThrottle = (bytesPerSecond: number, now: () => number = () => performance.now()): ByteThrottle => {
  const free = new Map<number, number>();
  const prune = (at: number): void => {
    if (free.size < PRUNE_AT) return;
    for (const [user, until] of free) if (until < at - BURST_MS) free.delete(user);
  };
  /** Books `bytes` on the user's line; the milliseconds to hold them. */
  const book = (userId: number, bytes: number): number => {
    const at = now();
    prune(at);
    const start = Math.max(at - BURST_MS, free.get(userId) ?? -Infinity);
    const end = start + (bytes / bytesPerSecond) * 1000;
    free.set(userId, end);
    return end - at;
  };
  return {
    pace(userId, body) {
      if (bytesPerSecond <= 0) return body;
      let held: NodeJS.Timeout | undefined;
      const paced = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          const wait = book(userId, chunk.length);
          if (wait <= 0) return done(null, chunk);
          held = setTimeout(() => done(null, chunk), wait);
        },
        destroy(error, done) {
          clearTimeout(held);
          done(error);
        },
      });
      body.on('error', (error) => paced.destroy(error));
      // The reader gave up (the put failed): stop feeding it; the request is answered and closed by the route.
      paced.on('close', () => body.unpipe(paced));
      return body.pipe(paced);
    },
  };
};
