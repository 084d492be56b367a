// The byte side of a resumable upload: the parts of a file PUT to their URLs, `parallel` at a
// time, each read from the file by its range (a path or a Blob is never held in memory whole),
// retried with backoff, re-signed through the session when a URL is refused (403: expired), and
// one progress count over the whole file. The control calls (create, get, complete) are the
// client's (client.ts); this module only moves bytes and collects the etags.
import { createReadStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { DocshareApiError, DocshareNetworkError } from './errors.ts';
import { request, type FetchLike, type RawResponse } from './request.ts';
import type { Progress } from './download.ts';
import type { CompletedPart } from './resumable-types.ts';

/** Default size above which `upload()` switches to the resumable protocol (64 MiB). */
export const DEFAULT_RESUMABLE_THRESHOLD = 64 * 1024 * 1024;
/** Default number of parts in flight at once. */
export const DEFAULT_PARALLEL = 4;
/** Default attempts of one part (the first and its retries). */
export const DEFAULT_PART_ATTEMPTS = 5;

/** A file read by byte ranges: a path, a Blob (a browser File too) or bytes in memory. */
export interface RangeSource {
  size: number;
  /** Bytes `start` (included) to `end` (excluded). */
  read(start: number, end: number): AsyncIterable<Uint8Array>;
}

async function* bytesOf(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** A range source for a path (its size given), a Blob or bytes; undefined for a stream (no ranges). */
export function rangeSource(source: unknown, size: number | undefined): RangeSource | undefined {
  if (typeof source === 'string' && size !== undefined) {
    return { size, read: (start, end) => createReadStream(source, { start, end: end - 1, highWaterMark: 256 * 1024 }) };
  }
  if (source instanceof Uint8Array) return { size: source.byteLength, read: (start, end) => bytesOf(source.subarray(start, end)) };
  if (source instanceof Blob) return { size: source.size, read: (start, end) => source.slice(start, end).stream() };
  return undefined;
}

/** The size of part `n` (from 1) of a file of `size` bytes cut in `partSize` parts. */
export const partLength = (n: number, size: number, partSize: number): number => Math.max(0, Math.min(partSize, size - (n - 1) * partSize));

/** Told before a part is tried again. */
export interface PartRetryInfo {
  partNumber: number;
  /** The attempt that failed (1 = the first). */
  attempt: number;
  delayMs: number;
  /** `HTTP 503 ...`, `URL refused (403): fresh URLs asked`, or the network error. */
  reason: string;
}

export interface SendPartsOptions {
  source: RangeSource;
  partSize: number;
  partCount: number;
  /** The URL of each part still to send. */
  urls: Map<number, string>;
  /** The parts to send, in the order to start them. */
  todo: number[];
  /** Parts the server already holds (number → etag): not sent, counted as done. */
  received: Map<number, string>;
  parallel: number;
  attempts: number;
  baseDelayMs: number;
  /** Fresh URLs of the parts not yet received (the session's GET). */
  refresh: () => Promise<Map<number, string>>;
  fetch?: FetchLike;
  userAgent: string;
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
  onPartRetry?: (info: PartRetryInfo) => void;
}

/** Answers after which a part is sent again to the same URL. */
const TRANSIENT = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/**
 * Sends the parts of `todo`, never more than `parallel` at once; resolves with every part's
 * etag (received ones included) in part order. The first part that cannot be sent stops the
 * others and rejects with its error; an abort of `signal` rejects with the abort.
 */
export async function sendParts(o: SendPartsOptions): Promise<CompletedPart[]> {
  const size = o.source.size;
  const etags = new Map(o.received);
  const urls = new Map(o.urls);
  let confirmed = [...o.received.keys()].reduce((n, p) => n + partLength(p, size, o.partSize), 0);
  const inFlight = new Map<number, number>();
  // Progress is what the server confirmed plus what is handed to connections; a part that fails
  // takes its bytes back, so the count shown only moves when it passes what was shown.
  let shown = -1;
  const report = (): void => {
    let now = confirmed;
    for (const n of inFlight.values()) now += n;
    if (now > shown) {
      shown = now;
      o.onProgress?.({ loaded: now, total: size });
    }
  };
  report();

  const stop = new AbortController();
  const signal = o.signal ? AbortSignal.any([o.signal, stop.signal]) : stop.signal;
  let refreshing: Promise<void> | undefined;
  /** Fresh URLs, one GET however many parts were refused at once. */
  const refresh = async (): Promise<void> => {
    refreshing ??= o.refresh().then((fresh) => {
      for (const [n, url] of fresh) urls.set(n, url);
    }).finally(() => {
      refreshing = undefined;
    });
    await refreshing;
  };
  const backoff = (attempt: number): number => {
    const d = Math.min(o.baseDelayMs * 2 ** attempt, 10_000);
    return Math.round(d / 2 + (Math.random() * d) / 2);
  };

  async function put(partNumber: number, url: string): Promise<RawResponse> {
    const start = (partNumber - 1) * o.partSize;
    const length = partLength(partNumber, size, o.partSize);
    const source = o.source;
    inFlight.set(partNumber, 0);
    async function* counted(): AsyncGenerator<Uint8Array> {
      for await (const chunk of source.read(start, start + length)) {
        inFlight.set(partNumber, (inFlight.get(partNumber) ?? 0) + chunk.byteLength);
        report();
        yield chunk;
      }
    }
    try {
      return await request({
        method: 'PUT', path: url, body: ReadableStream.from(counted()), signal,
        headers: { 'Content-Length': String(length), 'User-Agent': o.userAgent },
        ...(o.fetch ? { fetch: o.fetch } : {}),
      });
    } finally {
      inFlight.delete(partNumber);
    }
  }

  async function sendOne(partNumber: number): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      const url = urls.get(partNumber);
      if (url === undefined) throw new Error(`the server gave no URL for part ${partNumber}`);
      let reason: string;
      let refused = false;
      try {
        const res = await put(partNumber, url);
        if (res.status >= 200 && res.status < 300) {
          const etag = res.headers.get('etag');
          if (etag === null || etag === '') {
            throw new Error(`part ${partNumber}: the answer has no ETag header (a browser needs the store's CORS to expose ETag)`);
          }
          etags.set(partNumber, etag);
          confirmed += partLength(partNumber, size, o.partSize);
          report();
          return;
        }
        if (res.status !== 403 && !TRANSIENT(res.status)) throw new DocshareApiError(res);
        refused = res.status === 403;
        if (attempt >= o.attempts) throw new DocshareApiError(res);
        const message = (res.body as { message?: unknown } | undefined)?.message;
        reason = refused ? 'URL refused (403): fresh URLs asked' : `HTTP ${res.status} ${typeof message === 'string' ? message : ''}`.trim();
      } catch (error) {
        if (signal.aborted || error instanceof DocshareApiError || !(error instanceof TypeError || (error as Error).name === 'SocketError')) {
          if (signal.aborted && o.signal?.aborted) throw o.signal.reason;
          throw error;
        }
        if (attempt >= o.attempts) throw new DocshareNetworkError(url, error);
        reason = new DocshareNetworkError(url, error).message;
      }
      const delayMs = refused ? 0 : backoff(attempt - 1);
      o.onPartRetry?.({ partNumber, attempt, delayMs, reason });
      // Parts refused together ask once: a URL already replaced is simply tried again.
      if (refused && urls.get(partNumber) === url) await refresh();
      else await sleep(delayMs, undefined, { signal });
    }
  }

  const queue = [...o.todo];
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    for (let next = queue.shift(); next !== undefined && failure === undefined; next = queue.shift()) {
      try {
        await sendOne(next);
      } catch (error) {
        failure ??= { error };
        stop.abort();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.parallel, queue.length)) }, worker));
  if (o.signal?.aborted) throw o.signal.reason;
  if (failure !== undefined) throw failure.error;
  return [...etags].sort(([a], [b]) => a - b).map(([part_number, etag]) => ({ part_number, etag }));
}
