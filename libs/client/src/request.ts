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
}

export interface RawResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or undefined when the body is empty or not JSON. */
  body: unknown;
  /** The raw body text. */
  text: string;
}

/** Reads a fetch Response whole: its text, and the JSON in it when there is some. */
export async function readResponse(res: Response): Promise<RawResponse> {
  const text = await res.text();
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

export const isAbsoluteUrl = (s: string): boolean => /^https?:\/\//i.test(s);

/** `baseUrl` + `path`, or `path` alone when it is absolute. */
export function resolveUrl(baseUrl: string | undefined, path: string): string {
  if (isAbsoluteUrl(path)) return path;
  if (baseUrl === undefined) throw new TypeError(`a relative path (${path}) needs a baseUrl`);
  return baseUrl.replace(/\/+$/, '') + path;
}

/** The fetch init of a request (with `duplex: 'half'` for a streamed body). */
export function buildInit(req: RawRequest): RequestInit {
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
 * status; rejects only when no answer came (connection refused or reset, abort).
 */
export async function request(req: RawRequest): Promise<RawResponse> {
  const doFetch = req.fetch ?? fetch;
  const res = await doFetch(resolveUrl(req.baseUrl, req.path), buildInit(req));
  return await readResponse(res);
}
