import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { M } from '@docshare/contracts';
import { RETRY_AFTER_SECONDS, sendError, sendUnavailable } from './errors.ts';

/*
 * What a request body may cost a process (docs/ops.md, "Transfers"). A body in flight holds the
 * client's socket and a second descriptor (the upload's spool file, the gateway's connection to
 * the service), for as long as the client takes: so bodies must keep a minimum pace, finish
 * within a deadline, and uploads are counted, per process and per user, below the connection
 * budget (a normal request always finds a connection).
 */

export interface TransferLimits {
  /** A body must average at least this many bytes per second (0: no minimum)... */
  minBytesPerSecond: number;
  /** ...once the server has waited this long for it... */
  graceMs: number;
  /** ...over the last this long of waiting (a short pause is fine, a trickle is not). */
  windowMs: number;
  /** Total time from a request's headers to its body's last byte, whatever the pace. */
  deadlineMs: number;
  /** Uploads in flight in one process; more answer 503 with Retry-After (0: no cap). */
  maxUploads: number;
  /** Uploads in flight of one user in one process; more answer 429 with Retry-After (0: no cap). */
  maxUploadsPerUser: number;
}

/** The defaults (README's configuration table); uploads may take half the connections. */
export const defaultTransferLimits = (maxConnections: number): TransferLimits => ({
  minBytesPerSecond: 1024,
  graceMs: 10_000,
  windowMs: 30_000,
  deadlineMs: 3_600_000,
  maxUploads: Math.max(1, Math.floor(maxConnections / 2)),
  maxUploadsPerUser: 8,
});


/** Cumulative progress of one body: time the server waited for the client, and bytes received meanwhile. */
export interface BodyProgress { waitedMs: number; bytes: number }

export type BodyVerdict = 'ok' | 'too_slow' | 'deadline';

/**
 * Whether a body still arriving may go on: past the deadline (wall time since its headers) it may
 * not; after the grace, its pace over the last `windowMs` of waiting (or all of it, while shorter)
 * must reach the minimum. `samples` are its progress, oldest first, starting at {0, 0}; time the
 * server itself did not read (its own backpressure) is not in `waitedMs`, so never blamed on the client.
 */
export const bodyVerdict = (limits: TransferLimits, elapsedMs: number, samples: readonly BodyProgress[]): BodyVerdict => {
  if (elapsedMs >= limits.deadlineMs) return 'deadline';
  const now = samples[samples.length - 1];
  if (now === undefined || limits.minBytesPerSecond <= 0 || now.waitedMs < limits.graceMs) return 'ok';
  let base = samples[0] ?? now;
  for (const sample of samples) {
    if (sample.waitedMs > now.waitedMs - limits.windowMs) break;
    base = sample;
  }
  const span = now.waitedMs - base.waitedMs;
  if (span <= 0) return 'ok';
  return (now.bytes - base.bytes) * 1000 < limits.minBytesPerSecond * span ? 'too_slow' : 'ok';
};

/** The samples still needed to judge the window: the last one at or before its start, and all after. */
const trimmed = (samples: BodyProgress[], windowMs: number): BodyProgress[] => {
  const now = samples[samples.length - 1];
  if (now === undefined) return samples;
  let first = 0;
  while (first + 1 < samples.length && (samples[first + 1] as BodyProgress).waitedMs <= now.waitedMs - windowMs) first++;
  return first === 0 ? samples : samples.slice(first);
};

/** Whether a request declares a body (a length above 0, or chunked). */
const hasBody = (req: IncomingMessage): boolean =>
  req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/** The server is ready for more of the body: nobody paused it, and its buffer is not full. */
const waitingForClient = (req: IncomingMessage): boolean =>
  req.readableFlowing !== false && req.readableLength < req.readableHighWaterMark;

interface Watched {
  req: IncomingMessage;
  res: ServerResponse;
  socket: Socket;
  startedAt: number;
  firstByte: number;
  lastTick: number;
  samples: BodyProgress[];
}

export interface BodyWatch {
  /** Follows `req`'s body until it is complete or its connection closes. */
  watch(req: IncomingMessage, res: ServerResponse): void;
  /** Bodies being followed (for tests and metrics). */
  size(): number;
  stop(): void;
}

/**
 * Follows every request body of a server on one timer: each tick adds the bytes its socket read
 * and, when the server was waiting for them, the time it waited; a body that falls below the pace
 * or passes the deadline is answered `stalled(res)` (a JSON 408, connection closed) or, when an
 * answer was already sent (a body Node reads after the answer to discard it), cut.
 */
