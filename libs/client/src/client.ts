// The typed docshare client: one method per operation of the OpenAPI document.
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { downloadContent, resolveTarget, safeFileName, type ContentResult, type Progress } from './download.ts';
import { DocshareApiError, DocshareNetworkError, parseRetryAfter, SearchWalkError } from './errors.ts';
import { multipartBody, openFile, type FileSource } from './multipart.ts';
import { request, resolveUrl, ResponseTooLargeError, type Body, type FetchLike, type RawResponse } from './request.ts';
import {
  DEFAULT_PARALLEL, DEFAULT_PART_ATTEMPTS, DEFAULT_RESUMABLE_THRESHOLD, partLength, rangeSource, sendParts, type PartRetryInfo, type RangeSource,
} from './resumable.ts';
import type {
  AbortUploadResponse, CompletedPart, CompleteUploadResponse, CreateUploadRequest, CreateUploadResponse, UploadSession, UploadSessionResponse,
} from './resumable-types.ts';
import { webhooksApi } from './webhooks.ts';
import { accountApi } from './account.ts';
import { defaultUploadStateDir, readUploadState, removeUploadState, uploadStatePath, writeUploadState, type UploadIdentity } from './upload-state.ts';
import type {
  CategoriesResponse, CommentResponse, CommentsQuery, CommentsResponse, DailyStatsResponse, DeleteResponse, DownloadAuthorization,
  FilesQuery, FilesResponse, TopFilesResponse, TopMetric, TrendingResponse, License, LoginRequest, LoginResponse, PurchaseResponse, PurchasesQuery, PurchasesResponse, RegisterRequest,
  RegisterResponse, SearchOptions, SearchResponse, SearchResult, StatsResponse, UpdateRequest, UpdateResponse,
  UploadFields, UploadResponse,
} from './types.ts';

/** The package's version (its package.json, one level above src/ and dist/ alike), which a release bumps. */
export const CLIENT_VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

/** The message of the 409 the server answers while a request with the same Idempotency-Key runs. */
const IN_FLIGHT = /in progress/i;
/** Answers after which a call is tried again (when it can be). */
const RETRY_STATUSES = new Set([429, 502, 503, 504]);

export interface RetryInfo {
  method: string;
  path: string;
  /** The attempt that failed (1 = the first). */
  attempt: number;
  delayMs: number;
  /** `HTTP 503 Service unavailable, try again later`, or the network error. */
  reason: string;
}

export interface ResponseInfo {
  method: string;
  url: string;
  attempt: number;
  status: number;
  headers: Headers;
}

export interface ClientOptions {
  /** The API's base URL, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** A JWT (register and login set it on the client). */
  token?: string;
  /** Replaces the global fetch (tests, proxies, instrumentation). */
  fetch?: FetchLike;
  /** Retries after a network error, 429, 502, 503, 504 (default 3; 0 = never). */
  retries?: number;
  /** A `Retry-After` longer than this is not waited for: the error is thrown (default 60 000). */
  maxRetryDelayMs?: number;
  /** First backoff delay when the server gives no `Retry-After`, doubled each retry (default 250). */
  retryBaseDelayMs?: number;
  userAgent?: string;
  /** Told before each retry (for logging). */
  onRetry?: (info: RetryInfo) => void;
  /** Told about every answer of the API (status, headers such as X-Request-Id, Idempotent-Replayed). */
  onResponse?: (info: ResponseInfo) => void;
  /** `upload()` of a file larger than this (bytes) uses the resumable protocol (default 64 MiB; Infinity: never). */
  resumableThreshold?: number;
  /** Parts of a resumable upload in flight at once (default 4). */
  parallel?: number;
  /** Where resumable sessions are kept (default `$XDG_STATE_HOME/docshare/uploads`, else `~/.local/state/docshare/uploads`). */
  uploadStateDir?: string;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** The Idempotency-Key of a write (default: a new random UUID per call, kept across its retries). */
  idempotencyKey?: string;
  /** Overrides the client's `retries` for this call. */
  retries?: number;
}

