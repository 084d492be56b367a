// The low-level request: one HTTP exchange with the API, never throwing on an HTTP status, never
// retrying. The typed client is built on it; the conformance tests use it as it is.

/** A request body fetch accepts. */
export type Body = NonNullable<RequestInit['body']>;

/** The `fetch` the client uses (the global one unless given). */
export type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

export interface RawRequest {
  /** Base URL of the API (`http://localhost:8080`); ignored when `path` is an absolute URL. */
  baseUrl?: string;
  method: string;
  /** A path under `baseUrl` (`/api/V1/stats/api-stats`, query included) or an absolute URL. */
  path: string;
  /** Sent as `X-Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as a JSON body with `Content-Type: application/json` (ignored when `body` is given). */
  json?: unknown;
  /** Sent as it is (a string, bytes, FormData or a stream); wins over `json`. */
  body?: Body;
  /** Added last: they win over the headers `token` and `json` set. */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** `manual` (the default here) hands redirects back instead of following them. */
  redirect?: RequestInit['redirect'];
  fetch?: FetchLike;
  /** The most bytes of the answer's body read (default `MAX_RESPONSE_BYTES`); past it the request rejects. */
  maxResponseBytes?: number;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or undefined when the body is empty or not JSON. */
  body: unknown;
  /** The raw body text. */
  text: string;
}

/**
 * The most bytes of an answer's body the client reads (64 MiB): an API answer is a page of at
 * most 100 results, far below it. A server that sends more (broken, or hostile: a never-ending
 * body) is refused once the bound is read, so memory stays bounded whatever it sends. File
 * contents are not read this way: downloads stream to disk, unbounded (download.ts).
 */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** `ResponseTooLargeError`'s code, for callers that cannot import the class. */
export const RESPONSE_TOO_LARGE = 'ERR_DOCSHARE_RESPONSE_TOO_LARGE';

/** An answer's body passed the bound: it was not read to its end (and its connection was cut). */
export class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
  readonly code = RESPONSE_TOO_LARGE;
  /** The bound, in bytes. */
  readonly limit: number;
  constructor(limit: number) {
    super(`the server's answer is larger than ${limit % 1048576 === 0 ? `${limit / 1048576} MiB` : `${limit} bytes`}: refused`);
    this.limit = limit;
  }
}

/** The body's bytes as text, reading at most `maxBytes` of them (decoded bytes: a compressed body is bounded too). */
async function boundedText(res: Response, maxBytes: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw new ResponseTooLargeError(maxBytes);
  }
  if (res.body === null) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new ResponseTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  // As Response.text() decodes: UTF-8, a BOM dropped, malformed bytes replaced.
  return new TextDecoder().decode(Buffer.concat(chunks, size));
}

/**
 * Reads a fetch Response whole: its text, and the JSON in it when there is some. Rejects with
 * `ResponseTooLargeError` once the body passes `maxBytes`, having read no more than that.
 */
export async function readResponse(res: Response, maxBytes = MAX_RESPONSE_BYTES): Promise<RawResponse> {
  const text = await boundedText(res, maxBytes);
  let body: unknown = undefined;
  if (text.length > 0) {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  return { status: res.status, headers: res.headers, body, text };
}

const isAbsoluteUrl = (s: string): boolean => /^https?:\/\//i.test(s);

/** `baseUrl` + `path`, or `path` alone when it is absolute. */
export function resolveUrl(baseUrl: string | undefined, path: string): string {
  if (isAbsoluteUrl(path)) return path;
  if (baseUrl === undefined) throw new TypeError(`a relative path (${path}) needs a baseUrl`);
  return baseUrl.replace(/\/+$/, '') + path;
}

/** The fetch init of a request (with `duplex: 'half'` for a streamed body). */
function buildInit(req: RawRequest): RequestInit {
  const headers: Record<string, string> = {};
  if (req.token !== undefined) headers['X-Authorization'] = `Bearer ${req.token}`;
  let payload: Body | undefined;
  if (req.body !== undefined) {
    payload = req.body;
  } else if (req.json !== undefined) {
    payload = JSON.stringify(req.json);
    headers['Content-Type'] = 'application/json';
  }
  Object.assign(headers, req.headers ?? {});
  const init: RequestInit & { duplex?: 'half' } = { method: req.method, headers, body: payload, redirect: req.redirect ?? 'manual' };
  if (req.signal !== undefined) init.signal = req.signal;
  if (payload instanceof ReadableStream) init.duplex = 'half';
  return init;
}

/**
 * One HTTP exchange. Resolves with the status, headers, parsed JSON body and text whatever the
 * status; rejects only when no answer came (connection refused or reset, abort) or when the
 * answer's body passes `maxResponseBytes` (`ResponseTooLargeError`).
 */
export async function request(req: RawRequest): Promise<RawResponse> {
  const doFetch = req.fetch ?? fetch;
  const res = await doFetch(resolveUrl(req.baseUrl, req.path), buildInit(req));
  return await readResponse(res, req.maxResponseBytes);
}
