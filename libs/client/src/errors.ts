// What the typed client throws.
import type { RawResponse } from './request.ts';

/** Seconds of a `Retry-After` header (delta-seconds or an HTTP date), or undefined. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/** The API answered with an error (any non-2xx status). */
export class DocshareApiError extends Error {
  override readonly name = 'DocshareApiError';
  /** The HTTP status. */
  readonly status: number;
  /** `X-Request-Id` of the answer: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds to wait before trying again (`Retry-After`), when the server said. */
  readonly retryAfter: number | undefined;
  /** The parsed body (the `{status: "error", message}` envelope), when it was JSON. */
  readonly body: unknown;
  readonly headers: Headers;

  constructor(res: RawResponse) {
    const envelope = res.body as { message?: unknown } | undefined;
    const message = typeof envelope?.message === 'string' ? envelope.message
      : `HTTP ${res.status}${res.text === '' ? '' : `: ${res.text.slice(0, 200)}`}`;
    super(message);
    this.status = res.status;
    this.requestId = res.headers.get('x-request-id') ?? undefined;
    this.retryAfter = parseRetryAfter(res.headers.get('retry-after'));
    this.body = res.body;
    this.headers = res.headers;
  }
}

/** No answer came from the server (refused, reset, DNS, timeout) after the retries allowed. */
export class DocshareNetworkError extends Error {
  override readonly name = 'DocshareNetworkError';
  readonly url: string;

  constructor(url: string, cause: unknown) {
    const detail = describeCause(cause);
    super(`cannot reach ${new URL(url).origin}: ${detail}`, { cause });
    this.url = url;
  }
}

/** A `searchAll` walk the server would not let end: a cursor sent twice, or past `maxPages`. */
export class SearchWalkError extends Error {
  override readonly name = 'SearchWalkError';
}

/** The innermost useful message of a fetch failure (`fetch failed` hides the socket error). */
export function describeCause(error: unknown): string {
  let e: unknown = error;
  let message = error instanceof Error ? error.message : String(error);
  for (let depth = 0; depth < 5 && e instanceof Error && e.cause !== undefined; depth += 1) {
    e = e.cause;
    if (e instanceof Error) {
      const code = (e as { code?: unknown }).code;
      message = typeof code === 'string' && !e.message.includes(code) ? `${code} ${e.message}` : e.message;
    } else if (e !== undefined) {
      message = String(e);
    }
  }
  // An AggregateError (every address refused) has an empty message; its code says it.
  if (message === '' && e instanceof Error) message = String((e as { code?: unknown }).code ?? e.name);
  return message;
}
