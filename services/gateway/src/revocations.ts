import type { Redis } from 'ioredis';
import type { Logger } from '@docshare/http';

/**
 * Users whose tokens the gateway refuses although they verify: erased accounts (issue 24). A JWT
 * cannot be taken back, so an erasure (docs-command's answer names the user in
 * `x-docshare-erased-user`, app.ts) puts the user here and every request with one of their tokens
 * is then `Invalid JWT token`. A revocation only has to outlive the tokens issued before it
 * (JWT_TTL_SECONDS): an erased user can log in no more, so has no newer one.
 */
export interface RevokedUsers {
  /** Refuses the user's tokens from now on. In this process at once (before the promise settles); everywhere once it resolves. */
  revoke(userId: number): Promise<void>;
  isRevoked(userId: number): Promise<boolean>;
}

/**
 * This process's list: embedded mode (one gateway), or a gateway without Redis. The embedded wiring
 * seeds it with the users already erased (docs-command knows them), so a restart forgets no one.
 */
export const makeMemoryRevokedUsers = (initial: Iterable<number> = []): RevokedUsers & { has(userId: number): boolean } => {
  const revoked = new Set<number>(initial);
  return {
    has: (userId) => revoked.has(userId),
    revoke: async (userId) => void revoked.add(userId),
    isRevoked: async (userId) => revoked.has(userId),
  };
};

export interface RedisRevokedUsersOptions {
  /** Keys are `<keyPrefix>:<userId>` (default `docshare-revoked`). */
  keyPrefix?: string;
  /** How long a revocation is kept: JWT_TTL_SECONDS, the life of the last token issued before it. */
  ttlSeconds: number;
  /** How long a "not revoked" answer may be reused without asking Redis (ms, default 1000: a revocation reaches every replica within it). */
  notRevokedCacheMs?: number;
  /** Users whose "not revoked" answers are kept at once (default 100 000; the oldest are dropped). */
  cacheCapacity?: number;
  /** The clock of the cache (tests). */
  now?: () => number;
}

/**
 * Revocations shared by every gateway replica through Redis: `SET <prefix>:<id> 1 EX <ttl>`, and
 * `EXISTS` to ask, its "no" reused for at most `notRevokedCacheMs` so a busy user costs Redis one
 * command a second per replica, not one per request. Each replica also keeps the revocations it
 * made or saw: while Redis is down (its commands fail fast) it refuses those, and logs the outage
 * (at most once a minute) rather than refusing everyone.
 */
export const makeRedisRevokedUsers = (redis: Redis, logger: Logger, options: RedisRevokedUsersOptions): RevokedUsers => {
  const keyPrefix = options.keyPrefix ?? 'docshare-revoked';
  const cacheMs = options.notRevokedCacheMs ?? 1_000;
  const capacity = options.cacheCapacity ?? 100_000;
  const now = options.now ?? Date.now;
  const mine = new Set<number>();
  /** userId → when Redis last said "not revoked"; insertion order is the eviction order. */
  const notRevoked = new Map<number, number>();
  const key = (userId: number): string => `${keyPrefix}:${userId}`;
  let lastWarning = Number.NEGATIVE_INFINITY;
  const warn = (err: unknown): void => {
    if (now() - lastWarning < 60_000) return;
    lastWarning = now();
    logger.warn({ err }, 'revoked users: Redis failed; this gateway refuses only the revocations it made or saw itself');
  };
  return {
    async revoke(userId) {
      mine.add(userId);
      notRevoked.delete(userId);
      try {
        await redis.set(key(userId), '1', 'EX', options.ttlSeconds);
      } catch (err) {
        warn(err);
      }
    },
    async isRevoked(userId) {
      if (mine.has(userId)) return true;
      const seen = notRevoked.get(userId);
      if (seen !== undefined && now() - seen < cacheMs) return false;
      try {
        if (await redis.exists(key(userId)) === 1) {
          mine.add(userId);
          notRevoked.delete(userId);
          return true;
        }
      } catch (err) {
        warn(err);
        return false;
      }
      notRevoked.delete(userId);
      notRevoked.set(userId, now());
      if (notRevoked.size > capacity) notRevoked.delete(notRevoked.keys().next().value as number);
      return false;
    },
  };
};
