// Exit codes: what went wrong, for scripts.
import { DocshareApiError, DocshareNetworkError } from '@docshare/client';

export const EXIT = {
  ok: 0,
  /** The API refused the request: validation (400), forbidden (403), conflict (409), too large (413)... */
  apiError: 1,
  /** Bad command line: unknown command or option, missing or invalid argument. */
  usage: 2,
  /** Not logged in, token missing, invalid or expired, wrong email or password (401). */
  auth: 3,
  /** The file, user, category or webhook does not exist (404). */
  notFound: 4,
  /** The server failed (5xx) or could not be reached. */
  server: 5,
  /** Rate limited (429), still after waiting for Retry-After. */
  rateLimited: 6,
  /** A local file problem: cannot read the upload, the download's target exists, cannot write. */
  localFile: 7,
  /** A walk stopped before its end: `search --all` or `webhooks deliveries --all` reached --max-pages, or search's results outgrew what --json holds. */
  incomplete: 8,
  /** Interrupted (Ctrl-C). */
  interrupted: 130,
} as const;

export const EXIT_HELP = `Exit codes:
  0    success
  1    the API refused the request (validation 400, forbidden 403, conflict 409, too large 413, ...)
  2    usage error: unknown command or option, missing or invalid argument
  3    authentication: not logged in, token rejected (401), wrong email or password
  4    not found (404): no such file, user, category or webhook
  5    server error (5xx), the server could not be reached, or its answer cannot be used
       (over 64 MiB, a search cursor it had already sent)
  6    rate limited (429), still after waiting as the server asked
  7    local file error: cannot read the file to upload, the download target exists, cannot write
  8    incomplete: search --all or webhooks deliveries --all stopped at --max-pages (or search at what --json
       holds); what was printed is a prefix
  130  interrupted (Ctrl-C); a download keeps its .part file, a resumable upload its session, to resume`;

/** A usage error (exit 2), with the help of the command it concerns. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
  }
}

/** An error the CLI itself decides, with its exit code. */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly code: number;
  constructor(message: string, code: number) {
    super(message);
    this.code = code;
  }
}

/** `ResponseTooLargeError`'s code (libs/client/src/request.ts), found however deep the SDK wrapped it. */
const RESPONSE_TOO_LARGE = 'ERR_DOCSHARE_RESPONSE_TOO_LARGE';

/** The SDK's "answer too large" error behind `error` (the SDK reports it as the cause of a network error), if that is what it is. */
export function responseTooLarge(error: unknown): Error | undefined {
  let e: unknown = error;
  for (let depth = 0; depth < 5 && e instanceof Error; depth += 1, e = e.cause) {
    if ((e as { code?: unknown }).code === RESPONSE_TOO_LARGE) return e;
  }
  return undefined;
}

/** The exit code of an error thrown while running a command. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError) return EXIT.usage;
  if (error instanceof CliError) return error.code;
  if (error instanceof DocshareApiError) {
    if (error.status === 401) return EXIT.auth;
    if (error.status === 404) return EXIT.notFound;
    if (error.status === 429) return EXIT.rateLimited;
    if (error.status >= 500) return EXIT.server;
    return EXIT.apiError;
  }
  if (error instanceof DocshareNetworkError) return EXIT.server;
  if (error instanceof Error && error.name === 'AbortError') return EXIT.interrupted;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code) && (error as NodeJS.ErrnoException).path !== undefined) return EXIT.localFile;
  if (code === 'EEXIST' || code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') return EXIT.localFile;
  return EXIT.server;
}
