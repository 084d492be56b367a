/**
 * The view measures of `npm run bench` and `npm run bench:stack` (issue 21's goals): one hot file
 * against the same load spread over many files, side by side in one run; how long an
 * acknowledged view takes to be counted by the statistics; and the UTC days a 366-day
 * `api-daily` covers. The runners take the requests as functions, so the embedded and the
 * distributed bench share them; the arithmetic is pure and unit-tested (test/views.test.ts).
 */
import { sleep } from '@docshare/contracts';
import { closedLoop, type Answer, type LoadResult } from './load.ts';

/** What one read of a count answered, and when (performance.now() at the answer). */
export interface Observation { at: number; count: number }

export interface CountedLags {
  /** ms from each acknowledged view to the first read that counted it (0 when a read answered before the ack already did) */
  lags: number[];
  /** acknowledged views no read ever counted */
  unseen: number;
}

/**
 * Lag from each acknowledged view to the first read whose count includes it. A counter does not
 * say which views it holds, so views are ranked by the time they were acknowledged: the r-th
 * (from 1) is counted once a read answers `baseline + r` or more. Exact when views are counted in
 * the order they were acknowledged (they are appended to one log before the answer), and never
 * an underestimate otherwise by more than the reordering of views acknowledged within the same
 * poll. Observations may come from several pollers, in any order.
 */
export const countedLags = (acks: readonly number[], baseline: number, observations: readonly Observation[]): CountedLags => {
  const sortedAcks = [...acks].sort((a, b) => a - b);
  const seen = [...observations].sort((a, b) => a.at - b.at);
  const lags: number[] = [];
  let o = 0;
  for (let r = 1; r <= sortedAcks.length; r++) {
    // The count needed grows with r: the first read that shows it is never before the previous one's.
    while (o < seen.length && seen[o]!.count < baseline + r) o++;
    if (o === seen.length) return { lags, unseen: sortedAcks.length - r + 1 };
    lags.push(Math.max(0, seen[o]!.at - sortedAcks[r - 1]!));
  }
  return { lags, unseen: 0 };
};

const DAY_MS = 86_400_000;

/** The `n` UTC days ending with `now`'s, ascending, as 'YYYY-MM-DD' (what a range `from`..`to` of n days covers). */
export const utcDaysEnding = (now: Date, n: number): string[] => {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: n }, (_, i) => new Date(today - (n - 1 - i) * DAY_MS).toISOString().slice(0, 10));
};

/** A server error answer (5xx): the goal is none under a hot file. */
export const isServerError = (answer: Answer): boolean => answer.status >= 500;

export interface ViewLoad extends LoadResult {
  /** answers with a 5xx status (also counted in `errors`) */
  serverErrors: number;
}

