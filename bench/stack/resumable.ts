/**
 * bench:stack's resumable-upload phase (issue 22's goals, measured in one run): a big file sent
 * by the SDK (`@docshare/client`'s `upload()`, which goes by the resumable protocol: POST
 * api-uploads, the parts PUT in parallel to the URLs the session names, POST complete) against a
 * docs-command with BLOB_PUBLIC_URL set (presigned MinIO part URLs), beside a direct MinIO
 * multipart put of the same bytes with minio-js at the same part size and parallelism (the
 * ceiling), and:
 *
 *   - the CPU the gateway and docs-command spend meanwhile (their process trees, /proc);
 *   - `complete`'s latency over every upload of the phase;
 *   - the rate-limit points one whole upload spends (RateLimit-Remaining before and after, and
 *     the answers that carried the header at all: the part PUTs must not);
 *   - an upload whose signal is aborted once 40% of its bytes are confirmed (a client killed),
 *     then taken up by `upload(..., {resume: true})` from the session the SDK kept on disk: the
 *     bytes sent again beyond those the server was missing.
 *
 * The SDK is watched through the `fetch` it is given (FetchMeter): every answer counted, those
 * carrying RateLimit-Remaining, `complete` timed, and each part PUT's streamed bytes checked
 * against its Content-Length and the layout on a 200. The pure arithmetic (part layout, part
 * URLs, resume accounting, the rate-limit drop) and the meter are unit-tested in
 * test/resumable.test.ts; the bench (bench/stack.ts) runs the phase.
 */
import { randomBytes } from 'node:crypto';
import { open } from 'node:fs/promises';
import type { Client as MinioClient } from 'minio';
import { createClient, type FetchLike, type ResumableEvent, type UploadInput } from '@docshare/client';
import { percentile } from './load.ts';
import { fmt, type Row } from './report.ts';

const MiB = 1024 * 1024;

// ---- pure arithmetic -----------------------------------------------------------------------------

export interface PartSpan { partNumber: number; start: number; size: number }

/** The parts of a file of `size` bytes cut in `partSize` parts (every part full but the last), numbered from 1. */
export const partPlan = (size: number, partSize: number): PartSpan[] => {
  if (!Number.isSafeInteger(size) || size < 1) throw new Error(`size ${size}: not a positive integer`);
  if (!Number.isSafeInteger(partSize) || partSize < 1) throw new Error(`part size ${partSize}: not a positive integer`);
  const out: PartSpan[] = [];
  for (let start = 0, n = 1; start < size; start += partSize, n += 1) out.push({ partNumber: n, start, size: Math.min(partSize, size - start) });
  return out;
};

export interface ResumeAccount {
  /** bytes of the parts the server did not hold when the upload was taken up */
  missing: number;
  /** bytes the resumed upload sent */
  sent: number;
  /** sent beyond missing: bytes the server already held, sent again (the goal: at most one part) */
  extra: number;
  /** extra in parts of `partSize` */
  extraParts: number;
}

/**
 * What a resumed upload sent beyond what was missing: `received` are the part numbers the
 * session's GET named when the upload was taken up, `sentParts` those the resumed upload PUT
 * (each counted once per PUT, so a part retried counts twice).
 */
export const resumeAccount = (size: number, partSize: number, received: readonly number[], sentParts: readonly number[]): ResumeAccount => {
  const plan = partPlan(size, partSize);
  const sizeOf = (n: number): number => {
    const part = plan[n - 1];
    if (!part) throw new Error(`part ${n} is not one of the ${plan.length} parts`);
    return part.size;
  };
  const held = new Set(received);
  const missing = plan.filter((p) => !held.has(p.partNumber)).reduce((a, p) => a + p.size, 0);
  const sent = sentParts.reduce((a, n) => a + sizeOf(n), 0);
  const extra = Math.max(0, sent - missing);
  return { missing, sent, extra, extraParts: extra / partSize };
};