export const watchBodies = (
  limits: TransferLimits, stalled: (res: ServerResponse) => void, logger?: Logger, clock: () => number = () => performance.now(),
): BodyWatch => {
  const watched = new Set<Watched>();
  const tickMs = Math.max(50, Math.min(1_000, Math.floor(Math.min(limits.graceMs, limits.windowMs, limits.deadlineMs) / 4)));
  const tick = (): void => {
    const at = clock();
    for (const body of watched) {
      const { req, res, socket } = body;
      if (req.complete || socket.destroyed) {
        watched.delete(body);
        continue;
      }
      const last = body.samples[body.samples.length - 1] as BodyProgress;
      const waited = waitingForClient(req) ? at - body.lastTick : 0;
      body.lastTick = at;
      body.samples = trimmed([...body.samples, { waitedMs: last.waitedMs + waited, bytes: socket.bytesRead - body.firstByte }], limits.windowMs);
      const verdict = bodyVerdict(limits, at - body.startedAt, body.samples);
      if (verdict === 'ok') continue;
      watched.delete(body);
      logger?.info({ verdict, bytes: socket.bytesRead - body.firstByte, ms: Math.round(at - body.startedAt), method: req.method, path: req.url?.split('?')[0] },
        'request body too slow');
      if (!res.headersSent && socket.writable) stalled(res);
      else socket.destroy();
    }
  };
  const timer = setInterval(tick, tickMs);
  timer.unref();
  return {
    watch(req, res) {
      if (!hasBody(req) || req.complete) return;
      const at = clock();
      watched.add({ req, res, socket: req.socket, startedAt: at, firstByte: req.socket.bytesRead, lastTick: at, samples: [{ waitedMs: 0, bytes: 0 }] });
    },
    size: () => watched.size,
    stop: () => clearInterval(timer),
  };
};

/** Uploads in flight in one server: in all, and per user. */
export interface UploadSlots {
  /** Takes a slot for `req` (once per request, however many handlers ask); releases it when the answer ends. */
  take(req: IncomingMessage, res: ServerResponse, user: string): 'ok' | 'process_full' | 'user_full';
  inFlight(): number;
}

export const makeUploadSlots = (limits: Pick<TransferLimits, 'maxUploads' | 'maxUploadsPerUser'>): UploadSlots => {
  let total = 0;
  const byUser = new Map<string, number>();
  const holding = new WeakSet<IncomingMessage>();
  return {
    take(req, res, user) {
      if (holding.has(req)) return 'ok';
      if (limits.maxUploads > 0 && total >= limits.maxUploads) return 'process_full';
      const mine = byUser.get(user) ?? 0;
      if (limits.maxUploadsPerUser > 0 && mine >= limits.maxUploadsPerUser) return 'user_full';
      holding.add(req);
      total++;
      byUser.set(user, mine + 1);
      // 'close' comes once for every answer, sent or cut off.
      res.once('close', () => {
        total--;
        const left = (byUser.get(user) ?? 1) - 1;
        if (left > 0) byUser.set(user, left);
        else byUser.delete(user);
      });
      return 'ok';
    },
    inFlight: () => total,
  };
};

/** The slots of the server that received each request (set by `listen`). */
const slotsByRequest = new WeakMap<IncomingMessage, UploadSlots>();

/** Ties `req` to its server's upload slots. */
export const attachUploadSlots = (req: IncomingMessage, slots: UploadSlots): void => {
  slotsByRequest.set(req, slots);
};

/**
 * Counts an upload against its server's caps (`HTTP_MAX_UPLOADS`, `HTTP_MAX_UPLOADS_PER_USER`),
 * `userOf` naming its user: a full process answers 503 `Service unavailable, try again later`, a
 * user with too many uploads in flight 429, both with Retry-After and before the body is read (the
 * connection then closes). A request that passed one check (the gateway's) is not counted again by
 * the next (docs-command's, in one process). A server not made by `listen` has no caps.
 */
export const uploadSlot = (userOf: (req: Request, res: Response) => string | undefined): RequestHandler =>
  (req, res, next) => {
    const slots = slotsByRequest.get(req);
    if (slots === undefined) return next();
    const outcome = slots.take(req, res, userOf(req, res) ?? 'anonymous');
    if (outcome === 'ok') return next();
    if (outcome === 'process_full') return sendUnavailable(res, M.unavailable);
    res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
    sendError(res, 429, M.tooManyUploads);
  };

/** Stops the watch when the server closes. */
export const stopWithServer = (server: Server, watch: BodyWatch): void => {
  server.once('close', () => watch.stop());
};