/** Adds one part of a load to another (rates over the summed time). */
const combine = (a: ViewLoad | undefined, b: ViewLoad): ViewLoad => {
  if (!a) return b;
  const errorKinds = { ...a.errorKinds };
  for (const [k, n] of Object.entries(b.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + n;
  const ok = a.ok + b.ok;
  const seconds = a.seconds + b.seconds;
  return {
    ok, errors: a.errors + b.errors, seconds, rate: ok / seconds, latencies: [...a.latencies, ...b.latencies],
    completions: [...a.completions, ...b.completions.map((c) => c + a.seconds * 1000)], errorKinds, serverErrors: a.serverErrors + b.serverErrors,
  };
};

export interface HotVsSpreadOptions {
  /** requests in flight (the same for both) */
  clients: number;
  /** views of each kind in all, split over `rounds` */
  count: number;
  /** hot and spread alternate this many times (a drift of the machine falls on both); default 2 */
  rounds?: number;
  /** views before the measure, half of each kind (default count / 10) */
  warmup?: number;
  /** the n-th view of the hot file... */
  hot: (n: number) => Promise<Answer>;
  /** ...and of the spread load (its files by n) */
  spread: (n: number) => Promise<Answer>;
}

/**
 * One hot file against the same number of views spread over many files, with the same clients,
 * alternating in rounds. A view that is not answered 2xx is an error; 5xx answers are counted
 * apart.
 */
export const hotVsSpread = async (options: HotVsSpreadOptions): Promise<{ hot: ViewLoad; spread: ViewLoad }> => {
  const { clients, count, rounds = 2, warmup = Math.round(count / 10) } = options;
  const run = async (send: (n: number) => Promise<Answer>, views: number): Promise<ViewLoad> => {
    let serverErrors = 0;
    const result = await closedLoop({
      clients, count: views,
      op: async (_client, n) => {
        const answer = await send(n);
        if (isServerError(answer)) serverErrors += 1;
        if (answer.status < 200 || answer.status >= 300) throw new Error(`view: ${answer.status} ${answer.text.slice(0, 120)}`);
      },
    });
    return { ...result, serverErrors };
  };
  await run(options.hot, Math.ceil(warmup / 2));
  await run(options.spread, Math.ceil(warmup / 2));
  let hot: ViewLoad | undefined;
  let spread: ViewLoad | undefined;
  const perRound = Math.ceil(count / rounds);
  for (let round = 0; round < rounds; round++) {
    const views = Math.min(perRound, count - round * perRound);
    if (views <= 0) break;
    hot = combine(hot, await run(options.hot, views));
    spread = combine(spread, await run(options.spread, views));
  }
  if (!hot || !spread) throw new Error('hotVsSpread: no views to send');
  return { hot, spread };
};

export interface AckedToCountedOptions {
  /** views per second offered (open loop) */
  rate: number;
  seconds: number;
  /** most views in flight (beyond it a view is not started, and says so) */
  maxInFlight?: number;
  /** one view; resolves when it is acknowledged, throws when it is not */
  view: (n: number) => Promise<void>;
  /** each read of a count (api-stats total_views, api-daily views, ...) by name */
  reads: Record<string, () => Promise<number>>;
  /** pause between one poller's reads (ms) */
  pollMs: number;
  /** longest wait after the last acknowledgement for the reads to count every view (ms) */
  timeoutMs: number;
}

export interface AckedToCounted {
  /** views acknowledged */
  acked: number;
  /** views that failed or were not started */
  failed: number;
  /** rate of acknowledged views */
  rate: number;
  errorKinds: Record<string, number>;
  /** per read that gave its baseline: the baseline and the lag of each view */
  counted: Record<string, CountedLags & { baseline: number; polls: number }>;
}

/**
 * Views at a steady rate while one poller per read asks for its count back to back; once the
 * views are done, the pollers go on until each counts every acknowledged view (or `timeoutMs`).
 * Nothing else may view the counted files meanwhile: the baselines are read before the first view.
 */
export const ackedToCounted = async (options: AckedToCountedOptions): Promise<AckedToCounted> => {
  const errorKinds: Record<string, number> = {};
  // A read that cannot give its baseline (a route this build does not have) is left out, and said so.
  const baselines: Record<string, number> = {};
  await Promise.all(Object.entries(options.reads).map(async ([name, read]) => {
    try {
      baselines[name] = await read();
    } catch (error) {
      errorKinds[`read ${name}: baseline: ${(error instanceof Error ? error.message : String(error)).slice(0, 160)}`] = 1;
    }
  }));
  const names = Object.keys(options.reads).filter((name) => baselines[name] !== undefined);
  const observations: Record<string, Observation[]> = Object.fromEntries(names.map((name) => [name, []]));
  const acks: number[] = [];
  let viewsDone = false;
  let deadline = Infinity;
  const pollers = names.map(async (name) => {
    const seen = observations[name]!;
    for (;;) {
      let count = -1;
      try {
        count = await options.reads[name]!();
        seen.push({ at: performance.now(), count });
      } catch (error) {
        // A failed read is noted and the poller goes on (a read error must not end the measure).
        const key = `read ${name}: ${(error instanceof Error ? error.message : String(error)).slice(0, 160)}`;
        errorKinds[key] = (errorKinds[key] ?? 0) + 1;
      }
      if (viewsDone && (count >= baselines[name]! + acks.length || performance.now() > deadline)) return;
      await sleep(options.pollMs);
    }
  });
  let started = 0;
  let skipped = 0;
  const inFlight = new Set<Promise<void>>();
  const maxInFlight = options.maxInFlight ?? 256;
  const total = Math.round(options.rate * options.seconds);
  const began = performance.now();
  // Open loop: each view starts at its time, whether or not the earlier ones were answered.
  while (started + skipped < total) {
    const due = Math.min(total, Math.floor(((performance.now() - began) / 1000) * options.rate) + 1);
    while (started + skipped < due) {
      if (inFlight.size >= maxInFlight) {
        skipped += 1;
        const key = `not started: ${maxInFlight} already in flight`;
        errorKinds[key] = (errorKinds[key] ?? 0) + 1;
        continue;
      }
      const p = options.view(started++).then(() => { acks.push(performance.now()); }, (error: unknown) => {
        const key = (error instanceof Error ? error.message : String(error)).slice(0, 200);
        errorKinds[key] = (errorKinds[key] ?? 0) + 1;
      }).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await sleep(Math.max(1, Math.min(5, 1000 / options.rate)));
  }
  await Promise.all(inFlight);
  const seconds = (performance.now() - began) / 1000;
  deadline = performance.now() + options.timeoutMs;
  viewsDone = true;
  await Promise.all(pollers);
  return {
    acked: acks.length, failed: total - acks.length, rate: acks.length / seconds, errorKinds,
    counted: Object.fromEntries(names.map((name) => [name, {
      ...countedLags(acks, baselines[name]!, observations[name]!), baseline: baselines[name]!, polls: observations[name]!.length,
    }])),
  };
};
