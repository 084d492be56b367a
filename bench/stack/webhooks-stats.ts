/**
 * The pure part of bench:stack's webhooks scenario (issue 23's three goals; bench/stack/webhooks.ts
 * runs it): what a delivery the receiver got says (its endpoint, its `webhook-id`, the event's
 * time from the payload's `timestamp`, the bench's tag in the comment), the first arrival of each
 * message (a retry or a crash re-send carries the same `webhook-id`: only the first counts for
 * "event recorded → first delivery attempt"), percentiles, and the trend of RSS samples.
 */

/** How a receiver path answers: `ok` 200 at once, `hang` holds the request while the hang lasts, `fail` 500. */
export type ReceiverMode = 'ok' | 'hang' | 'fail';
export const RECEIVER_MODES: readonly ReceiverMode[] = ['ok', 'hang', 'fail'];

/** The path of an endpoint on the bench's receiver: `/<mode>/<index>`. */
export const receiverPath = (mode: ReceiverMode, index: number): string => `/${mode}/${index}`;

/** The mode and index of a receiver path, or null for another path. */
export const parseReceiverPath = (path: string): { mode: ReceiverMode; index: number } | null => {
  const match = /^\/(ok|hang|fail)\/(\d{1,9})$/.exec(path);
  return match ? { mode: match[1] as ReceiverMode, index: Number(match[2]) } : null;
};

/**
 * The tag the bench writes into each comment it posts (`whb:<phase>:<seq>`), so a delivery is
 * matched to the request that made it: a phase's missing deliveries are counted, and a delivery
 * of an earlier phase arriving late is not taken for one of this phase.
 */
export const commentTag = (phase: string, seq: number): string => `whb:${phase}:${seq}`;
const TAG = /\bwhb:([a-z0-9]+):(\d+)\b/;

/** What one request to the receiver carried. */
export interface Delivery {
  mode: ReceiverMode;
  /** the endpoint's index among those of its mode */
  index: number;
  /** `webhook-id` */
  messageId: string;
  /** the payload's `type` */
  type: string;
  /** the event's time (the payload's `timestamp`), epoch ms */
  eventMs: number;
  /** when the request reached the receiver, epoch ms */
  arrivalMs: number;
  /** the bench's tag in a comment, null when there is none (another event type, a test message) */
  phase: string | null;
  seq: number | null;
}

/**
 * Reads one request the receiver got; a string says why it is not a delivery (a bad path, no
 * `webhook-id`, a body that is not the Standard Webhooks `{type, timestamp, data}`).
 */
export const parseDelivery = (path: string, messageId: string | undefined, body: string, arrivalMs: number): Delivery | string => {
  const where = parseReceiverPath(path);
  if (!where) return `unknown path ${path.slice(0, 80)}`;
  if (!messageId) return 'no webhook-id header';
  let payload: unknown;
  try {
    payload = JSON.parse(body);
  } catch {
    return 'body is not JSON';
  }
  if (typeof payload !== 'object' || payload === null) return 'body is not an object';
  const { type, timestamp, data } = payload as { type?: unknown; timestamp?: unknown; data?: unknown };
  if (typeof type !== 'string' || typeof timestamp !== 'string') return 'body without type or timestamp';
  const eventMs = Date.parse(timestamp);
  if (!Number.isFinite(eventMs)) return `timestamp ${timestamp.slice(0, 40)} is not a time`;
  const comment = typeof data === 'object' && data !== null ? (data as { comment?: unknown }).comment : undefined;
  const tag = typeof comment === 'string' ? TAG.exec(comment) : null;
  return {
    ...where, messageId, type, eventMs, arrivalMs,
    phase: tag ? tag[1]! : null, seq: tag ? Number(tag[2]) : null,
  };
};

/**
 * The first arrival of each message of one phase, and how many arrived again (retries, re-sends).
 * Keeps a few numbers per message: a phase of 200 events/s for a minute is 12,000 of them.
 */
export class FirstArrivals {
  readonly phase: string;
  private readonly first = new Map<string, { mode: ReceiverMode; index: number; seq: number; latencyMs: number }>();
  private readonly seqs = new Set<string>();
  repeats = 0;
  /** deliveries of another phase (or untagged) that came meanwhile */
  others = 0;