/** The rate-limit headers of one answer (RateLimit-Remaining and -Reset); null when it carries none. */
export const rateLimitOf = (headers: Headers): { remaining: number; resetSeconds: number } | null => {
  const remaining = headers.get('ratelimit-remaining');
  if (remaining === null || remaining === '') return null;
  const reset = headers.get('ratelimit-reset');
  const n = Number(remaining);
  return Number.isFinite(n) ? { remaining: n, resetSeconds: reset === null ? NaN : Number(reset) } : null;
};

/**
 * Points an upload spent between two probes of the budget (each probe a rate-limited request):
 * before − after − the second probe's own point. NaN when the window may have rolled over
 * between them (the time between exceeds what was left of the window at the first), where the
 * difference means nothing.
 */
export const pointsSpent = (
  before: { remaining: number; resetSeconds: number }, after: { remaining: number }, secondsBetween: number,
): number => {
  if (!(secondsBetween < before.resetSeconds) || after.remaining > before.remaining) return NaN;
  return before.remaining - after.remaining - 1;
};

// ---- what the SDK sends and gets: a wrapping fetch ------------------------------------------------

/** The part a part URL names: a presigned S3 URL's `partNumber=N`, docshare's `/parts/N`; undefined for any other URL. */
export const partNumberOf = (url: string): number | undefined => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const query = parsed.searchParams.get('partNumber');
  const text = query ?? /\/parts\/(\d+)$/.exec(parsed.pathname)?.[1];
  return text !== undefined && /^[1-9]\d*$/.test(text) ? Number(text) : undefined;
};

/** One part PUT the SDK made: the bytes its headers declared, those it streamed, and the answer's status (null: none came). */
export interface PutRecord { partNumber: number; declared: number; streamed: number; status: number | null }

/** What the SDK's requests did over one span (an upload, a kill, a resume). */
export interface MeterSpan {
  /** answers of every request (control calls and part PUTs) */
  answers: number;
  /** answers that carried RateLimit-Remaining (the part PUTs must not) */
  limited: number;
  /** every RateLimit-Remaining seen, in order */
  remaining: number[];
  puts: PutRecord[];
  /** time to the answer of each POST .../complete */
  completeMs: number[];
  /** bytes of the part PUTs answered 200 */
  confirmed: number;
  /** 200 part answers whose bytes were not the layout's (streamed, declared and expected differ) */
  mismatches: string[];
  /** told after each 200 part answer, with `confirmed` (the kill at 40% hangs here) */
  onConfirmed?: (confirmed: number) => void;
}

const newSpan = (): MeterSpan => ({ answers: 0, limited: 0, remaining: [], puts: [], completeMs: [], confirmed: 0, mismatches: [] });

/**
 * A fetch for `createClient({fetch})` that watches the SDK: it counts every answer and those
 * carrying the rate limit's headers, times `complete`, and for each part PUT counts the bytes
 * the SDK's body actually streamed (a counting TransformStream) and checks, on a 200, that they
 * are the part's size in the session's layout (`layout`, set once the session is known).
 */
export class FetchMeter {
  span: MeterSpan = newSpan();
  layout: { size: number; partSize: number } | undefined;
  readonly fetch: FetchLike;
  constructor(inner: FetchLike = fetch) {
    this.fetch = async (input, init) => await this.send(inner, input, init);
  }

  /** Starts a new span (the previous one is the caller's to keep). */
  begin(): MeterSpan {
    this.span = newSpan();
    return this.span;
  }

