import { Redis } from 'ioredis';
import { jitteredBackoffMs } from '@docshare/contracts';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';

/*
 * decisions §3: one budget per user (or IP) shared by every gateway replica. The shared count
 * lives in Redis (rate-limiter-flexible's RateLimiterRedis: one atomic Lua INCR+EXPIRE per
 * request, fixed window). Redis is not allowed to take the API down with it:
 *
 *   - ioredis never queues commands while disconnected (enableOfflineQueue: false) and every
 *     command has a timeout, so a request never waits on a dead Redis for long;
 *   - while Redis is not connected (or a command fails or times out) each decision is made by an
 *     in-process RateLimiterMemory with the same points and window (the "insurance" limiter):
 *     every replica keeps limiting on its own — never unlimited, never an error — so while Redis
 *     is down a client can get up to (replicas × points) per window;
 *   - ioredis reconnects forever with capped backoff; once Redis answers again the shared count
 *     is used again (Redis's counts from before the outage are whatever Redis kept);
 *   - `ready()` rejects while Redis is unreachable, for /readyz; `status()` says which mode
 *     decisions are in, for metrics. Connection errors are logged once per outage, never thrown.
 */

/** The subset of pino's Logger used here. */
export interface RateLimitLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface RateLimiterOptions {
  /** Requests allowed per key and window. */
  points: number;
  windowSeconds: number;
  /** Share the budget across processes through this Redis; without it, the budget is per process. */
  redis?: {
    /** redis://[user:password@]host:port[/db] or rediss://… */
    url: string;
    /** Given apart from the URL (e.g. from a secret file); a password in the URL works too. */
    password?: string | undefined;
    /** How long one connection attempt may take (ms, default 1000). */
    connectTimeoutMs?: number;
    /** How long one limiter command may take before the decision is made locally (ms, default 500). */
    commandTimeoutMs?: number;
  };
  /** Prefix of the limiter's keys (in Redis: `<prefix>:<key>`). Default `docshare-rl`. */
  keyPrefix?: string;
  logger?: RateLimitLogger;
}

/**
 * memory: no Redis configured, per-process budget by design.
 * redis: decisions use the shared count.
 * fallback: Redis configured but not connected; each process limits on its own.
 */
export type RateLimitMode = 'memory' | 'redis' | 'fallback';

export interface RateLimitStatus {
  mode: RateLimitMode;
  /** Consumes decided by the local limiter because Redis was unreachable or failed (since start). */
  fallbackDecisions: number;
  /** Connection errors reported by the Redis client (failed connects and reconnects, since start). */
  connectionErrors: number;
}

export interface RateLimiter {
  limiter: RateLimiterAbstract;
  /** Resolves when the shared store answers (always, for the memory variant); rejects otherwise. */
  ready(): Promise<void>;
  status(): RateLimitStatus;
  /** Disconnects from Redis; the limiter keeps answering from memory afterwards. */
  close(): Promise<void>;
  /** The Redis connection (fails fast while down), for other per-user state the gateways share; null without Redis. */
  redis: Redis | null;
}

const DEFAULT_PREFIX = 'docshare-rl';
const MAX_RECONNECT_DELAY_MS = 2000;

/** Counts the decisions it makes: as the insurance limiter, each one is a request Redis did not see. */
class CountingMemoryLimiter extends RateLimiterMemory {
  decisions = 0;
  onDecision: () => void = () => {};
  override consume(...args: Parameters<RateLimiterMemory['consume']>): ReturnType<RateLimiterMemory['consume']> {
    this.decisions++;
    this.onDecision();
    return super.consume(...args);
  }
}

