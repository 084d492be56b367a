/**
 * bench:stack's resumable-upload phase (issue 22's goals, measured in one run): a big file sent
 * through the resumable protocol (POST api-uploads, the parts PUT to the URLs the session names,
 * POST complete) against a docs-command with BLOB_PUBLIC_URL set (presigned MinIO part URLs),
 * beside a direct MinIO multipart put of the same bytes with minio-js at the same part size and
 * parallelism (the ceiling), and:
 *
 *   - the CPU the gateway and docs-command spend meanwhile (their process trees, /proc);
 *   - `complete`'s latency over every upload of the phase;
 *   - the rate-limit points one whole upload spends (RateLimit-Remaining before and after, and
 *     the answers that carried the header at all: the part PUTs must not);
 *   - an upload aborted once 40% of its bytes are confirmed, then resumed from the session's GET:
 *     the bytes sent again beyond those the server was missing.
 *
 * The client here drives the protocol with fetch (the parts read from the file by range, one
 * buffer each, `parallel` at once). The pure arithmetic (part layout, resume accounting, the
 * rate-limit drop) is unit-tested in test/resumable.test.ts; the bench (bench/stack.ts) runs it.
 */
import { randomBytes } from 'node:crypto';
import { open } from 'node:fs/promises';
import type { Client as MinioClient } from 'minio';
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

// ---- the client ----------------------------------------------------------------------------------

/** An answer that is not what the protocol says: its status and the start of its body. */
const failed = async (res: Response, what: string): Promise<Error> => new Error(`${what}: ${res.status} ${(await res.text()).slice(0, 200)}`);

export interface UploadMeta { title: string; description: string; tags: string; category: string }

export interface Session { uploadId: string; partSize: number; partCount: number; urls: Map<number, string> }

/**
 * The resumable protocol against one gateway, as a client speaks it (fetch). Every answer seen
 * is counted, and those that carried the rate limit's headers (`limited`): the part PUTs are
 * exempt and carry none (presigned MinIO URLs never reach the gateway at all).
 */
export class ResumableApi {
  readonly base: string;
  readonly token: string;
  answers = 0;
  limited = 0;
  constructor(base: string, token: string) {
    this.base = base;
    this.token = token;
  }

