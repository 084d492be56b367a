import { loadOrCreateSecret, makeTokens } from '@docshare/auth';
import { closeServer, envReader, exitGracefully, httpLimitsOf, listen, makeLogger, makeOps, publicBaseUrlOf, trustProxyOf, installLastResort } from '@docshare/http';
import { makeRateLimiter } from '@docshare/rate-limit';
import { makeGateway } from './app.ts';
import { httpUpstream } from './proxy.ts';
import { makeMemorySessionTokens, makeRedisSessionTokens } from './consistency.ts';

const NAME = 'gateway';
const logger = makeLogger(NAME);
installLastResort(logger);
const env = envReader(process.env);
const port = env.int('PORT', 8080);
const jwtSecret = env.optional('JWT_SECRET') ?? await loadOrCreateSecret(env.string('JWT_SECRET_FILE'));
const points = env.int('RATE_LIMIT_POINTS', 30, 1);
const windowSeconds = env.int('RATE_LIMIT_WINDOW_SECONDS', 60, 1);
const redisUrl = env.optional('REDIS_URL');

const rateLimitKeyPrefix = env.string('RATE_LIMIT_KEY_PREFIX', 'docshare-rl');
const rateLimiter = makeRateLimiter({
  points, windowSeconds, redis: redisUrl ? { url: redisUrl } : undefined, logger, keyPrefix: rateLimitKeyPrefix,
});
// Instances that share a Redis keep apart by their rate-limit prefix already: the tokens follow it.
const consistencyKeyPrefix = env.string('CONSISTENCY_KEY_PREFIX', `${rateLimitKeyPrefix}:ryw`);
const upstreamUrls = {
  docs: env.string('DOCS_COMMAND_URL', 'http://127.0.0.1:8081'),
  stats: env.string('STATS_URL', 'http://127.0.0.1:8082'),
  files: env.string('FILES_URL', 'http://127.0.0.1:8083'),
  search: env.string('SEARCH_URL', 'http://127.0.0.1:8084'),
};
const upstreamReady = (url: string) => async (): Promise<void> => {
  const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
};

// The gateway is ready whenever it runs: it answers every request itself, with a 503 for a route
// whose service is down. So each upstream (and Redis) is reported in the /readyz body and never
// fails it: a load balancer must not take every gateway out while one projector restarts, and a
// limiter outage must not become an API outage (each replica then limits on its own,
// docs/minio-redis.md).
const ops = makeOps(NAME, {}, undefined, {
  'docs-command': upstreamReady(upstreamUrls.docs),
  'stats-projector': upstreamReady(upstreamUrls.stats),
  'files-projector': upstreamReady(upstreamUrls.files),
  'search-projector': upstreamReady(upstreamUrls.search),
  redis: () => rateLimiter.ready(),
});
const publicBaseUrl = publicBaseUrlOf(process.env, port);
const httpLimits = httpLimitsOf(process.env);
const app = makeGateway({
  tokens: makeTokens(jwtSecret, env.int('JWT_TTL_SECONDS', 86_400, 1)),
  limiter: rateLimiter.limiter, rateLimitPoints: points, rateLimitWindowSeconds: windowSeconds,
  ops, logger, publicBaseUrl,
  trustProxy: trustProxyOf(env.optional('TRUST_PROXY')),
  requestTimeoutMs: httpLimits.requestTimeoutMs,
  sessions: rateLimiter.redis ? makeRedisSessionTokens(rateLimiter.redis, logger, consistencyKeyPrefix) : makeMemorySessionTokens(),
  upstreams: {
    docs: httpUpstream(upstreamUrls.docs, logger),
    stats: httpUpstream(upstreamUrls.stats, logger),
    files: httpUpstream(upstreamUrls.files, logger),
    search: httpUpstream(upstreamUrls.search, logger),
  },
});
const { server, port: bound } = await listen(app, port, env.string('HOST', '0.0.0.0'), httpLimits, logger);
logger.info({ port: bound, upstreams: upstreamUrls }, `${NAME} listening`);
exitGracefully(logger, [() => closeServer(server), () => rateLimiter.close()]);
