import { intVar, optionalVar, stringVar } from '@docshare/http';
import { concern } from './concern.ts';

/** The rate limit at the edge (distributed, and `npm start`), and the Redis that shares it between edge replicas. */
export const rateLimit = () => concern({
  /** Requests per window, per user (per IP without a valid token). */
  RATE_LIMIT_POINTS: intVar(30, 1),
  RATE_LIMIT_WINDOW_SECONDS: intVar(60, 1),
  RATE_LIMIT_KEY_PREFIX: stringVar('docshare-rl'),
  REDIS_URL: optionalVar(),
  /** Apart from REDIS_URL, so it can come from a secret file (REDIS_PASSWORD_FILE). */
  REDIS_PASSWORD: optionalVar(),
  /** Where the edge keeps users' consistency tokens in Redis; default: `<RATE_LIMIT_KEY_PREFIX>:ryw`. */
  CONSISTENCY_KEY_PREFIX: optionalVar(),
}, (v) => ({
  points: v.RATE_LIMIT_POINTS,
  windowSeconds: v.RATE_LIMIT_WINDOW_SECONDS,
  keyPrefix: v.RATE_LIMIT_KEY_PREFIX,
  redis: v.REDIS_URL === undefined ? undefined : { url: v.REDIS_URL, password: v.REDIS_PASSWORD },
  // Instances that share a Redis keep apart by their rate-limit prefix already: the tokens follow it.
  consistencyKeyPrefix: v.CONSISTENCY_KEY_PREFIX ?? `${v.RATE_LIMIT_KEY_PREFIX}:ryw`,
}));
