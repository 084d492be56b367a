// Fetching a file's bytes from its signed download_url: to a stream, or to a file through a
// `<file>.part` that a later call resumes with an HTTP Range request.
import { createWriteStream } from 'node:fs';
import { rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { DocshareApiError, DocshareNetworkError } from './errors.ts';
import { readResponse, type FetchLike } from './request.ts';

export interface Progress {
  /** Bytes of the file on hand so far (a resumed part included). */
  loaded: number;
  /** The file's size, when known. */
  total: number | undefined;
}

export interface ContentOptions {
  /** A file path (written through `<path>.part`, renamed when complete) or a stream (left open). */
  to: string | Writable;
  /** Continue an existing `<path>.part` with a Range request (default true; paths only). */
  resume?: boolean;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
  fetch?: FetchLike;
  headers?: Record<string, string>;
}

export interface ContentResult {
  /** The file written (undefined when `to` was a stream). */
  path: string | undefined;
  /** The file's size. */
  bytes: number;
  /** Bytes that were already on disk in `<path>.part` and not fetched again. */
  resumedFrom: number;
  /** The status of the content answer: 200, 206 (resumed) or 416 (the part was already whole). */
  status: number;
  contentType: string | undefined;
}

/** `bytes start-end/total` → its numbers; `bytes *\/total` → total only. */
export function parseContentRange(value: string | null): { start?: number; end?: number; total?: number } | undefined {
  if (value === null) return undefined;
  const m = /^bytes\s+(?:(\d+)-(\d+)|\*)\/(\d+|\*)$/i.exec(value.trim());
  if (!m) return undefined;
  const num = (s: string | undefined): number | undefined => (s === undefined || s === '*' ? undefined : Number(s));
  return { start: num(m[1]), end: num(m[2]), total: num(m[3]) };
}

/** The partial file a download to `file` writes first. */
export const partPathOf = (file: string): string => `${file}.part`;

async function sizeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size;
  } catch {
    return undefined;
  }
}

function counter(start: number, total: number | undefined, onProgress?: (p: Progress) => void): { stream: Transform; loaded: () => number } {
  let loaded = start;
  onProgress?.({ loaded, total });
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      loaded += chunk.byteLength;
      onProgress?.({ loaded, total });
      done(null, chunk);
    },
  });
  return { stream, loaded: () => loaded };
}

/**
 * Fetches `url` (a download_url: absolute, signed, no token) to a file or a stream. To a file, the
 * bytes go to `<file>.part` first; an existing part is continued with `Range: bytes=<size>-`
 * (a server that answers 200 instead restarts it), and the part becomes `<file>` once the size the
 * server announced is on disk. An interrupted download leaves the part for the next call.
 */
export async function downloadContent(url: string, opts: ContentOptions): Promise<ContentResult> {
  const doFetch = opts.fetch ?? fetch;
  const toFile = typeof opts.to === 'string' ? opts.to : undefined;
  const part = toFile === undefined ? undefined : partPathOf(toFile);
  let offset = part !== undefined && opts.resume !== false ? (await sizeOf(part)) ?? 0 : 0;

  for (let attempt = 0; ; attempt += 1) {
    const headers: Record<string, string> = { ...opts.headers };
    if (offset > 0) headers['Range'] = `bytes=${offset}-`;
    let res: Response;
    try {
      res = await doFetch(url, { headers, redirect: 'follow', ...(opts.signal ? { signal: opts.signal } : {}) });
    } catch (error) {
      if (opts.signal?.aborted) throw error;
      throw new DocshareNetworkError(url, error);
    }
    const contentType = res.headers.get('content-type') ?? undefined;
    const range = parseContentRange(res.headers.get('content-range'));

    if (res.status === 416 && offset > 0 && toFile !== undefined && part !== undefined) {
      await res.arrayBuffer();
      if (range?.total === offset) {
        // The part already holds the whole file.
        opts.onProgress?.({ loaded: offset, total: offset });
        await rename(part, toFile);
        return { path: toFile, bytes: offset, resumedFrom: offset, status: 416, contentType };
      }
      if (attempt > 0) throw new Error(`cannot resume ${part}: the server refused the range twice`);
      offset = 0; // the part is longer than the file: start again
      continue;
    }
    if (res.status === 206 && (range?.start !== offset || range.total === undefined)) {
      await res.body?.cancel();
      if (attempt > 0) throw new Error(`unexpected Content-Range ${res.headers.get('content-range')} for bytes=${offset}-`);
      offset = 0;
      continue;
    }
    if (res.status !== 200 && res.status !== 206) throw new DocshareApiError(await readResponse(res));
    if (res.body === null) throw new Error(`no body in the answer (HTTP ${res.status})`);

    const resumedFrom = res.status === 206 ? offset : 0;
    const length = Number(res.headers.get('content-length') ?? Number.NaN);
    const total = res.status === 206 ? range?.total : Number.isFinite(length) ? length : undefined;
    const source = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
    const count = counter(resumedFrom, total, opts.onProgress);

    if (toFile === undefined || part === undefined) {
      await pipeline(source, count.stream, opts.to as Writable, { end: false, ...(opts.signal ? { signal: opts.signal } : {}) });
      return { path: undefined, bytes: count.loaded(), resumedFrom, status: res.status, contentType };
    }
    await pipeline(source, count.stream, createWriteStream(part, { flags: resumedFrom > 0 ? 'a' : 'w' }), opts.signal ? { signal: opts.signal } : {});
    const onDisk = (await sizeOf(part)) ?? 0;
    if (total !== undefined && onDisk !== total) {
      throw new Error(`incomplete download: ${onDisk} of ${total} bytes in ${part} (run it again to resume)`);
    }
    await rename(part, toFile);
    return { path: toFile, bytes: onDisk, resumedFrom, status: res.status, contentType };
  }
}

/**
 * A file name from the server's original_file_name that is safe to create in a directory: no
 * directory part, no control characters, not hidden, not empty (then `fallback`).
 */
export function safeFileName(name: string, fallback: string): string {
  const base = name.replace(/\\/g, '/').split('/').pop() ?? '';
  // Controls (C0, DEL, C1) and bidi embeddings, overrides and isolates: a name that rewrites a
  // terminal or reads backwards ("gpj.exe" shown as "exe.jpg") never reaches the disk.
  // eslint-disable-next-line no-control-regex
  const cleaned = base.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, '').replace(/^[.\s]+/, '').trim();
  return cleaned === '' ? fallback : cleaned.slice(0, 255);
}

/** `dir` joined with `name` when `target` is an existing directory, else `target`. */
export async function resolveTarget(target: string, name: string): Promise<string> {
  try {
    if ((await stat(target)).isDirectory()) return path.join(target, name);
  } catch {
    // not there yet: a file name
  }
  return target;
}