export function makeRateLimiter(options: RateLimiterOptions): RateLimiter {
  const { points, windowSeconds, logger } = options;
  if (!Number.isSafeInteger(points) || points < 1) throw new RangeError(`points must be a positive integer, got ${points}`);
  if (!Number.isSafeInteger(windowSeconds) || windowSeconds < 1) {
    throw new RangeError(`windowSeconds must be a positive integer, got ${windowSeconds}`);
  }
  const keyPrefix = options.keyPrefix ?? DEFAULT_PREFIX;

  if (options.redis === undefined) {
    const limiter = new RateLimiterMemory({ points, duration: windowSeconds, keyPrefix });
    return {
      limiter,
      ready: async () => {},
      status: () => ({ mode: 'memory', fallbackDecisions: 0, connectionErrors: 0 }),
      close: async () => {},
      redis: null,
    };
  }

  const { url, connectTimeoutMs = 1000, commandTimeoutMs = 500 } = options.redis;
  const where = redactUrl(url);
  const client = new Redis(url, {
    ...(options.redis.password === undefined ? {} : { password: options.redis.password }),
    // Fail fast instead of queueing while disconnected: the decision is then made locally.
    enableOfflineQueue: false,
    connectTimeout: connectTimeoutMs,
    commandTimeout: commandTimeoutMs,
    // A Redis that stops answering (frozen, or a partition without a reset) would otherwise keep
    // the connection "ready" until TCP keepalive gives up, each request paying commandTimeout
    // first. With replies overdue this long the socket is dropped, the client counts as
    // disconnected, and decisions go local at once until it reconnects.
    socketTimeout: Math.max(4 * commandTimeoutMs, 2000),
    // Commands caught by a disconnect fail at once rather than being resent after a reconnect:
    // the request they belong to has already been decided locally.
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // Reconnect forever: 100 ms, 200 ms, … capped at 2 s, jittered (half to all) so replicas do not stampede.
    retryStrategy: (times) => Math.round(jitteredBackoffMs(times, 100, MAX_RECONNECT_DELAY_MS)),
    lazyConnect: false,
    // How long close() lets a socket end gracefully; the default 2 s also applies to a socket
    // that never connected, which would keep a stopping process alive for nothing.
    disconnectTimeout: 200,
  });

  const insurance = new CountingMemoryLimiter({ points, duration: windowSeconds, keyPrefix });
  const limiter = new RateLimiterRedis({
    storeClient: client,
    points,
    duration: windowSeconds,
    keyPrefix,
    // Not connected → straight to the insurance limiter, without trying the command.
    rejectIfRedisNotReady: true,
    insuranceLimiter: insurance,
    // Once a key is over its limit, this process refuses it without asking Redis until the
    // window ends: a client hammering the API costs Redis one call per replica, not per request.
    inMemoryBlockOnConsumed: points + 1,
  });

  // Logged once per outage (not once per reconnect attempt), and once when it ends.
  let everConnected = false;
  let outage: { since: number; errors: number; lastError?: string } | null = null;
  let closing = false;
  let connectionErrors = 0;
  const startOutage = (reason: string): void => {
    if (closing || outage !== null) return;
    outage = { since: Date.now(), errors: 0 };
    logger?.warn({ redis: where, reason, points, windowSeconds },
      everConnected
        ? 'rate limit: Redis unreachable; each replica now limits on its own until it is back'
        : 'rate limit: Redis not reachable yet; each replica limits on its own until it is');
  };
  client.on('ready', () => {
    if (outage !== null) {
      logger?.info({ redis: where, downMs: Date.now() - outage.since, connectionErrors: outage.errors, lastError: outage.lastError },
        'rate limit: Redis is back; the limit is shared by all replicas again');
    } else if (!everConnected) {
      logger?.info({ redis: where }, 'rate limit: connected to Redis; the limit is shared by all replicas');
    }
    everConnected = true;
    outage = null;
  });
  // The listener is also what keeps ioredis from reporting an unhandled 'error' event.
  client.on('error', (err: Error) => {
    connectionErrors++;
    startOutage(err.message);
    if (outage !== null) {
      outage.errors++;
      outage.lastError = err.message;
    }
  });
  client.on('close', () => {
    if (everConnected) startOutage('connection closed');
  });
  // A command that failed or timed out while the connection still looked up also ends here
  // (a slow or stalled Redis): logged at most once a minute, with how many there were.
  let commandFailures = 0;
  let lastFailureLog = 0;
  insurance.onDecision = () => {
    if (client.status !== 'ready' || closing) return;
    commandFailures++;
    const now = Date.now();
    if (now - lastFailureLog < 60_000) return;
    lastFailureLog = now;
    logger?.warn({ redis: where, failures: commandFailures, commandTimeoutMs },
      'rate limit: Redis commands failed or timed out; those requests were limited locally');
    commandFailures = 0;
  };

  return {
    limiter,
    redis: client,
    async ready(): Promise<void> {
      if (client.status !== 'ready') throw new Error(`rate limit store (Redis at ${where}) is ${client.status}`);
      await client.ping();
    },
    status: () => ({
      mode: client.status === 'ready' ? 'redis' : 'fallback',
      fallbackDecisions: insurance.decisions,
      connectionErrors,
    }),
    async close(): Promise<void> {
      closing = true;
      if (client.status === 'ready') {
        try {
          await client.quit();
          return;
        } catch {
          // Fall through to a hard disconnect.
        }
      }
      client.disconnect();
    },
  };
}

/** The URL without its password, for logs and errors. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable Redis URL)';
  }
}