  private async send(inner: FetchLike, input: string | URL, init: RequestInit | undefined): Promise<Response> {
    const span = this.span;
    const url = String(input);
    const method = (init?.method ?? 'GET').toUpperCase();
    const partNumber = method === 'PUT' ? partNumberOf(url) : undefined;
    let sent = init;
    let record: PutRecord | undefined;
    if (partNumber !== undefined) {
      const put: PutRecord = { partNumber, declared: Number(new Headers(init?.headers).get('content-length') ?? NaN), streamed: 0, status: null };
      record = put;
      span.puts.push(put);
      const body = init?.body;
      if (body instanceof ReadableStream) {
        sent = {
          ...init,
          body: (body as ReadableStream<Uint8Array>).pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, out) {
              put.streamed += chunk.byteLength;
              out.enqueue(chunk);
            },
          })),
        };
      } else if (body instanceof Uint8Array) {
        put.streamed = body.byteLength;
      }
    }
    const isComplete = method === 'POST' && /\/complete$/.test(new URL(url).pathname);
    const t0 = performance.now();
    const res = await inner(input, sent);
    const ms = performance.now() - t0;
    span.answers += 1;
    const limit = rateLimitOf(res.headers);
    if (limit) {
      span.limited += 1;
      span.remaining.push(limit.remaining);
    }
    if (isComplete && res.ok) span.completeMs.push(ms);
    if (record) {
      record.status = res.status;
      if (res.status === 200) {
        const expected = this.layout ? Math.max(0, Math.min(this.layout.partSize, this.layout.size - (record.partNumber - 1) * this.layout.partSize)) : NaN;
        if (record.streamed !== expected || record.declared !== expected) {
          span.mismatches.push(`part ${record.partNumber}: streamed ${record.streamed}, declared ${record.declared}, layout ${expected}`);
        }
        span.confirmed += record.streamed;
        span.onConfirmed?.(span.confirmed);
      }
    }
    return res;
  }
}

