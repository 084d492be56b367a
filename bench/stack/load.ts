/**
 * The load generator of `npm run bench:stack`: closed-loop clients (each sends its next request
 * when the previous one answered), a paced open-loop writer, latency percentiles, and a small
 * keep-alive HTTP client on node:http (cheaper per request than fetch, so the client costs the
 * 2-core machine less of what it measures).
 */
import http from 'node:http';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The p-th percentile (0..100) of unsorted samples; NaN when there are none. */
export const percentile = (samples: readonly number[], p: number): number => {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};

export interface LoadResult {
  ok: number;
  errors: number;
  seconds: number;
  /** ok per second over the whole run */
  rate: number;
  /** latency (ms) of every successful operation */
  latencies: number[];
  /** when each successful operation completed, ms since the start */
  completions: number[];
  /** error message → count (the first 200 characters of each) */
  errorKinds: Record<string, number>;
}

export const summarizeErrors = (kinds: Record<string, number>, top = 3): string =>
  Object.entries(kinds).sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, n]) => `${n}× ${k}`).join('; ');

export interface ClosedLoopOptions {
  clients: number;
  /** stop starting new operations after this many seconds... */
  seconds?: number;
  /** ...or after this many operations (whichever comes first) */
  count?: number;
  /** one operation; throws on failure */
  op: (client: number, n: number) => Promise<void>;
  /** called every ~10 s with the progress so far */
  progress?: (done: number, errors: number, elapsedSeconds: number) => void;
}

/** Runs `clients` loops, each calling `op` back to back, until the time or the count is used up. */
export const closedLoop = async (options: ClosedLoopOptions): Promise<LoadResult> => {
  const { clients, seconds = Infinity, count = Infinity, op, progress } = options;
  const latencies: number[] = [];
  const completions: number[] = [];
  const errorKinds: Record<string, number> = {};
  let errors = 0;
  let next = 0;
  const began = performance.now();
  const deadline = began + seconds * 1000;
  const ticker = progress ? setInterval(() => progress(latencies.length, errors, (performance.now() - began) / 1000), 10_000) : undefined;
  try {
    await Promise.all(Array.from({ length: clients }, async (_, client) => {
      while (next < count && performance.now() < deadline) {
        const n = next++;
        const t0 = performance.now();
        try {
          await op(client, n);
          const t1 = performance.now();
          latencies.push(t1 - t0);
          completions.push(t1 - began);
        } catch (error) {
          errors += 1;
          const key = (error instanceof Error ? error.message : String(error)).slice(0, 200);
          errorKinds[key] = (errorKinds[key] ?? 0) + 1;
          // An error storm must not spin: a short pause before this client's next try.
          await sleep(20);
        }
      }
    }));
  } finally {
    if (ticker) clearInterval(ticker);
  }
  const elapsed = (performance.now() - began) / 1000;
  return { ok: latencies.length, errors, seconds: elapsed, rate: latencies.length / elapsed, latencies, completions, errorKinds };
};

/**
 * Starts `op` at `perSecond` (open loop, so a slow system does not slow the offered load), with at
 * most `maxInFlight` running; returns a stop function resolving with what was done.
 */
export const pacedLoad = (perSecond: number, maxInFlight: number, op: (n: number) => Promise<void>): (() => Promise<LoadResult>) => {
  const latencies: number[] = [];
  const completions: number[] = [];
  const errorKinds: Record<string, number> = {};
  let errors = 0;
  let started = 0;
  let skipped = 0;
  const inFlight = new Set<Promise<void>>();
  const began = performance.now();
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - began) / 1000) * perSecond);
    while (started + skipped < due) {
      if (inFlight.size >= maxInFlight) {
        skipped += 1;
        continue;
      }
      const n = started++;
      const t0 = performance.now();
      const p = op(n).then(() => {
        const t1 = performance.now();
        latencies.push(t1 - t0);
        completions.push(t1 - began);
      }, (error: unknown) => {
        errors += 1;
        const key = (error instanceof Error ? error.message : String(error)).slice(0, 200);
        errorKinds[key] = (errorKinds[key] ?? 0) + 1;
      }).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  }, 5);
  return async () => {
    clearInterval(timer);
    const elapsed = (performance.now() - began) / 1000;
    await Promise.all(inFlight);
    if (skipped > 0) errorKinds[`not started: ${maxInFlight} already in flight`] = skipped;
    return { ok: latencies.length, errors, seconds: elapsed, rate: latencies.length / elapsed, latencies, completions, errorKinds };
  };
};

/** Completions per window of `windowSeconds` (the last window may be partial: its rate uses its real length). */
export const windowRates = (completions: readonly number[], totalSeconds: number, windowSeconds: number): number[] => {
  const n = Math.max(1, Math.ceil(totalSeconds / windowSeconds - 1e-9));
  const counts = new Array<number>(n).fill(0);
  for (const t of completions) counts[Math.min(n - 1, Math.floor(t / 1000 / windowSeconds))]! += 1;
  return counts.map((c, i) => c / Math.max(1e-3, Math.min(windowSeconds, totalSeconds - i * windowSeconds)));
};

// ---- HTTP client ------------------------------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

export interface Answer { status: number; text: string }

/** One HTTP request on a keep-alive connection; resolves with any status, rejects on a network error or timeout. */
export const request = (
  method: string, url: string, headers: Record<string, string> = {}, body?: string | Buffer, timeoutMs = 60_000,
): Promise<Answer> => new Promise((resolve, reject) => {
  const req = http.request(url, {
    method, agent, timeout: timeoutMs,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }) },
  }, (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.once('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    res.once('error', reject);
  });
  req.once('timeout', () => req.destroy(new Error(`${method} ${new URL(url).pathname}: no answer within ${timeoutMs} ms`)));
  req.once('error', reject);
  req.end(body);
});

/** Throws unless the answer is 2xx, naming the route, the status and the body's start. */
export const expectOk = (answer: Answer, what: string): Answer => {
  if (answer.status < 200 || answer.status >= 300) throw new Error(`${what}: ${answer.status} ${answer.text.slice(0, 160)}`);
  return answer;
};

/** Runs `fn` over 0..count-1 with at most `limit` at once. */
export const mapLimit = async <T>(count: number, limit: number, fn: (i: number) => Promise<T>): Promise<T[]> => {
  const out = new Array<T>(count);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, count) }, async () => {
    while (next < count) {
      const i = next++;
      out[i] = await fn(i);
    }
  }));
  return out;
};
