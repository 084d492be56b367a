import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, STATUS_CODES, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { M } from '@docshare/contracts';
import { clientErrorMessage, closeEarly } from './errors.ts';
import { ConfigError, intVar, optionalIntVar, optionalPortVar, readConfig, stringVar } from './config.ts';
import { attachUploadSlots, defaultTransferLimits, makeUploadSlots, stopWithServer, watchBodies, type TransferLimits } from './transfers.ts';

/**
 * How long and how many connections a server keeps (each `HTTP_*` variable of the README). A public
 * port meets clients that trickle headers (slowloris), stall an upload or a download, or open
 * sockets by the thousand: every one of them is bounded here, and none bounds honest traffic.
 */
export interface HttpLimits {
  /** Time from a request's first byte to its last header line. */
  headersTimeoutMs: number;
  /** A socket that moves no byte either way for this long ends (a stalled upload, an unread download). */
  idleTimeoutMs: number;
  /** Total time of a request on a route that is not a transfer (uploads and file content are bounded by idle time instead). */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept for the next request. */
  keepAliveTimeoutMs: number;
  /** Open connections beyond which new ones are refused (kept below the process's file descriptor limit). */
  maxConnections: number;
  /** Pace and deadline of request bodies, caps on uploads in flight (default: `defaultTransferLimits`). */
  transfers?: TransferLimits;
}

/** Descriptors kept for everything else a process opens (log, spool and data files, database and broker clients). */
const RESERVED_DESCRIPTORS = 256;
export const MAX_CONNECTIONS_CAP = 10_000;
const DESCRIPTORS_PER_CONNECTION = 2;

/** The soft limit of open files of this process (Linux), if it can be read. */
const openFileLimit = (): number | undefined => {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line?.[1] === undefined ? undefined : Number(line[1]);
  } catch {
    return undefined;
  }
};

/**
 * 10,000 connections, or fewer when the descriptor limit would run out first (which locks out every
 * client). Each connection is budgeted two descriptors: its socket, and what a request on it may
 * hold while the client goes at its own pace (an upload's spool file, a file being served, the
 * gateway's connection to a service).
 */
export const defaultMaxConnections = (fileLimit = openFileLimit()): number =>
  fileLimit === undefined ? MAX_CONNECTIONS_CAP
    : Math.max(16, Math.min(MAX_CONNECTIONS_CAP, Math.floor((fileLimit - RESERVED_DESCRIPTORS) / DESCRIPTORS_PER_CONNECTION)));

/** The defaults, with the reason for each in the README's configuration table. */
export const DEFAULT_HTTP_LIMITS: Omit<HttpLimits, 'maxConnections'> = {
  headersTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 65_000,
};

const TRANSFER_DEFAULTS = defaultTransferLimits(MAX_CONNECTIONS_CAP);

/** The HTTP limits every service reads, and where it serves its metrics (README: configuration). */
export const HTTP_VARS = {
  HTTP_HEADERS_TIMEOUT_MS: intVar(DEFAULT_HTTP_LIMITS.headersTimeoutMs, 1),
  HTTP_BODY_IDLE_TIMEOUT_MS: intVar(DEFAULT_HTTP_LIMITS.idleTimeoutMs, 1),
  HTTP_REQUEST_TIMEOUT_MS: intVar(DEFAULT_HTTP_LIMITS.requestTimeoutMs, 1),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: intVar(DEFAULT_HTTP_LIMITS.keepAliveTimeoutMs, 1),
  HTTP_MAX_CONNECTIONS: intVar(defaultMaxConnections(), 1),
  HTTP_BODY_MIN_BYTES_PER_SECOND: intVar(TRANSFER_DEFAULTS.minBytesPerSecond, 0),
  HTTP_BODY_RATE_GRACE_MS: intVar(TRANSFER_DEFAULTS.graceMs, 1),
  HTTP_BODY_RATE_WINDOW_MS: intVar(TRANSFER_DEFAULTS.windowMs, 1),
  HTTP_BODY_DEADLINE_MS: intVar(TRANSFER_DEFAULTS.deadlineMs, 1),
  /** Default: half of HTTP_MAX_CONNECTIONS. */
  HTTP_MAX_UPLOADS: optionalIntVar(0),
  HTTP_MAX_UPLOADS_PER_USER: intVar(TRANSFER_DEFAULTS.maxUploadsPerUser, 0),
  /**
   * The internal port of `GET /metrics` (and /healthz, /readyz): set, the service serves its
   * metrics there and never on its main port; unset, the gateway and `npm start` serve none, and
   * an internal service keeps them on its own port (docs/observability.md).
   */
  METRICS_PORT: optionalPortVar(),
  /** The interface of the metrics listener: loopback unless told otherwise (0.0.0.0 in a container network). */
  METRICS_HOST: stringVar('127.0.0.1'),
};

