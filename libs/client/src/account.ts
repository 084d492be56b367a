// `client.account`: leaving (issue 24): an export of everything the account holds (a ZIP built in
// the background, fetched through a signed link), and the erasure of the account. Calls go through
// the client's `call` (token, retries, DocshareApiError), the ZIP through downloadContent (a file
// through `<file>.part`, resumed with Range, or a stream), as the file downloads do.
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ContentResult, Progress } from './download.ts';
import type { JsonRequest, SuccessBody } from './types.ts';

/** `{password}`: asked again, since an erasure cannot be undone. */
export type EraseAccountInput = JsonRequest<'eraseAccount'>;
/** `erasure_id`, and `status_url`: a signed link to its state, needing no token (the account's stop working at once). */
export type EraseAccountResponse = SuccessBody<'eraseAccount'>;
/** `state` (pending, done), `files_deleted`, `comments_redacted`. */
export type ErasureStatusResponse = SuccessBody<'erasureStatus'>;
/** The `export_id` to ask about. */
export type ExportAccountResponse = SuccessBody<'exportAccount'>;
export type ExportStatusResponse = SuccessBody<'exportStatus'>;
/** `{state: 'pending'}`, or `{state: 'ready', download_url, sha256, bytes, expires_at}`. */
export type AccountExport = ExportStatusResponse['export'];
/** An export once built. */
export type ReadyExport = Extract<AccountExport, { state: 'ready' }>;

export interface DownloadExportOptions {
  /**
   * A file path (written through `<path>.part`, which a later call resumes; renamed when whole) or a
   * stream (left open). Absent: the ZIP's bytes are answered in `data` (it may be large: prefer a path).
   */
  to?: string | Writable;
  resume?: boolean;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
}

export interface ExportDownload extends ContentResult {
  /** The ZIP, when no `to` was given. */
  data?: Buffer;
}

type Opts = { signal?: AbortSignal; retries?: number };
/** The client's call (client.ts), as far as this module needs it. */
export type AccountCall = <T>(spec: { method: 'GET' | 'POST'; path: string; auth: boolean; json?: unknown }, opts?: Opts) => Promise<T>;
/** The client's content fetch (download.ts downloadContent with the client's fetch and User-Agent). */
export type AccountContent = (url: string, opts: { to: string | Writable } & Omit<DownloadExportOptions, 'to'>) => Promise<ContentResult>;

const USERS = '/api/V1/users';

/** The `account` namespace of a client. */
export function accountApi(call: AccountCall, content: AccountContent) {
  return {
    /**
     * Erases your account, for good: it stops working at once (this client's token included), then
     * every file is deleted and your personal data made unreadable, in the background; `status_url`
     * (see `erasureStatus`) says when it is done. Asked again: the same `erasure_id`.
     */
    async erase(input: EraseAccountInput, opts?: Opts): Promise<EraseAccountResponse> {
      return await call({ method: 'POST', path: `${USERS}/api-erase`, auth: true, json: { password: input.password } }, opts);
    },
    /** An erasure's state, from its `status_url` (absolute and signed, as the server gave it; no token). */
    async erasureStatus(statusUrl: string, opts?: Opts): Promise<ErasureStatusResponse> {
      return await call({ method: 'GET', path: statusUrl, auth: false }, opts);
    },
    /** Starts an export of your account (a ZIP of your data and files, kept 7 days): its `export_id`. */
    async export(opts?: Opts): Promise<ExportAccountResponse> {
      return await call({ method: 'POST', path: `${USERS}/api-export`, auth: true }, opts);
    },
    /** An export's state: pending, or ready with its signed `download_url`, `sha256`, `bytes` and `expires_at`. */
    async exportStatus(exportId: string, opts?: Opts): Promise<ExportStatusResponse> {
      return await call({ method: 'GET', path: `${USERS}/api-export?${new URLSearchParams({ export_id: exportId }).toString()}`, auth: true }, opts);
    },
    /**
     * Asks for the export's state every `intervalMs` (default 1 s) until it is ready; resolves with
     * it (its `download_url`, `sha256`, `bytes`, `expires_at`). `onPending` is told after each
     * pending answer; `signal` ends the wait. An unknown or expired export rejects (404).
     */
    async waitForExport(exportId: string, opts: { intervalMs?: number; signal?: AbortSignal; onPending?: () => void } = {}): Promise<ReadyExport> {
      const callOpts: Opts = opts.signal ? { signal: opts.signal } : {};
      for (;;) {
        const { export: state } = await this.exportStatus(exportId, callOpts);
        if (state.state === 'ready') return state;
        opts.onPending?.();
        await sleep(opts.intervalMs ?? 1_000, undefined, opts.signal ? { signal: opts.signal } : {});
      }
    },
    /**
     * Fetches an export's ZIP from its `download_url` (absolute and signed, as the server gave it; no
     * token): to a file (resumable), to a stream, or, without `to`, into memory (`data`).
     */
    async downloadExport(downloadUrl: string, opts: DownloadExportOptions = {}): Promise<ExportDownload> {
      const { to, ...rest } = opts;
      if (to !== undefined) return await content(downloadUrl, { ...rest, to });
      const chunks: Buffer[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          chunks.push(chunk);
          done();
        },
      });
      const result = await content(downloadUrl, { ...rest, to: sink });
      return { ...result, data: Buffer.concat(chunks) };
    },
  };
}