export interface UploadInput extends Omit<UploadFields, 'tags' | 'cc_license' | 'category_tags'> {
  /** A file path, bytes, a Blob or a stream (a stream is not retried, and is sent chunked unless `size` is given). */
  file: FileSource;
  /** The name the server keeps (default: the path's base name, else `file`). */
  fileName?: string;
  /** Default: from the file name's extension, else application/octet-stream. */
  contentType?: string;
  /** The stream's size in bytes, when `file` is a stream and it is known (enables Content-Length). */
  size?: number;
  /** Comma-separated, or a list. */
  tags: string | string[];
  category_tags?: string | string[];
  /** One of the seven licences (matched ignoring case and extra spaces). */
  cc_license: License | (string & {});
}

export interface UploadOptions extends CallOptions, ResumableOptions {
  /** Told as the file's bytes are sent: `loaded` of `total` (undefined for a stream of unknown size). */
  onProgress?: (progress: Progress) => void;
  /** Overrides the client's `resumableThreshold` for this call. */
  resumableThreshold?: number;
  /**
   * Takes up the session stored for this file (same path, size, mtime and server) instead of
   * starting again: only the parts the server lacks are sent. None stored, or one that ended
   * (expired, aborted): a new upload, told through `onResumable`.
   */
  resume?: boolean;
}

/** Options of the resumable protocol's byte transfer. */
export interface ResumableOptions {
  /** Parts in flight at once (default: the client's `parallel`, else 4). */
  parallel?: number;
  /** Attempts of one part PUT before the upload fails (default 5). */
  partAttempts?: number;
  /** Overrides the client's `uploadStateDir`. */
  stateDir?: string;
  /** Told what the resumable protocol does with the session (started, resumed, restarted...). */
  onResumable?: (event: ResumableEvent) => void;
  /** Told before a part is sent again. */
  onPartRetry?: (info: PartRetryInfo) => void;
  onProgress?: (progress: Progress) => void;
}

/** What a resumable upload did with its session, for logs and messages. */
export type ResumableEvent =
  | { kind: 'started'; uploadId: string; partSize: number; partCount: number; expiresAt: string; stateFile: string | undefined }
  | { kind: 'resumed'; uploadId: string; partCount: number; receivedParts: number; receivedBytes: number; stateFile: string | undefined }
  /** `resume` asked, but no session could be taken up: a new upload follows. */
  | { kind: 'restarted'; uploadId: string | undefined; reason: 'none stored' | 'not found' | 'expired' | 'aborted' | 'changed' }
  /** Without `resume`, a session stored for the same file was aborted (its quota released) before a new one. */
  | { kind: 'discarded'; uploadId: string }
  | { kind: 'completed'; uploadId: string; fileId: string };

export interface DownloadOptions extends CallOptions {
  /**
   * A file path, an existing directory (the file is named after the server's original_file_name,
   * made safe) or a stream. Files go through `<file>.part`, resumed by the next call.
   */
  to: string | Writable;
  /** Continue an existing `<file>.part` with a Range request (default true). */
  resume?: boolean;
  /** Refuse to replace an existing file (checked before any byte is fetched). */
  overwrite?: boolean;
  onProgress?: (progress: Progress) => void;
  /** Told once the download is authorised, before any byte: the file's name and where it goes. */
  onStart?: (info: { fileName: string; path: string | undefined }) => void;
}

export interface DownloadResult extends ContentResult {
  /** The server's original_file_name. */
  fileName: string;
  /** The server's answer to the authorisation (message, original_file_name, download_url). */
  authorization: DownloadAuthorization;
}

export type Id = string | number;

/** The days of `dailyStats`: UTC days `YYYY-MM-DD`, both included (at most 366 days); one file of yours, else all. */
export interface DailyStatsInput {
  from: string;
  to: string;
  fileId?: Id;
}

/** `topFiles`: the metric (default views) over the last `days` UTC days (1–90, default 7), at most `limit` files (1–50, default 10). */
export interface TopFilesInput {
  metric?: TopMetric;
  days?: number;
  limit?: number;
}