/** A cheap rate-limited request (api-stats) outside the SDK: the budget left and the window's reset. */
export const probeBudget = async (base: string, token: string): Promise<{ remaining: number; resetSeconds: number }> => {
  const res = await fetch(`${base}/api/V1/stats/api-stats`, {
    method: 'POST', headers: { 'x-authorization': `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}',
  });
  await res.arrayBuffer();
  const limit = rateLimitOf(res.headers);
  if (!res.ok || !limit) throw new Error(`rate-limit probe: ${res.status}, RateLimit-Remaining ${res.headers.get('ratelimit-remaining')}`);
  return limit;
};

/** Bytes a span's PUTs streamed. */
export const streamedBytes = (puts: readonly PutRecord[]): number => puts.reduce((a, p) => a + p.streamed, 0);

// ---- the ceiling: MinIO's own multipart put --------------------------------------------------------

/** A multipart put of the file at `path` straight to MinIO (minio-js: initiate, `parallel` uploadPart at once, complete): seconds. */
export const directMultipart = async (o: {
  minio: MinioClient; bucket: string; path: string; size: number; partSize: number; parallel: number;
}): Promise<number> => {
  const key = `bench-resumable-${randomBytes(6).toString('hex')}`;
  const plan = partPlan(o.size, o.partSize);
  const file = await open(o.path, 'r');
  const began = performance.now();
  try {
    const uploadId = await o.minio.initiateNewMultipartUpload(o.bucket, key, { 'Content-Type': 'application/octet-stream' });
    const etags: { part: number; etag: string }[] = [];
    const queue = [...plan];
    await Promise.all(Array.from({ length: Math.min(o.parallel, queue.length) }, async () => {
      for (let part = queue.shift(); part !== undefined; part = queue.shift()) {
        const bytes = Buffer.allocUnsafe(part.size);
        await file.read(bytes, 0, part.size, part.start);
        const answer = await o.minio.uploadPart({ bucketName: o.bucket, objectName: key, uploadID: uploadId, partNumber: part.partNumber, headers: {} }, bytes);
        etags.push({ part: part.partNumber, etag: answer.etag });
      }
    }));
    await o.minio.completeMultipartUpload(o.bucket, key, uploadId, etags.sort((a, b) => a.part - b.part));
    const seconds = (performance.now() - began) / 1000;
    await o.minio.removeObject(o.bucket, key);
    return seconds;
  } finally {
    await file.close();
  }
};

/** Writes `bytes` of random data (each MiB numbered, so no two are alike) to `path`. */
export const writeRandomFile = async (path: string, bytes: number): Promise<void> => {
  const file = await open(path, 'w');
  try {
    const chunk = randomBytes(MiB);
    for (let written = 0; written < bytes; written += MiB) {
      chunk.writeUInt32BE(written / MiB, 0);
      await file.write(chunk, 0, Math.min(MiB, bytes - written));
    }
  } finally {
    await file.close();
  }
};

// ---- the phase -------------------------------------------------------------------------------------

export interface ResumablePhaseOptions {
  /** the gateway in front of the docs-command with BLOB_PUBLIC_URL */
  baseUrl: string;
  token: string;
  /** the SDK's uploadStateDir (where the killed upload's session is kept until it is resumed) */
  stateDir: string;
  minio: MinioClient;
  bucket: string;
  path: string;
  size: number;
  /** SDK uploads of the file (each followed by a direct put): MiB/s is their median */
  uploads: number;
  parallel: number;
  /** CPU seconds so far of the gateway and docs-command in front of the uploads (and MinIO, when known) */
  cpu: () => Promise<Record<string, number>>;
  log: (line: string) => void;
  /** where the kill happens, as a fraction of the bytes confirmed (0.4) */
  killAt: number;
}

export interface ResumablePhaseResult {
  partSize: number;
  partCount: number;
  docshareSeconds: number[];
  directSeconds: number[];
  completeMs: number[];
  /** CPU seconds per process over the SDK uploads, and those uploads' seconds */
  cpu: Record<string, number>;
  cpuSpanSeconds: number;
  rateLimit: { before: number; after: number; spent: number; limitedAnswers: number; answers: number; seen: number[] };
  /** part PUTs answered 200 over the phase, and those whose bytes were not the layout's */
  partsConfirmed: number;
  mismatches: string[];
  /** parts the SDK sent again (onPartRetry) over the phase */
  partRetries: number;
  resume: ResumeAccount & {
    confirmedAtKill: number; streamedAtKill: number; receivedAtResume: number;
    /** bytes the resumed upload's PUTs streamed (sent counts each PUT at its part's size) */
    streamed: number;
  };
}

const median = (xs: readonly number[]): number => percentile(xs, 50);

/** Runs the phase (see the file's comment) through the SDK; every session it opens is completed or aborted. */
export const runResumablePhase = async (o: ResumablePhaseOptions): Promise<ResumablePhaseResult> => {
  const meter = new FetchMeter();
  let partRetries = 0;
  // Threshold 0: every upload of the phase goes by the resumable protocol, whatever BENCH_STACK_RESUMABLE_MIB.
  const client = createClient({
    baseUrl: o.baseUrl, token: o.token, fetch: meter.fetch, parallel: o.parallel, resumableThreshold: 0, uploadStateDir: o.stateDir,
  });
  const input = (i: number): UploadInput => ({
    file: o.path, fileName: `resumable-${i}.bin`, contentType: 'application/octet-stream', title: `resumable bench ${i}`,
    description: 'a big resumable upload', tags: ['bench', 'resumable'], cc_license: 'CC BY', new_category_name: 'Big files',
  });
  const spans: MeterSpan[] = [];
  const begin = (): MeterSpan => {
    const span = meter.begin();
    spans.push(span);
    return span;
  };
  /** Upload options that learn the session's layout (for the meter) and refuse an upload that did not go resumable. */
  const watched = (events: ResumableEvent[]) => ({
    onPartRetry: () => {
      partRetries += 1;
    },
    onResumable: (e: ResumableEvent) => {
      events.push(e);
      if (e.kind === 'started') meter.layout = { size: o.size, partSize: e.partSize };
    },
  });
  const docshareSeconds: number[] = [];
  const directSeconds: number[] = [];
  const cpu: Record<string, number> = {};
  let cpuSpanSeconds = 0;
  let layout: { partSize: number; partCount: number } | undefined;
  let rateLimit: ResumablePhaseResult['rateLimit'] | undefined;

  for (let i = 0; i < o.uploads; i += 1) {
    // The first upload is also the rate-limit measure: the budget read just before and just after.
    const before = i === 0 ? await probeBudget(o.baseUrl, o.token) : undefined;
    const span = begin();
    const events: ResumableEvent[] = [];
    const cpuBefore = await o.cpu();
    const t0 = performance.now();
    await client.upload(input(i), watched(events));
    const done = performance.now();
    const cpuAfter = await o.cpu();
    const started = events.find((e) => e.kind === 'started');
    if (started?.kind !== 'started') throw new Error(`upload ${i} did not go by the resumable protocol (events: ${events.map((e) => e.kind).join(', ') || 'none'})`);
    layout ??= { partSize: started.partSize, partCount: started.partCount };
    docshareSeconds.push((done - t0) / 1000);
    cpuSpanSeconds += (done - t0) / 1000;
    for (const [name, s] of Object.entries(cpuAfter)) cpu[name] = (cpu[name] ?? 0) + (s - (cpuBefore[name] ?? NaN));
    if (before) {
      const after = await probeBudget(o.baseUrl, o.token);
      rateLimit = {
        before: before.remaining, after: after.remaining, spent: pointsSpent(before, after, (performance.now() - t0) / 1000 + 1),
        limitedAnswers: span.limited, answers: span.answers, seen: [...span.remaining],
      };
    }
    const direct = await directMultipart({ minio: o.minio, bucket: o.bucket, path: o.path, size: o.size, partSize: started.partSize, parallel: o.parallel });
    directSeconds.push(direct);
    const mib = o.size / MiB;
    o.log(`resumable ${i + 1}/${o.uploads}: SDK ${fmt(mib / docshareSeconds.at(-1)!)} MiB/s (${span.puts.length} part PUTs, complete ${fmt(span.completeMs.at(-1))} ms), `
      + `MinIO multipart ${fmt(mib / direct)} MiB/s`);
  }
  if (!layout || !rateLimit) throw new Error('resumable: no upload ran (BENCH_STACK_RESUMABLE_UPLOADS must be at least 1)');

  // Killed once 40% of the bytes are confirmed (the signal aborts every PUT in flight; the SDK
  // keeps the session on disk), then taken up by `upload(..., {resume: true})`.
  const kill = new AbortController();
  const killedSpan = begin();
  killedSpan.onConfirmed = (confirmed) => {
    if (confirmed >= o.killAt * o.size && !kill.signal.aborted) kill.abort(new Error(`killed at ${Math.round(o.killAt * 100)}%`));
  };
  const killedEvents: ResumableEvent[] = [];
  const outcome = await client.upload(input(o.uploads), { ...watched(killedEvents), signal: kill.signal }).then(() => undefined, (error: unknown) => error);
  const started = killedEvents.find((e) => e.kind === 'started');
  if (started?.kind !== 'started') throw new Error(`the upload to kill did not start a session (${String(outcome)})`);
  if (!kill.signal.aborted || outcome !== kill.signal.reason) {
    await client.abortUpload(started.uploadId).catch(() => undefined);
    throw new Error(`the upload to kill ${outcome === undefined ? 'finished before 40% was confirmed' : `failed otherwise: ${String(outcome)}`}`);
  }
  // What the server holds, asked independently of the SDK: the bytes missing are the rest.
  const received = (await client.getUpload(started.uploadId)).upload.received.map((p) => p.part_number);
  const resumedSpan = begin();
  const resumedEvents: ResumableEvent[] = [];
  await client.upload(input(o.uploads), { ...watched(resumedEvents), resume: true });
  const resumedEvent = resumedEvents.find((e) => e.kind === 'resumed');
  if (resumedEvent?.kind !== 'resumed' || resumedEvent.uploadId !== started.uploadId) {
    throw new Error(`the SDK did not take up session ${started.uploadId} (events: ${resumedEvents.map((e) => e.kind).join(', ')})`);
  }
  const account = resumeAccount(o.size, started.partSize, received, resumedSpan.puts.map((p) => p.partNumber));
  const streamed = streamedBytes(resumedSpan.puts);
  o.log(`resumable kill at ${Math.round(o.killAt * 100)}%: ${fmt(killedSpan.confirmed / MiB)} MiB confirmed, ${fmt(streamedBytes(killedSpan.puts) / MiB)} MiB streamed, `
    + `${received.length} parts held at the GET; resumed sent ${fmt(account.sent / MiB)} MiB (${fmt(streamed / MiB)} MiB streamed) for ${fmt(account.missing / MiB)} MiB missing `
    + `(extra ${fmt(account.extra / MiB)} MiB)`);
  return {
    ...layout, docshareSeconds, directSeconds, cpu, cpuSpanSeconds, rateLimit,
    completeMs: spans.flatMap((s) => s.completeMs),
    partsConfirmed: spans.reduce((a, s) => a + s.puts.filter((p) => p.status === 200).length, 0),
    mismatches: spans.flatMap((s) => s.mismatches),
    partRetries,
    resume: { ...account, confirmedAtKill: killedSpan.confirmed, streamedAtKill: streamedBytes(killedSpan.puts), receivedAtResume: received.length, streamed },
  };
};

/** The phase's rows, each figure beside its ceiling or goal. */
export const resumableRows = (r: ResumablePhaseResult, size: number, parallel: number): Row[] => {
  const mib = size / MiB;
  const ours = median(r.docshareSeconds.map((s) => mib / s));
  const direct = median(r.directSeconds.map((s) => mib / s));
  const cpuText = (name: string): string => {
    const s = r.cpu[name];
    return s === undefined || !Number.isFinite(s) ? `${name} n/a` : `${name} ${fmt(s)} CPU-s (${fmt((s / r.cpuSpanSeconds) * 100)}% of a core)`;
  };
  const p = (q: number): number => percentile(r.completeMs, q);
  const ratio = ours / direct;
  return [
    {
      measure: `resumable upload through the SDK, MiB/s (median of ${r.docshareSeconds.length}; ${r.partCount} parts of ${fmt(r.partSize / MiB)} MiB, ${parallel} at once; goal ≥ 0.8x)`,
      docshare: ours, ceiling: direct, unit: 'MiB/s', ceilingName: 'minio-js multipart, same parts and parallelism',
      ratioText: `${ratio.toFixed(2)}x${ratio >= 0.8 ? '' : ' (goal missed)'}`,
    },
    {
      measure: 'part PUTs answered 200 with exactly their bytes (streamed = Content-Length = layout); parts retried',
      docshareText: `${r.partsConfirmed - r.mismatches.length} of ${r.partsConfirmed}; ${r.partRetries} retried`, ceilingText: `${r.partsConfirmed}; 0`,
      ratioText: r.mismatches.length > 0 ? r.mismatches.slice(0, 2).join('; ') : '',
    },
    {
      measure: `CPU during the SDK uploads (${fmt(r.cpuSpanSeconds)} s; goal: near zero for gateway and docs-command)`,
      docshareText: ['gateway', 'docs-command'].map(cpuText).join(', '), ceilingText: 'minio' in r.cpu ? cpuText('minio') : '', ratioText: '',
    },
    {
      measure: `complete p50 / p99 (${r.completeMs.length} uploads; goal p99 ≤ 2 s)`,
      docshareText: `${fmt(p(50))} / ${fmt(p(99))} ms`, ceilingText: '2000 ms', ratioText: `${fmt(p(99) / 2000)}x`,
    },
    {
      measure: 'RateLimit-Remaining drop for one whole upload (goal ≤ 4)',
      docshareText: `${Number.isFinite(r.rateLimit.spent) ? r.rateLimit.spent : 'n/a (window rolled over)'} (${r.rateLimit.before} → ${r.rateLimit.after}, probe taken off); `
        + `${r.rateLimit.limitedAnswers} of ${r.rateLimit.answers} answers rate-limited`,
      ceilingText: '4', ratioText: '',
    },
    {
      measure: `killed at 40% and resumed with upload({resume: true}): bytes re-sent beyond the missing ones (goal ≤ one part)`,
      docshareText: `${fmt(r.resume.extra / MiB)} MiB (${fmt(r.resume.extraParts)} parts): sent ${fmt(r.resume.sent / MiB)} MiB (${fmt(r.resume.streamed / MiB)} streamed) for ${fmt(r.resume.missing / MiB)} MiB missing`,
      ceilingText: `${fmt(r.partSize / MiB)} MiB`,
      ratioText: `${fmt(r.resume.confirmedAtKill / MiB)} MiB confirmed, ${fmt((r.resume.streamedAtKill - r.resume.confirmedAtKill) / MiB)} MiB lost in flight`,
    },
  ];
};
