import { loadOrCreateSecret, makeTokens } from '@docshare/auth';
import {
  closeServer, CONFIG_ERROR_EXIT_CODE, configOrExit, exitGracefully, HTTP_VARS, httpLimitsOf, installLastResort, intVar, listen, makeLogger, makeOps,
  metricsListenOrExit, optionalVar, publicBaseUrlOf, serveMetrics, stringVar, trustProxyOf,
} from '@docshare/http';
import { makeRateLimiter } from '@docshare/rate-limit';
import { makeGateway } from './app.ts';
import { httpUpstream } from './proxy.ts';
import { makeMemorySessionTokens, makeRedisSessionTokens } from './consistency.ts';
import { corsOriginsVar } from './cors.ts';

const NAME = 'gateway';
const logger = makeLogger(NAME);
installLastResort(logger);
/** Everything the gateway can be told (README: the services' environment). */
const GATEWAY_VARS = {
  ...HTTP_VARS,
  PORT: intVar(8080),
  HOST: stringVar('0.0.0.0'),
  LOG_LEVEL: optionalVar(),
  PUBLIC_BASE_URL: optionalVar(),
  JWT_SECRET: optionalVar(),
  JWT_SECRET_FILE: optionalVar(),
  JWT_TTL_SECONDS: intVar(86_400, 1),
  RATE_LIMIT_POINTS: intVar(30, 1),
  RATE_LIMIT_WINDOW_SECONDS: intVar(60, 1),
  RATE_LIMIT_KEY_PREFIX: stringVar('docshare-rl'),
  REDIS_URL: optionalVar(),
  /** Apart from REDIS_URL, so it can come from a secret file (REDIS_PASSWORD_FILE). */
  REDIS_PASSWORD: optionalVar(),
  CONSISTENCY_KEY_PREFIX: optionalVar(),
  TRUST_PROXY: optionalVar(),
  /** Browser origins allowed to call the API cross-origin (comma-separated, or `*`); unset: none. */
  CORS_ORIGINS: corsOriginsVar(),
  DOCS_COMMAND_URL: stringVar('http://127.0.0.1:8081'),
  STATS_URL: stringVar('http://127.0.0.1:8082'),
  FILES_URL: stringVar('http://127.0.0.1:8083'),
  SEARCH_URL: stringVar('http://127.0.0.1:8084'),
};
const env = configOrExit(GATEWAY_VARS, process.env, (message) => logger.fatal(message));
const port = env.PORT;
const secretFile = env.JWT_SECRET_FILE;
if (env.JWT_SECRET === undefined && secretFile === undefined) {
  logger.fatal('configuration: JWT_SECRET or JWT_SECRET_FILE is required');
  process.exit(CONFIG_ERROR_EXIT_CODE);
}
const jwtSecret = env.JWT_SECRET ?? await loadOrCreateSecret(secretFile as string);
const points = env.RATE_LIMIT_POINTS;
const windowSeconds = env.RATE_LIMIT_WINDOW_SECONDS;
const redisUrl = env.REDIS_URL;

const rateLimitKeyPrefix = env.RATE_LIMIT_KEY_PREFIX;
const rateLimiter = makeRateLimiter({
  points, windowSeconds, redis: redisUrl ? { url: redisUrl, password: env.REDIS_PASSWORD } : undefined, logger, keyPrefix: rateLimitKeyPrefix,
});
// Instances that share a Redis keep apart by their rate-limit prefix already: the tokens follow it.
const consistencyKeyPrefix = env.CONSISTENCY_KEY_PREFIX ?? `${rateLimitKeyPrefix}:ryw`;
const upstreamUrls = { docs: env.DOCS_COMMAND_URL, stats: env.STATS_URL, files: env.FILES_URL, search: env.SEARCH_URL };
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
  tokens: makeTokens(jwtSecret, env.JWT_TTL_SECONDS),
  limiter: rateLimiter.limiter, rateLimitPoints: points, rateLimitWindowSeconds: windowSeconds,
  ops, logger, publicBaseUrl,
  trustProxy: trustProxyOf(env.TRUST_PROXY),
  corsOrigins: env.CORS_ORIGINS,
  requestTimeoutMs: httpLimits.requestTimeoutMs,
  sessions: rateLimiter.redis ? makeRedisSessionTokens(rateLimiter.redis, logger, consistencyKeyPrefix) : makeMemorySessionTokens(),
  upstreams: {
    docs: httpUpstream(upstreamUrls.docs, logger),
    stats: httpUpstream(upstreamUrls.stats, logger),
    files: httpUpstream(upstreamUrls.files, logger),
    search: httpUpstream(upstreamUrls.search, logger),
  },
});
// /metrics only ever on the internal metrics listener, never on the public port (docs/observability.md).
const metricsAt = metricsListenOrExit(process.env, port, (message) => logger.fatal(message));
const metrics = metricsAt === undefined ? undefined : await serveMetrics(ops, metricsAt, logger, httpLimits);
const { server, port: bound } = await listen(app, port, env.HOST, httpLimits, logger);
logger.info({ port: bound, upstreams: upstreamUrls }, `${NAME} listening`);
exitGracefully(logger, [
  () => closeServer(server), async () => { if (metrics) await closeServer(metrics.server, 1_000); }, () => rateLimiter.close(),
]);