/** `trending`: the last `hours` UTC hours (1–168, default 24), one category or all, at most `limit` files (1–50, default 10). */
export interface TrendingInput {
  hours?: number;
  categoryId?: Id;
  limit?: number;
}

interface Spec {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  /** Needs the token. */
  auth?: boolean;
  /** A write: sent with an Idempotency-Key. */
  write?: boolean;
  json?: unknown;
  /** A body made anew for each attempt, when the call can be tried again. */
  body?: () => Promise<{ body: Body; headers: Record<string, string> }>;
  /** Whether the body can be sent again (default true). */
  replayable?: boolean;
}

const query = (params: Record<string, string | number | undefined>): string => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
};

const list = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(',') : v);

export type DocshareClient = ReturnType<typeof createClient>;

/** A client of the docshare API at `baseUrl`. Every method resolves with the server's JSON answer. */
export function createClient(options: ClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  let token = options.token;
  const retries = options.retries ?? 3;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
  const baseDelay = options.retryBaseDelayMs ?? 250;
  const userAgent = options.userAgent ?? `docshare-client/${CLIENT_VERSION} node/${process.versions.node}`;

  const backoff = (attempt: number): number => {
    const d = Math.min(baseDelay * 2 ** attempt, 10_000);
    return Math.round(d / 2 + (Math.random() * d) / 2);
  };

  /** Sends a call, retrying what may be retried; resolves with the 2xx answer, else throws. */
  async function send(spec: Spec, opts: CallOptions = {}): Promise<RawResponse> {
    const key = spec.write ? (opts.idempotencyKey ?? randomUUID()) : undefined;
    const allowed = opts.retries ?? retries;
    const url = resolveUrl(baseUrl, spec.path);
    for (let attempt = 1; ; attempt += 1) {
      const headers: Record<string, string> = { 'User-Agent': userAgent, Accept: 'application/json' };
      if (key !== undefined) headers['Idempotency-Key'] = key;
      let body: Body | undefined;
      if (spec.body !== undefined) {
        const made = await spec.body();
        body = made.body;
        Object.assign(headers, made.headers);
      }
      const canRetry = attempt <= allowed && spec.replayable !== false;
      let res: RawResponse;
      try {
        res = await request({
          baseUrl, method: spec.method, path: spec.path, headers, redirect: 'manual',
          ...(spec.auth && token !== undefined ? { token } : {}),
          ...(body !== undefined ? { body } : spec.json !== undefined ? { json: spec.json } : {}),
          ...(opts.signal ? { signal: opts.signal } : {}),
          ...(options.fetch ? { fetch: options.fetch } : {}),
        });
      } catch (error) {
        // An answer over the size bound is the server's doing, not the network's: asking again
        // would only read the same bound again.
        if (opts.signal?.aborted || error instanceof ResponseTooLargeError) throw error;
        if (!canRetry) throw new DocshareNetworkError(url, error);
        const delayMs = backoff(attempt - 1);
        options.onRetry?.({ method: spec.method, path: spec.path, attempt, delayMs, reason: new DocshareNetworkError(url, error).message });
        await sleep(delayMs, undefined, opts.signal ? { signal: opts.signal } : {});
        continue;
      }
      options.onResponse?.({ method: spec.method, url, attempt, status: res.status, headers: res.headers });
      if (res.status >= 200 && res.status < 300) return res;
      const message = (res.body as { message?: unknown } | undefined)?.message;
      const transient = RETRY_STATUSES.has(res.status) || (res.status === 409 && key !== undefined && typeof message === 'string' && IN_FLIGHT.test(message));
      if (transient && canRetry) {
        const after = parseRetryAfter(res.headers.get('retry-after'));
        const delayMs = after !== undefined ? after * 1000 : backoff(attempt - 1);
        if (delayMs <= maxRetryDelayMs) {
          options.onRetry?.({ method: spec.method, path: spec.path, attempt, delayMs, reason: `HTTP ${res.status} ${typeof message === 'string' ? message : ''}`.trim() });
          await sleep(delayMs, undefined, opts.signal ? { signal: opts.signal } : {});
          continue;
        }
      }
      throw new DocshareApiError(res);
    }
  }

  async function call<T>(spec: Spec, opts?: CallOptions): Promise<T> {
    return (await send(spec, opts)).body as T;
  }

  async function authorizeDownload(fileId: Id, opts?: CallOptions): Promise<DownloadAuthorization> {
    return await call({ method: 'GET', path: `/api/V1/docs/api-download${query({ file_id: String(fileId) })}`, auth: true }, opts);
  }

  async function search(term: string, opts: SearchOptions = {}, call_: CallOptions = {}): Promise<SearchResponse> {
    try {
      return await call<SearchResponse>({ method: 'POST', path: '/api/V1/stats/api-search', auth: true, json: { search: term, ...opts } }, call_);
    } catch (error) {
      // "No results found" is the API's 404 for an empty result: an empty page here.
      if (error instanceof DocshareApiError && error.status === 404) {
        return { status: 'success', results: [], total: 0, page: opts.page ?? 1, per_page: opts.per_page ?? 20 };
      }
      throw error;
    }
  }

  const uploadsPath = '/api/V1/docs/api-uploads';
  const uploadPath = (uploadId: string): string => `${uploadsPath}/${encodeURIComponent(uploadId)}`;

  async function createUpload(body: CreateUploadRequest, opts?: CallOptions): Promise<CreateUploadResponse> {
    return await call({ method: 'POST', path: uploadsPath, auth: true, write: true, json: body }, opts);
  }
  async function getUpload(uploadId: string, opts?: CallOptions): Promise<UploadSessionResponse> {
    return await call({ method: 'GET', path: uploadPath(uploadId), auth: true }, opts);
  }
  async function completeUpload(uploadId: string, parts?: CompletedPart[], opts?: CallOptions): Promise<CompleteUploadResponse> {
    return await call({ method: 'POST', path: `${uploadPath(uploadId)}/complete`, auth: true, write: true, json: parts === undefined ? {} : { parts } }, opts);
  }
  async function abortUpload(uploadId: string, opts?: CallOptions): Promise<AbortUploadResponse> {
    return await call({ method: 'DELETE', path: uploadPath(uploadId), auth: true, write: true }, opts);
  }

  /** The parts of a session still to send (not received, or received with a size the layout does not give them). */
  const missingParts = (session: Pick<UploadSession, 'received' | 'part_count' | 'part_size' | 'size'>): { todo: number[]; received: Map<number, string> } => {
    const received = new Map<number, string>();
    for (const r of session.received) {
      if (r.part_number <= session.part_count && r.size === partLength(r.part_number, session.size, session.part_size)) received.set(r.part_number, r.etag);
    }
    const todo: number[] = [];
    for (let n = 1; n <= session.part_count; n += 1) if (!received.has(n)) todo.push(n);
    return { todo, received };
  };

  /** Sends what `session` lacks from `source`, then completes it with the etags collected. */
  async function finishSession(
    uploadId: string, session: Pick<UploadSession, 'received' | 'part_count' | 'part_size' | 'size' | 'parts'>,
    source: RangeSource, opts: ResumableOptions & CallOptions,
  ): Promise<CompleteUploadResponse> {
    const { todo, received } = missingParts(session);
    const urls = new Map(session.parts.map((p) => [p.part_number, p.url]));
    const callOpts: CallOptions = opts.signal ? { signal: opts.signal } : {};
    const parts = await sendParts({
      source, partSize: session.part_size, partCount: session.part_count, urls, todo, received,
      parallel: opts.parallel ?? options.parallel ?? DEFAULT_PARALLEL,
      attempts: opts.partAttempts ?? DEFAULT_PART_ATTEMPTS,
      baseDelayMs: baseDelay, userAgent,
      refresh: async () => new Map((await getUpload(uploadId, callOpts)).upload.parts.map((p) => [p.part_number, p.url])),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
      ...(opts.onPartRetry ? { onPartRetry: opts.onPartRetry } : {}),
    });
    return await completeUpload(uploadId, parts, callOpts);
  }

  /**
   * Takes up session `uploadId` with the file's bytes (a path, a Blob or bytes, the same file):
   * sends only the parts the server lacks, then completes. A session already completed answers
   * its file again; one that ended is the server's 409.
   */
  async function resumeUpload(uploadId: string, file: string | Blob | Uint8Array, opts: ResumableOptions & CallOptions = {}): Promise<CompleteUploadResponse> {
    const { upload: session } = await getUpload(uploadId, opts.signal ? { signal: opts.signal } : {});
    if (session.state !== 'pending') return await completeUpload(uploadId, undefined, opts.signal ? { signal: opts.signal } : {});
    const size = typeof file === 'string' ? (await stat(file)).size : undefined;
    const source = rangeSource(file, size);
    if (source === undefined || source.size !== session.size) {
      throw new Error(`upload ${uploadId} is of ${session.size} bytes; the file given has ${source?.size ?? 'an unknown number of'} bytes`);
    }
    return await finishSession(uploadId, session, source, opts);
  }

  /** An upload by the resumable protocol, its session kept on disk for a path (see UploadOptions.resume). */
  async function resumableUpload(fields: CreateUploadRequest, source: RangeSource, filePath: string | undefined, opts: UploadOptions): Promise<UploadResponse> {
    const callOpts: CallOptions = opts.signal ? { signal: opts.signal } : {};
    const dir = opts.stateDir ?? options.uploadStateDir ?? defaultUploadStateDir();
    let identity: UploadIdentity | undefined;
    if (filePath !== undefined) {
      const info = await stat(filePath);
      identity = { path: filePath, size: info.size, mtimeMs: info.mtimeMs, baseUrl };
    }
    const stored = identity === undefined ? undefined : await readUploadState(dir, identity);
    const stateFile = identity === undefined ? undefined : uploadStatePath(dir, identity);
    const forget = async (): Promise<void> => {
      if (identity !== undefined) await removeUploadState(dir, identity);
    };
    /** Errors after which the session cannot be taken up again: the server ended it (or never had it). */
    const ended = (error: unknown): boolean => error instanceof DocshareApiError && [404, 409, 413].includes(error.status);
    /** Sends what the session lacks and completes it; its stored state goes once it is completed or ended. */
    const finish = async (uploadId: string, session: Parameters<typeof finishSession>[1]): Promise<UploadResponse> => {
      try {
        const answer = await finishSession(uploadId, session, source, opts);
        await forget();
        opts.onResumable?.({ kind: 'completed', uploadId, fileId: String(answer.file_id) });
        return answer;
      } catch (error) {
        if (ended(error)) await forget();
        throw error;
      }
    };

    if (opts.resume === true) {
      let session: UploadSession | undefined;
      if (stored === undefined) {
        opts.onResumable?.({ kind: 'restarted', uploadId: undefined, reason: 'none stored' });
      } else {
        try {
          session = (await getUpload(stored.upload_id, callOpts)).upload;
        } catch (error) {
          if (!(error instanceof DocshareApiError && error.status === 404)) throw error;
          opts.onResumable?.({ kind: 'restarted', uploadId: stored.upload_id, reason: 'not found' });
          await forget();
        }
      }
      if (session !== undefined && stored !== undefined) {
        if (session.state === 'completed') {
          const answer = await completeUpload(stored.upload_id, undefined, callOpts);
          await forget();
          opts.onResumable?.({ kind: 'completed', uploadId: stored.upload_id, fileId: String(answer.file_id) });
          return answer;
        }
        if (session.state === 'pending' && session.size !== source.size) {
          await abortUpload(stored.upload_id, callOpts).catch(() => undefined);
          opts.onResumable?.({ kind: 'restarted', uploadId: stored.upload_id, reason: 'changed' });
          await forget();
        } else if (session.state !== 'pending') {
          opts.onResumable?.({ kind: 'restarted', uploadId: stored.upload_id, reason: session.state });
          await forget();
        } else {
          const { received } = missingParts(session);
          opts.onResumable?.({
            kind: 'resumed', uploadId: stored.upload_id, partCount: session.part_count, receivedParts: received.size,
            receivedBytes: [...received.keys()].reduce((n, p) => n + partLength(p, session.size, session.part_size), 0), stateFile,
          });
          return await finish(stored.upload_id, session);
        }
      }
    } else if (stored !== undefined) {
      // Not resumed: the stored session would hold its bytes against the quota until it expires.
      await abortUpload(stored.upload_id, callOpts).catch(() => undefined);
      await forget();
      opts.onResumable?.({ kind: 'discarded', uploadId: stored.upload_id });
    }

    const created = await createUpload(fields, { ...callOpts, ...(opts.idempotencyKey !== undefined ? { idempotencyKey: opts.idempotencyKey } : {}) });
    if (identity !== undefined) {
      await writeUploadState(dir, {
        ...identity, upload_id: created.upload_id, part_size: created.part_size, part_count: created.part_count,
        expires_at: created.expires_at, created_at: new Date().toISOString(),
      });
    }
    opts.onResumable?.({
      kind: 'started', uploadId: created.upload_id, partSize: created.part_size, partCount: created.part_count, expiresAt: created.expires_at, stateFile,
    });
    return await finish(created.upload_id, { ...created, size: source.size, received: [] });
  }

  return {
    baseUrl,
    /** The JWT the client sends (set by register and login). */
    get token(): string | undefined {
      return token;
    },
    setToken(value: string | undefined): void {
      token = value;
    },

    /** Creates an account; the client keeps the returned token. */
    async register(body: RegisterRequest, opts?: CallOptions): Promise<RegisterResponse> {
      const res = await call<RegisterResponse>({ method: 'POST', path: '/api/V1/users/api-register', write: true, json: body }, opts);
      token = res.token;
      return res;
    },

    /** Logs in; the client keeps the returned token. */
    async login(body: LoginRequest, opts?: CallOptions): Promise<LoginResponse> {
      const res = await call<LoginResponse>({ method: 'POST', path: '/api/V1/users/api-login', json: body }, opts);
      token = res.token;
      return res;
    },

    /**
     * Uploads a file with its metadata. Up to `resumableThreshold` (64 MiB) or from a stream: one
     * streamed form POST (Content-Length sent when its size is known). Above it (a path, a Blob or
     * bytes): the resumable protocol, its parts PUT in parallel straight to their URLs, the session
     * kept on disk for a path so that `resume: true` takes it up after an interruption.
     */
    async upload(input: UploadInput, opts: UploadOptions = {}): Promise<UploadResponse> {
      const { file: source, fileName, contentType, size, tags, category_tags, ...rest } = input;
      const file = await openFile(source, {
        ...(fileName !== undefined ? { fileName } : {}),
        ...(contentType !== undefined ? { contentType } : {}),
        ...(size !== undefined ? { size } : {}),
      });
      const fields: Record<string, string | undefined> = { ...rest, tags: list(tags), category_tags: list(category_tags) };
      const total = file.size;
      const threshold = opts.resumableThreshold ?? options.resumableThreshold ?? DEFAULT_RESUMABLE_THRESHOLD;
      const ranged = rangeSource(source, total);
      if (ranged !== undefined && (opts.resume === true || ranged.size > threshold)) {
        // The form's fields as they are (the server checks them, with api-upload's messages).
        const meta: Record<string, string | number> = { file_name: file.fileName, size: ranged.size, content_type: file.contentType };
        for (const [k, v] of Object.entries(fields)) if (v !== undefined) meta[k] = String(v);
        return await resumableUpload(meta as CreateUploadRequest, ranged, typeof source === 'string' ? path.resolve(source) : undefined, opts);
      }
      const res = await call<UploadResponse>({
        method: 'POST', path: '/api/V1/docs/api-upload', auth: true, write: true, replayable: file.replayable,
        body: async () => {
          const multipart = multipartBody(fields, file);
          let loaded = 0;
          opts.onProgress?.({ loaded, total });
          const body = multipart.stream((n) => {
            loaded += n;
            opts.onProgress?.({ loaded, total });
          });
          const headers: Record<string, string> = { 'Content-Type': multipart.contentType };
          if (multipart.length !== undefined) headers['Content-Length'] = String(multipart.length);
          return { body, headers };
        },
      }, opts);
      return res;
    },

    /** Starts a resumable upload: the session and a URL per part (`POST /api/V1/docs/api-uploads`). */
    createUpload,
    /** A resumable upload's state, received parts and fresh URLs of the missing ones. */
    getUpload,
    /** Completes a resumable upload with its parts' etags (absent: every received part): the file. Again: the same file. */
    completeUpload,
    /** Aborts a resumable upload (its parts removed, its quota released). */
    abortUpload,
    resumeUpload,

    /** Authorises a download (counted for the owner): original_file_name and a signed download_url. */
    authorizeDownload,

    /**
     * Downloads a file: authorises it, then fetches download_url (absolute, as the server gives it)
     * to `to`, resuming `<file>.part` with a Range request when one is there.
     */
    async download(fileId: Id, opts: DownloadOptions): Promise<DownloadResult> {
      const auth = await authorizeDownload(fileId, opts);
      const fileName = auth.original_file_name;
      let to = opts.to;
      if (typeof to === 'string') {
        to = await resolveTarget(to, safeFileName(fileName, `file-${fileId}`));
        if (opts.overwrite === false) {
          const exists = await stat(to).then(() => true, () => false);
          if (exists) throw Object.assign(new Error(`${to} exists`), { code: 'EEXIST', path: to });
        }
      }
      opts.onStart?.({ fileName, path: typeof to === 'string' ? to : undefined });
      const result = await downloadContent(auth.download_url, {
        to,
        ...(opts.resume !== undefined ? { resume: opts.resume } : {}),
        ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(options.fetch ? { fetch: options.fetch } : {}),
        headers: { 'User-Agent': userAgent },
      });
      return { ...result, fileName, authorization: auth };
    },

    /** Deletes one of your files. */
    async deleteFile(id: Id, opts?: CallOptions): Promise<DeleteResponse> {
      return await call({ method: 'DELETE', path: '/api/V1/docs/api-delete', auth: true, write: true, json: { id: String(id) } }, opts);
    },

    /** Comments on a file. */
    async comment(fileId: Id, comment: string, opts?: CallOptions): Promise<CommentResponse> {
      return await call({ method: 'POST', path: '/api/V1/docs/api-comment', auth: true, write: true, json: { file_id: String(fileId), comment } }, opts);
    },

    /** Changes one of your files (sale, price, enabled, title, description, tags). */
    async update(id: Id, changes: Omit<UpdateRequest, 'id'>, opts?: CallOptions): Promise<UpdateResponse> {
      return await call({ method: 'POST', path: '/api/V1/docs/api-update', auth: true, write: true, json: { ...changes, id: String(id) } }, opts);
    },

    /**
     * Buys a file that is for sale: the sale and a signed `download_url` to its bytes. A buyer buys
     * a file once: a repeat answers the first sale (message `File already purchased`).
     */
    async purchase(fileId: Id, opts?: CallOptions): Promise<PurchaseResponse> {
      return await call({ method: 'POST', path: '/api/V1/docs/api-purchase', auth: true, write: true, json: { file_id: String(fileId) } }, opts);
    },

    /** Files you bought, newest purchase first, each with a fresh signed `download_url`. */
    async purchases(q: PurchasesQuery = {}, opts?: CallOptions): Promise<PurchasesResponse> {
      return await call({ method: 'GET', path: `/api/V1/users/api-purchases${query(q)}`, auth: true }, opts);
    },

    /** Lists categories. */
    async categories(q: { page?: number; per_page?: number } = {}, opts?: CallOptions): Promise<CategoriesResponse> {
      return await call({ method: 'GET', path: `/api/V1/docs/api-categories${query(q)}`, auth: true }, opts);
    },

    /**
     * Searches (full text, typo tolerant): one page. Options: page, per_page, facets, filters,
     * cursor (a previous page's next_cursor). No match is an empty page, not an error.
     */
    search,

    /**
     * Every match of a search, page after page through next_cursor. The walk trusts the server
     * only so far: a cursor it sent before, or more than `maxPages` pages (default 1000), ends it
     * with a `SearchWalkError` instead of looping for ever.
     */
    async *searchAll(term: string, opts: Omit<SearchOptions, 'cursor' | 'page'> & { maxPages?: number } = {}, call_: CallOptions = {}): AsyncGenerator<SearchResult> {
      const { maxPages = 1000, ...searchOpts } = opts;
      const cursors = new Set<string>();
      let page = await search(term, searchOpts, call_);
      for (let pages = 1; ; pages += 1) {
        yield* page.results;
        const next = page.next_cursor;
        if (next === undefined || page.results.length === 0) return;
        if (cursors.has(next)) throw new SearchWalkError(`the server sent cursor ${JSON.stringify(next.slice(0, 40))} twice`);
        if (pages >= maxPages) throw new SearchWalkError(`more than ${maxPages} pages (maxPages)`);
        cursors.add(next);
        page = await search(term, { ...searchOpts, cursor: next }, call_);
      }
    },

    /** Your statistics. */
    async stats(opts?: CallOptions): Promise<StatsResponse> {
      return await call({ method: 'POST', path: '/api/V1/stats/api-stats', auth: true }, opts);
    },

    /**
     * Your statistics per UTC day from `from` to `to` (every day, zeros included) and their totals:
     * views, unique viewers, downloads, unique downloaders, sales, comments.
     */
    async dailyStats(q: DailyStatsInput, opts?: CallOptions): Promise<DailyStatsResponse> {
      const { from, to, fileId } = q;
      return await call({ method: 'GET', path: `/api/V1/stats/api-daily${query({ from, to, file_id: fileId === undefined ? undefined : String(fileId) })}`, auth: true }, opts);
    },

    /** Your files ranked by a metric over the last days, best first. */
    async topFiles(q: TopFilesInput = {}, opts?: CallOptions): Promise<TopFilesResponse> {
      return await call({ method: 'GET', path: `/api/V1/stats/api-top${query({ metric: q.metric, days: q.days, limit: q.limit })}`, auth: true }, opts);
    },

    /** Everyone's visible files ranked by unique viewers over the last hours (ties: views). */
    async trending(q: TrendingInput = {}, opts?: CallOptions): Promise<TrendingResponse> {
      const category = q.categoryId === undefined ? undefined : String(q.categoryId);
      return await call({ method: 'GET', path: `/api/V1/stats/api-trending${query({ hours: q.hours, category_id: category, limit: q.limit })}`, auth: true }, opts);
    },

    /** Files of a user (default: you), newest first. */
    async files(q: Omit<FilesQuery, 'user_id'> & { user_id?: Id } = {}, opts?: CallOptions): Promise<FilesResponse> {
      const { user_id, ...paging } = q;
      return await call({ method: 'GET', path: `/api/V1/users/api-files${query({ user_id: user_id === undefined ? undefined : String(user_id), ...paging })}`, auth: true }, opts);
    },

    /** Comments received on your files, newest first. */
    async comments(q: CommentsQuery = {}, opts?: CallOptions): Promise<CommentsResponse> {
      return await call({ method: 'POST', path: `/api/V1/users/api-comments${query(q)}`, auth: true }, opts);
    },

    /**
     * Your webhook endpoints (create, list, get, update, remove, rotateSecret, test, deliveries,
     * deadLetters, replay): docshare POSTs signed events about your files to them. `verifyWebhook`
     * checks a delivery on the receiving side.
     */
    webhooks: webhooksApi(call),

    /**
     * Leaving: `export()` your account (a ZIP, `exportStatus` until ready, `downloadExport`), or
     * `erase({password})` it for good (`erasureStatus` follows it).
     */
    account: accountApi(call, async (url, o) => await downloadContent(url, {
      ...o, ...(options.fetch ? { fetch: options.fetch } : {}), headers: { 'User-Agent': userAgent },
    })),

    /** Sends any request through the client (token, retries, errors); resolves with the 2xx answer. */
    send,
  };
}