/** Where a service serves its metrics: `METRICS_PORT` on `METRICS_HOST`. */
export interface MetricsListen {
  port: number;
  host: string;
}

/**
 * The metrics listener from the environment, or undefined when `METRICS_PORT` is unset. Throws a
 * ConfigError on a bad value, or when it is the service's own port (`mainPort`).
 */
export const metricsListenOf = (env: NodeJS.ProcessEnv, mainPort?: number): MetricsListen | undefined => {
  const read = readConfig({ METRICS_PORT: HTTP_VARS.METRICS_PORT, METRICS_HOST: HTTP_VARS.METRICS_HOST }, env);
  if (read.METRICS_PORT === undefined) return undefined;
  if (mainPort !== undefined && read.METRICS_PORT === mainPort) {
    throw new ConfigError([`METRICS_PORT must differ from the service's PORT (${mainPort}): metrics are never served on the main port`]);
  }
  return { port: read.METRICS_PORT, host: read.METRICS_HOST };
};

/** The HTTP limits from the environment (`HTTP_HEADERS_TIMEOUT_MS`, ...); throws a ConfigError on a bad value. */
export const httpLimitsOf = (env: NodeJS.ProcessEnv): HttpLimits => {
  const read = readConfig(HTTP_VARS, env);
  return {
    headersTimeoutMs: read.HTTP_HEADERS_TIMEOUT_MS,
    idleTimeoutMs: read.HTTP_BODY_IDLE_TIMEOUT_MS,
    requestTimeoutMs: read.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeoutMs: read.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    maxConnections: read.HTTP_MAX_CONNECTIONS,
    transfers: {
      minBytesPerSecond: read.HTTP_BODY_MIN_BYTES_PER_SECOND,
      graceMs: read.HTTP_BODY_RATE_GRACE_MS,
      windowMs: read.HTTP_BODY_RATE_WINDOW_MS,
      deadlineMs: read.HTTP_BODY_DEADLINE_MS,
      maxUploads: read.HTTP_MAX_UPLOADS ?? defaultTransferLimits(read.HTTP_MAX_CONNECTIONS).maxUploads,
      maxUploadsPerUser: read.HTTP_MAX_UPLOADS_PER_USER,
    },
  };
};