  private async call(method: string, path: string, body?: unknown): Promise<Response> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: { 'x-authorization': `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(120_000),
    });
    this.note(res);
    return res;
  }

  private note(res: Response): void {
    this.answers += 1;
    if (rateLimitOf(res.headers)) this.limited += 1;
  }

  /** A cheap rate-limited request (api-stats): the budget left and the window's reset. */
  async probe(): Promise<{ remaining: number; resetSeconds: number }> {
    const res = await fetch(`${this.base}/api/V1/stats/api-stats`, {
      method: 'POST', headers: { 'x-authorization': `Bearer ${this.token}`, 'content-type': 'application/json' }, body: '{}',
    });
    await res.arrayBuffer();
    const limit = rateLimitOf(res.headers);
    if (!res.ok || !limit) throw new Error(`rate-limit probe: ${res.status}, RateLimit-Remaining ${res.headers.get('ratelimit-remaining')}`);
    return limit;
  }

  async create(fileName: string, size: number, meta: UploadMeta): Promise<Session> {
    const res = await this.call('POST', '/api/V1/docs/api-uploads', {
      file_name: fileName, size, content_type: 'application/octet-stream', title: meta.title, description: meta.description,
      tags: meta.tags, cc_license: 'CC BY', new_category_name: meta.category,
    });
    if (res.status !== 201) throw await failed(res, 'api-uploads');
    const body = await res.json() as { upload_id: string; part_size: number; part_count: number; parts: { part_number: number; url: string }[] };
    return { uploadId: body.upload_id, partSize: body.part_size, partCount: body.part_count, urls: new Map(body.parts.map((p) => [p.part_number, p.url])) };
  }

  /** The session: the parts the server holds (number → etag) and fresh URLs of the others. */
  async get(uploadId: string): Promise<{ state: string; received: Map<number, string>; urls: Map<number, string> }> {
    const res = await this.call('GET', `/api/V1/docs/api-uploads/${uploadId}`);
    if (res.status !== 200) throw await failed(res, 'api-uploads GET');
    const { upload } = await res.json() as { upload: { state: string; received: { part_number: number; etag: string }[]; parts: { part_number: number; url: string }[] } };
    return {
      state: upload.state,
      received: new Map(upload.received.map((p) => [p.part_number, p.etag])),
      urls: new Map(upload.parts.map((p) => [p.part_number, p.url])),
    };
  }

  async complete(uploadId: string, etags: ReadonlyMap<number, string>): Promise<string> {
    const parts = [...etags].sort(([a], [b]) => a - b).map(([part_number, etag]) => ({ part_number, etag }));
    const res = await this.call('POST', `/api/V1/docs/api-uploads/${uploadId}/complete`, { parts });
    if (res.status !== 201) throw await failed(res, 'complete');
    return String((await res.json() as { file_id: string }).file_id);
  }

  async abort(uploadId: string): Promise<void> {
    const res = await this.call('DELETE', `/api/V1/docs/api-uploads/${uploadId}`);
    await res.arrayBuffer();
  }

  /** PUT of one part's bytes; resolves with the ETag its answer carries. */
  async putPart(url: string, bytes: Uint8Array, signal: AbortSignal): Promise<string> {
    const res = await fetch(url, { method: 'PUT', body: bytes, signal });
    this.note(res);
    if (res.status !== 200) throw await failed(res, 'part PUT');
    await res.arrayBuffer();
    const etag = res.headers.get('etag');
    if (!etag) throw new Error('part PUT: no ETag header');
    return etag;
  }
}

export interface SendResult {
  etags: Map<number, string>;
  /** part numbers whose PUT was started, once per PUT */
  started: number[];
  /** bytes whose part the server confirmed */
  confirmed: number;
  /** the transfer was stopped by `stopWhen` */
  stopped: boolean;
}

/**
 * PUTs the parts `todo` of the file at `path` (each read into a buffer of its own), `parallel`
 * at a time; `stopWhen(confirmed)` true aborts every PUT in flight (a client killed mid-upload)
 * and resolves with what was confirmed until then.
 */
export const sendParts = async (o: {
  api: ResumableApi; path: string; size: number; partSize: number; urls: ReadonlyMap<number, string>; todo: readonly number[];
  parallel: number; stopWhen?: (confirmed: number) => boolean;
}): Promise<SendResult> => {
  const plan = partPlan(o.size, o.partSize);
  const file = await open(o.path, 'r');
  const stop = new AbortController();
  const out: SendResult = { etags: new Map(), started: [], confirmed: 0, stopped: false };
  const queue = [...o.todo];
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(o.parallel, queue.length)) }, async () => {
      for (let n = queue.shift(); n !== undefined && !stop.signal.aborted; n = queue.shift()) {
        const part = plan[n - 1]!;
        const url = o.urls.get(n);
        if (url === undefined) throw new Error(`no URL for part ${n}`);
        const bytes = Buffer.allocUnsafe(part.size);
        const { bytesRead } = await file.read(bytes, 0, part.size, part.start);
        if (bytesRead !== part.size) throw new Error(`part ${n}: read ${bytesRead} of ${part.size} bytes`);
        if (stop.signal.aborted) return;
        out.started.push(n);
        try {
          out.etags.set(n, await o.api.putPart(url, bytes, stop.signal));
        } catch (error) {
          if (stop.signal.aborted) return;
          throw error;
        }
        out.confirmed += part.size;
        if (o.stopWhen?.(out.confirmed)) {
          out.stopped = true;
          stop.abort();
        }
      }
    }));
  } finally {
    stop.abort();
    await file.close();
  }
  return out;
};

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
  api: ResumableApi;
  minio: MinioClient;
  bucket: string;
  path: string;
  size: number;
  /** docshare uploads of the file (each followed by a direct put): MiB/s is their median */
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
  /** CPU seconds per process over the docshare uploads, and those uploads' seconds */
  cpu: Record<string, number>;
  cpuSpanSeconds: number;
  rateLimit: { before: number; after: number; spent: number; limitedAnswers: number; answers: number };
  resume: ResumeAccount & { confirmedAtKill: number; startedAtKill: number; receivedAtResume: number };
}

const median = (xs: readonly number[]): number => percentile(xs, 50);

/** Runs the phase (see the file's comment); every session it opens is completed or aborted. */
export const runResumablePhase = async (o: ResumablePhaseOptions): Promise<ResumablePhaseResult> => {
  const meta = (i: number): UploadMeta => ({ title: `resumable bench ${i}`, description: 'a big resumable upload', tags: 'bench,resumable', category: 'Big files' });
  const docshareSeconds: number[] = [];
  const directSeconds: number[] = [];
  const completeMs: number[] = [];
  const cpu: Record<string, number> = {};
  let cpuSpanSeconds = 0;
  let layout: { partSize: number; partCount: number } | undefined;
  let rateLimit: ResumablePhaseResult['rateLimit'] | undefined;
  const all = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

  for (let i = 0; i < o.uploads; i += 1) {
    // The first upload is also the rate-limit measure: the budget read just before and just after.
    const before = i === 0 ? await o.api.probe() : undefined;
    const answersBefore = { answers: o.api.answers, limited: o.api.limited };
    const cpuBefore = await o.cpu();
    const t0 = performance.now();
    const session = await o.api.create(`resumable-${i}.bin`, o.size, meta(i));
    layout ??= { partSize: session.partSize, partCount: session.partCount };
    let sent: SendResult;
    try {
      sent = await sendParts({ api: o.api, path: o.path, size: o.size, partSize: session.partSize, urls: session.urls, todo: all(session.partCount), parallel: o.parallel });
    } catch (error) {
      await o.api.abort(session.uploadId).catch(() => undefined);
      throw error;
    }
    const c0 = performance.now();
    await o.api.complete(session.uploadId, sent.etags);
    const done = performance.now();
    const cpuAfter = await o.cpu();
    completeMs.push(done - c0);
    docshareSeconds.push((done - t0) / 1000);
    cpuSpanSeconds += (done - t0) / 1000;
    for (const [name, s] of Object.entries(cpuAfter)) cpu[name] = (cpu[name] ?? 0) + (s - (cpuBefore[name] ?? NaN));
    if (before) {
      const spentSeconds = (performance.now() - t0) / 1000;
      const after = await o.api.probe();
      rateLimit = {
        before: before.remaining, after: after.remaining, spent: pointsSpent(before, after, spentSeconds + 1),
        limitedAnswers: o.api.limited - answersBefore.limited, answers: o.api.answers - answersBefore.answers,
      };
    }
    const direct = await directMultipart({ minio: o.minio, bucket: o.bucket, path: o.path, size: o.size, partSize: session.partSize, parallel: o.parallel });
    directSeconds.push(direct);
    const mib = o.size / MiB;
    o.log(`resumable ${i + 1}/${o.uploads}: docshare ${fmt(mib / docshareSeconds.at(-1)!)} MiB/s (complete ${fmt(completeMs.at(-1))} ms), MinIO multipart ${fmt(mib / direct)} MiB/s`);
  }

  // Killed once 40% of the bytes are confirmed, then taken up from the session's GET.
  const session = await o.api.create('resumable-killed.bin', o.size, meta(o.uploads));
  let killed: SendResult;
  let resumed: SendResult;
  let received: Map<number, string>;
  try {
    killed = await sendParts({
      api: o.api, path: o.path, size: o.size, partSize: session.partSize, urls: session.urls, todo: all(session.partCount), parallel: o.parallel,
      stopWhen: (confirmed) => confirmed >= o.killAt * o.size,
    });
    const state = await o.api.get(session.uploadId);
    received = state.received;
    const todo = all(session.partCount).filter((n) => !received.has(n));
    resumed = await sendParts({ api: o.api, path: o.path, size: o.size, partSize: session.partSize, urls: state.urls, todo, parallel: o.parallel });
  } catch (error) {
    await o.api.abort(session.uploadId).catch(() => undefined);
    throw error;
  }
  const c0 = performance.now();
  await o.api.complete(session.uploadId, new Map([...received, ...resumed.etags]));
  completeMs.push(performance.now() - c0);
  const account = resumeAccount(o.size, session.partSize, [...received.keys()], resumed.started);
  o.log(`resumable kill at ${Math.round(o.killAt * 100)}%: ${fmt(killed.confirmed / MiB)} MiB confirmed, ${received.size} parts held at the GET; `
    + `resumed sent ${fmt(account.sent / MiB)} MiB for ${fmt(account.missing / MiB)} MiB missing (extra ${fmt(account.extra / MiB)} MiB)`);
  if (!layout || !rateLimit) throw new Error('resumable: no upload ran (BENCH_STACK_RESUMABLE_UPLOADS must be at least 1)');
  return {
    ...layout, docshareSeconds, directSeconds, completeMs, cpu, cpuSpanSeconds, rateLimit,
    resume: {
      ...account, confirmedAtKill: killed.confirmed,
      startedAtKill: resumeAccount(o.size, session.partSize, [], killed.started).sent, receivedAtResume: received.size,
    },
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
  return [
    {
      measure: `resumable upload MiB/s (median of ${r.docshareSeconds.length}; ${r.partCount} parts of ${fmt(r.partSize / MiB)} MiB, ${parallel} at once; goal ≥ 0.8x)`,
      docshare: ours, ceiling: direct, unit: 'MiB/s', ceilingName: 'minio-js multipart, same parts and parallelism',
    },
    {
      measure: `CPU during the uploads (${fmt(r.cpuSpanSeconds)} s; goal: near zero for gateway and docs-command)`,
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
      measure: 'killed at 40% and resumed: bytes re-sent beyond the missing ones (goal ≤ one part)',
      docshareText: `${fmt(r.resume.extra / MiB)} MiB (${fmt(r.resume.extraParts)} parts): sent ${fmt(r.resume.sent / MiB)} MiB for ${fmt(r.resume.missing / MiB)} MiB missing`,
      ceilingText: `${fmt(r.partSize / MiB)} MiB`,
      ratioText: `${fmt(r.resume.confirmedAtKill / MiB)} MiB confirmed, ${fmt((r.resume.startedAtKill - r.resume.confirmedAtKill) / MiB)} MiB lost in flight`,
    },
  ];
};
