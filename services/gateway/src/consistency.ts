import type { RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import { CONSISTENCY_HEADER, CONSISTENCY_USERS_HEADER, parseConsistencyToken, parseConsistencyUsers } from '@docshare/contracts';
import type { Logger } from '@docshare/http';

/**
 * Each user's newest consistency token, so the gateway can carry session consistency for clients
 * that know nothing of it: a write's answer advances the token of its author and of the users
 * whose read models it changed; every request of a user carries the user's token to the service,
 * whose reads wait for it (never the writes, never other users).
 */
export interface SessionTokens {
  get(userId: number): Promise<number>;
  /** Raises each user's token to `token` (never lowers it). Synchronous locally; shared in the background. */
  advance(userIds: readonly number[], token: number): void;
  /** Forgets the user's token (an erased account keeps nothing here). Locally at once; shared in the background. */
  forget(userId: number): void;
}

/** Tokens of this process only: embedded mode, or a gateway without Redis. Keeps the `capacity` most recent users. */
export const makeMemorySessionTokens = (capacity = 100_000): SessionTokens & { peek(userId: number): number } => {
  const tokens = new Map<number, number>();
  const peek = (userId: number): number => tokens.get(userId) ?? 0;
  return {
    peek,
    get: async (userId) => peek(userId),
    advance(userIds, token) {
      for (const userId of userIds) {
        const next = Math.max(peek(userId), token);
        tokens.delete(userId); // re-inserted last: the map's order is the eviction order
        tokens.set(userId, next);
        if (tokens.size > capacity) tokens.delete(tokens.keys().next().value as number);
      }
    },
    forget: (userId) => void tokens.delete(userId),
  };
};

/** Raises a key to ARGV[1] if lower, and (re)sets its expiry to ARGV[2] seconds. */
const ADVANCE = `
for i, key in ipairs(KEYS) do
  local current = tonumber(redis.call('GET', key) or '0')
  if current < tonumber(ARGV[1]) then redis.call('SET', key, ARGV[1], 'EX', ARGV[2])
  else redis.call('EXPIRE', key, ARGV[2]) end
end
return 1`;

/**
 * Tokens shared by every gateway replica through Redis (one small key per active user, expiring
 * after `ttlSeconds` idle), on top of this process's own: a user's next request finds the token on
 * whichever replica it lands. While Redis is down each replica falls back to what it saw itself.
 */
export const makeRedisSessionTokens = (redis: Redis, logger: Logger, keyPrefix = 'docshare-ryw', ttlSeconds = 600): SessionTokens => {
  const local = makeMemorySessionTokens();
  let lastWarning = 0;
  const warn = (err: unknown): void => {
    if (Date.now() - lastWarning < 60_000) return;
    lastWarning = Date.now();
    logger.warn({ err }, 'session consistency: Redis failed; this gateway uses the tokens it saw itself');
  };
  const key = (userId: number): string => `${keyPrefix}:${userId}`;
  return {
    async get(userId) {
      const mine = local.peek(userId);
      try {
        return Math.max(mine, Number(await redis.get(key(userId))) || 0);
      } catch (err) {
        warn(err);
        return mine;
      }
    },
    advance(userIds, token) {
      local.advance(userIds, token);
      if (userIds.length === 0) return;
      redis.eval(ADVANCE, userIds.length, ...userIds.map(key), String(token), String(ttlSeconds)).catch(warn);
    },
    forget(userId) {
      local.forget(userId);
      redis.del(key(userId)).catch(warn);
    },
  };
};

/**
 * Session consistency at the edge. For an authenticated user, sends the user's token (or the
 * client's own, if newer) to the service; when the answer carries a token, advances the tokens of
 * the author and of the users the service names, before the answer leaves (so a next request
 * finds it), and removes the internal users header. The token itself is passed on to the client,
 * who may send it back explicitly (e.g. from another session).
 */
export const sessionConsistency = (tokens: SessionTokens, userOf: (res: Response) => number | null): RequestHandler =>
  (req, res, next) => {
    const userId = userOf(res);
    const sent = parseConsistencyToken(req.headers[CONSISTENCY_HEADER]);
    delete req.headers[CONSISTENCY_HEADER];
    delete req.headers[CONSISTENCY_USERS_HEADER];
    const writeHead = res.writeHead;
    res.writeHead = function (this: Response, ...args: unknown[]) {
      const token = parseConsistencyToken(res.getHeader(CONSISTENCY_HEADER));
      const users = parseConsistencyUsers(res.getHeader(CONSISTENCY_USERS_HEADER));
      res.removeHeader(CONSISTENCY_USERS_HEADER);
      if (token !== null) tokens.advance(userId === null ? users : [...new Set([userId, ...users])], token);
      return (writeHead as (...a: unknown[]) => Response).apply(this, args);
    } as typeof res.writeHead;
    if (userId === null) {
      if (sent !== null) req.headers[CONSISTENCY_HEADER] = String(sent);
      return next();
    }
    tokens.get(userId).then((mine) => {
      const token = Math.max(mine, sent ?? 0);
      if (token > 0) req.headers[CONSISTENCY_HEADER] = String(token);
      next();
    }, next);
  };