  constructor(phase: string) { this.phase = phase; }

  /** Counts a delivery; returns true when it is this phase's first arrival of its message. */
  add(delivery: Delivery): boolean {
    if (delivery.phase !== this.phase || delivery.seq === null) {
      this.others += 1;
      return false;
    }
    if (this.first.has(delivery.messageId)) {
      this.repeats += 1;
      return false;
    }
    this.first.set(delivery.messageId, { mode: delivery.mode, index: delivery.index, seq: delivery.seq, latencyMs: delivery.arrivalMs - delivery.eventMs });
    this.seqs.add(`${delivery.mode}:${delivery.seq}`);
    return true;
  }

  /** Messages whose first arrival came, of endpoints of `mode`. */
  count(mode: ReceiverMode): number {
    let n = 0;
    for (const f of this.first.values()) if (f.mode === mode) n += 1;
    return n;
  }

  /** Whether the event the bench tagged `seq` for an endpoint of `mode` has arrived. */
  has(mode: ReceiverMode, seq: number): boolean { return this.seqs.has(`${mode}:${seq}`); }

  /** Event time → first arrival (ms) of every message to endpoints of `mode`. */
  latencies(mode: ReceiverMode): number[] {
    const out: number[] = [];
    for (const f of this.first.values()) if (f.mode === mode) out.push(f.latencyMs);
    return out;
  }
}

/** The tags `sent` (seqs) that have no first arrival yet for endpoints of `mode`. */
export const missingSeqs = (arrivals: FirstArrivals, mode: ReceiverMode, sent: Iterable<number>): number[] => {
  const out: number[] = [];
  for (const seq of sent) if (!arrivals.has(mode, seq)) out.push(seq);
  return out;
};

/**
 * Nearest-rank percentiles of unsorted samples (the same definition as load.ts's `percentile`),
 * sorted once for all of `ps`; NaN for each when there are no samples.
 */
export const percentiles = (samples: readonly number[], ps: readonly number[]): number[] => {
  if (samples.length === 0) return ps.map(() => Number.NaN);
  const sorted = Float64Array.from(samples).sort();
  return ps.map((p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!);
};

export interface LatencySummary { count: number; p50: number; p99: number; max: number }

export const summarizeLatencies = (samples: readonly number[]): LatencySummary => {
  const [p50, p99, max] = percentiles(samples, [50, 99, 100]) as [number, number, number];
  return { count: samples.length, p50, p99, max };
};

/** One RSS sample: seconds since the soak began, MiB. */
export interface RssSample { t: number; mib: number }

export interface RssTrend {
  samples: number;
  startMiB: number;
  endMiB: number;
  maxMiB: number;
  /** least-squares slope over all samples, MiB per hour */
  slopeMiBPerHour: number;
  /** the same over the second half (warm-up, caches filling and the heap's first growth left out) */
  secondHalfSlopeMiBPerHour: number;
}

/** Least-squares slope of mib over t (MiB per second); NaN under two distinct times. */
const slope = (samples: readonly RssSample[]): number => {
  const n = samples.length;
  if (n < 2) return Number.NaN;
  const meanT = samples.reduce((a, s) => a + s.t, 0) / n;
  const meanM = samples.reduce((a, s) => a + s.mib, 0) / n;
  let num = 0;
  let den = 0;
  for (const s of samples) {
    num += (s.t - meanT) * (s.mib - meanM);
    den += (s.t - meanT) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
};

/** Start, end, max and the slopes of a soak's RSS samples (those that are not numbers, a process gone at that moment, left out). */
export const rssTrend = (all: readonly RssSample[]): RssTrend => {
  const samples = all.filter((s) => Number.isFinite(s.mib) && Number.isFinite(s.t));
  const half = samples.filter((s) => s.t >= (samples.at(-1)?.t ?? 0) / 2);
  return {
    samples: samples.length,
    startMiB: samples[0]?.mib ?? Number.NaN,
    endMiB: samples.at(-1)?.mib ?? Number.NaN,
    maxMiB: samples.length > 0 ? Math.max(...samples.map((s) => s.mib)) : Number.NaN,
    slopeMiBPerHour: slope(samples) * 3600,
    secondHalfSlopeMiBPerHour: slope(half) * 3600,
  };
};