/** The response a socket in flight carries (Node's own field; what its default clientError handler checks). */
const responseOn = (socket: Socket): ServerResponse | undefined =>
  (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;

/** The status Node itself would answer a request it cannot parse with. */
const clientErrorStatus = (error: NodeJS.ErrnoException): number => {
  if (error.code === 'HPE_HEADER_OVERFLOW') return 431;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  if (error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return 413;
  return 400;
};

/**
 * Answers what Node's parser refuses (a malformed request line or header, headers over the size
 * limit, headers that take longer than `headersTimeoutMs`) in the spec's envelope instead of Node's
 * empty body, then closes the connection: after a parse error the stream cannot be trusted.
 */
const onClientError = (logger: Logger | undefined) => (error: NodeJS.ErrnoException, socket: Socket): void => {
  const response = responseOn(socket);
  if (error.code === 'ECONNRESET' || !socket.writable || response?.headersSent === true) {
    socket.destroy();
    return;
  }
  const status = clientErrorStatus(error);
  logger?.info({ code: error.code, status }, 'unreadable request');
  writeRawError(socket, status, clientErrorMessage(status));
};

/** On every answer of every listener: content is never sniffed into another type (a JSON answer into HTML). */
export const NOSNIFF = ['X-Content-Type-Options', 'nosniff'] as const;

/** Writes an error envelope straight to a socket no request owns, then closes it. */
const writeRawError = (socket: Socket, status: number, message: string, extraHeaders: string[] = []): void => {
  const body = JSON.stringify({ status: 'error', message });
  socket.end([
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Bad Request'}`,
    'Content-Type: application/json; charset=utf-8',
    'Cache-Control: no-store',
    `${NOSNIFF[0]}: ${NOSNIFF[1]}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${randomUUID()}`,
    ...extraHeaders,
    'Connection: close',
    '', body,
  ].join('\r\n'));
  // A client that never reads its answer does not keep the socket either.
  socket.setTimeout(1_000, () => socket.destroy());
};

/**
 * Starts an HTTP server with `limits` and resolves once it listens; returns it and the bound port.
 * Node's own total request timeout stays off (it would cut long uploads and downloads); the
 * gateway bounds the total time of other routes itself (`requestDeadline`). Every request body is
 * held to the pace and deadline of `limits.transfers` (a JSON 408 otherwise), and its upload
 * slots are those of this server (`uploadSlot`, transfers.ts).
 */
export const listen = async (
  handler: RequestListener, port: number, host: string, limits: HttpLimits = httpLimitsOf({}), logger?: Logger,
): Promise<{ server: Server; port: number }> => {
  const transfers = limits.transfers ?? defaultTransferLimits(limits.maxConnections);
  const bodies = watchBodies(transfers, (res) => {
    closeEarly(res);
    answerRaw(res, 408);
  }, logger);
  const uploads = makeUploadSlots(transfers);
  const server = createServer({
    // Node would answer a request without Host itself, with an empty 400: answered in the envelope below.
    requireHostHeader: false,
    requestTimeout: 0,
    headersTimeout: limits.headersTimeoutMs,
    // Node checks header deadlines on this interval (30 s by default, which would triple a 10 s bound).
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
    keepAliveTimeout: limits.keepAliveTimeoutMs,
  }, (req, res) => {
    // Every answer of every route, whoever makes it (an error, a 304, a preflight, a proxied
    // service's answer, a static file): a browser never guesses a type the server did not send.
    res.setHeader(...NOSNIFF);
    bodies.watch(req, res);
    attachUploadSlots(req, uploads);
    if (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.headers.host === undefined) {
      // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400.
      return answerRaw(res, 400);
    }
    handler(req, res);
  });
  // Any Expect but 100-continue: Node would answer an empty 417.
  server.on('checkExpectation', (_req, res: ServerResponse) => answerRaw(res, 417));
  server.timeout = limits.idleTimeoutMs;
  server.maxConnections = limits.maxConnections;
  server.on('clientError', onClientError(logger));
  server.on('timeout', onIdle);
  server.on('connect', onConnect);
  stopWithServer(server, bodies);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : port };
};

/** A JSON error answered outside the application's routes (before them, or after a stall); keeps a request id already set. */
const answerRaw = (res: ServerResponse, status: number): void => {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader(...NOSNIFF);
  if (!res.hasHeader('X-Request-Id')) res.setHeader('X-Request-Id', randomUUID());
  res.setHeader('Connection', 'close');
  res.end(JSON.stringify({ status: 'error', message: clientErrorMessage(status) }));
};

/** CONNECT (a proxy tunnel) is no method of this API: 405 in the envelope, then close. */
const onConnect = (_req: unknown, socket: Socket): void => {
  socket.on('error', () => {});
  writeRawError(socket, 405, M.invalidMethod, ['Allow: GET, HEAD, POST, DELETE']);
};

/**
 * A socket idle for `idleTimeoutMs`: a request whose body stalled gets a JSON 408 if nothing was
 * answered yet; anything else (an unread download, a response half sent) is cut.
 */
const onIdle = (socket: Socket): void => {
  const response = responseOn(socket);
  if (response !== undefined && !response.headersSent && !response.req.complete && socket.writable) {
    closeEarly(response);
    answerRaw(response, 408);
    return;
  }
  // A request the server is still working on is not idle on the client's side: its deadline, if
  // any, bounds it; the socket's timer restarts with the answer's first byte.
  if (response !== undefined && !response.headersSent && response.req.complete) return;
  socket.destroy();
};

/**
 * Stops accepting connections and resolves once in-flight requests have finished. Keep-alive
 * connections (the gateway's pool to every service) are closed as soon as they fall idle, and
 * whatever is still open after `drainMs` is closed outright.
 */
export const closeServer = (server: Server, drainMs = 10_000): Promise<void> => new Promise((resolve) => {
  const sweep = setInterval(() => server.closeIdleConnections(), 100);
  const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
  server.close(() => {
    clearInterval(sweep);
    clearTimeout(deadline);
    resolve();
  });
  server.closeIdleConnections();
});

/** Express `trust proxy` from an environment value: `true`/`false`, a hop count, or addresses/subnets. */
export const trustProxyOf = (raw: string | undefined): boolean | number | string | undefined => {
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  return /^\d+$/.test(raw) ? Number(raw) : raw;
};

/**
 * Graceful SIGTERM/SIGINT: runs `steps` in order (stop accepting, finish in-flight work, commit
 * offsets, close clients), then exits 0; exits 1 if they take longer than `graceMs`.
 */
export const exitGracefully = (logger: Logger, steps: (() => Promise<void>)[], graceMs = 20_000): void => {
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, graceMs).unref();
    void (async () => {
      for (const step of steps) {
        try {
          await step();
        } catch (err) {
          logger.error({ err }, 'shutdown step failed');
        }
      }
      logger.info('stopped');
      process.exit(0);
    })();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
};

/** `PUBLIC_BASE_URL` (decisions §13), defaulting to `http://localhost:<port>`, without a trailing slash. */
export const publicBaseUrlOf = (env: NodeJS.ProcessEnv, port: number): string =>
  (env.PUBLIC_BASE_URL || `http://localhost:${port}`).replace(/\/+$/, '');
