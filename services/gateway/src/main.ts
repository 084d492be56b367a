import type { RequestHandler } from 'express';
import { loadOrCreateSecret, makeTokens } from '@docshare/auth';
import { backoffMs } from '@docshare/contracts';
import {
  closeServer, CONFIG_ERROR_EXIT_CODE, configOrExit, exitGracefully, HTTP_VARS, httpLimitsOf, installLastResort, intVar, listen, makeLogger, makeOps,
  metricsListenOrExit, optionalVar, publicBaseUrlOf, sendUnavailable, serveMetrics, stringVar, trustProxyOf,
} from '@docshare/http';
import { COMMON_VARS, connectMongo, countStoreCommands } from '@docshare/runtime/distributed';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeMinioBlobStore } from '@docshare/blob-store/minio';
import { statsProjector } from '@docshare/stats-projector';
import type { MongoClient } from 'mongodb';
import { makeRateLimiter } from '@docshare/rate-limit';
import { makeGateway } from './app.ts';
import { httpUpstreams, upstreamChecks, upstreamUrlsOf, UPSTREAM_URL_VARS } from './proxy.ts';
import { makeMemorySessionTokens, makeRedisSessionTokens } from './consistency.ts';
import { corsOriginsVar } from './cors.ts';
import { localQuery } from './local-query.ts';
import type { BlobReader } from './blob-handoff.ts';

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
  /** DOCS_COMMAND_URL, STATS_URL, ...: each service behind the gateway, from the registry (proxy.ts). */
  ...UPSTREAM_URL_VARS,
  /**
   * With MONGO_URL the gateway answers api-stats itself from the stats read model (one `_id`
   * lookup, no hop to the stats projector); without it, it forwards to STATS_URL.
   */
  MONGO_URL: optionalVar(),
  MONGO_USERNAME: COMMON_VARS.MONGO_USERNAME,
  MONGO_PASSWORD: COMMON_VARS.MONGO_PASSWORD,
  MONGO_READ_DB: COMMON_VARS.MONGO_READ_DB,
  MONGO_SERVER_SELECTION_TIMEOUT_MS: COMMON_VARS.MONGO_SERVER_SELECTION_TIMEOUT_MS,
  MONGO_CONNECT_TIMEOUT_MS: COMMON_VARS.MONGO_CONNECT_TIMEOUT_MS,
  MONGO_SOCKET_TIMEOUT_MS: COMMON_VARS.MONGO_SOCKET_TIMEOUT_MS,
  /** The stats projector's checkpoint group is its name + this suffix (as the projector's). */
  KAFKA_GROUP_SUFFIX: COMMON_VARS.KAFKA_GROUP_SUFFIX,
  KAFKA_EVENTS_PARTITIONS: COMMON_VARS.KAFKA_EVENTS_PARTITIONS,
  CONSISTENCY_WAIT_MS: COMMON_VARS.CONSISTENCY_WAIT_MS,
  /**
   * With MinIO's address and keys the gateway streams a signed link's bytes from MinIO itself,
   * once docs-command has checked the link (blob-handoff.ts); without them docs-command streams.
   */
  MINIO_ENDPOINT: optionalVar(),
  MINIO_ACCESS_KEY: optionalVar(),
  MINIO_SECRET_KEY: optionalVar(),
  MINIO_BUCKET: stringVar('docshare-files'),
  MINIO_REQUEST_TIMEOUT_MS: intVar(10_000, 1),
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
const upstreamUrls = upstreamUrlsOf(env);

// The gateway is ready whenever it runs: it answers every request itself, with a 503 for a route
// whose service is down. So each upstream (and Redis, and MongoDB when it reads the stats model
// itself) is reported in the /readyz body and never fails it: a load balancer must not take every
// gateway out while one projector restarts, and a limiter outage must not become an API outage
// (each replica then limits on its own, docs/minio-redis.md).
const stats: { handler?: RequestHandler; client?: MongoClient; stopped: boolean } = { stopped: false };
const ops = makeOps(NAME, {}, undefined, {
  ...upstreamChecks(upstreamUrls),
  redis: () => rateLimiter.ready(),
  ...(env.MONGO_URL === undefined ? {} : {
    'stats-read-model': async () => {
      if (!stats.client) throw new Error('not connected yet');
      await stats.client.db(env.MONGO_READ_DB).command({ ping: 1 });
    },
  }),
});
const publicBaseUrl = publicBaseUrlOf(process.env, port);

/**
 * With MONGO_URL, api-stats is answered here from the stats read model (local-query.ts): the
 * connection is made in the background, retried, so the gateway starts and answers every other
 * route while MongoDB is down; until it is reached api-stats answers 503 `Error fetching user
 * stats` (the route's failure message), as the stats service would.
 */
/**
 * Runs `connect` in the background until it succeeds or the gateway stops, waiting a capped backoff
 * after each failure, logged with `meanwhile` (what answers until it is reached).
 */
const connectInBackground = (connect: () => Promise<void>, meanwhile: string): void => {
  void (async () => {
    for (let attempt = 1; !stats.stopped; attempt++) {
      try {
        return await connect();
      } catch (err) {
        const delay = backoffMs(attempt, 200, 5_000);
        logger.warn({ err, attempt, retryInMs: delay }, meanwhile);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  })();
};

const mongoUrl = env.MONGO_URL;
if (mongoUrl !== undefined) {
  connectInBackground(async () => {
    const { client, db } = await connectMongo(mongoUrl, env.MONGO_READ_DB, {
      mongoServerSelectionTimeoutMs: env.MONGO_SERVER_SELECTION_TIMEOUT_MS, mongoConnectTimeoutMs: env.MONGO_CONNECT_TIMEOUT_MS,
      mongoSocketTimeoutMs: env.MONGO_SOCKET_TIMEOUT_MS, mongoUsername: env.MONGO_USERNAME, mongoPassword: env.MONGO_PASSWORD,
    });
    stats.client = client;
    if (stats.stopped) return void (await client.close());
    countStoreCommands(client, ops.registry);
    stats.handler = localQuery(statsProjector, {
      db, open: (prefix) => makeMongoReadStore(db, { prefix, indexes: statsProjector.indexes }),
      group: `${statsProjector.name}${env.KAFKA_GROUP_SUFFIX}`, partitions: env.KAFKA_EVENTS_PARTITIONS,
      consistencyWaitMs: env.CONSISTENCY_WAIT_MS, publicBaseUrl, logger, ops,
    });
    logger.info({ db: env.MONGO_READ_DB }, 'api-stats answered from the stats read model');
  }, 'could not reach MongoDB for the stats read model; api-stats answers 503 meanwhile');
}
/** The blob store for handed-off content (blob-handoff.ts), once MinIO is reached (retried in the background like MongoDB). */
let blobs: BlobReader | undefined;
const minio = env.MINIO_ENDPOINT !== undefined && env.MINIO_ACCESS_KEY !== undefined && env.MINIO_SECRET_KEY !== undefined
  ? { endPoint: env.MINIO_ENDPOINT, accessKey: env.MINIO_ACCESS_KEY, secretKey: env.MINIO_SECRET_KEY } : undefined;
if (minio !== undefined) {
  connectInBackground(async () => {
    blobs = await makeMinioBlobStore({ ...minio, bucket: env.MINIO_BUCKET, requestTimeoutMs: env.MINIO_REQUEST_TIMEOUT_MS });
    logger.info({ bucket: env.MINIO_BUCKET }, 'file content streamed from MinIO by the gateway');
  }, 'could not reach MinIO; docs-command streams file content meanwhile');
}

/** api-stats answered here, from the read model (without MONGO_URL it is forwarded to STATS_URL like every other route). */
const localStats: RequestHandler = (req, res, next) => (stats.handler ? stats.handler(req, res, next) : sendUnavailable(res));

const httpLimits = httpLimitsOf(process.env);
const app = makeGateway({
  tokens: makeTokens(jwtSecret, env.JWT_TTL_SECONDS),
  limiter: rateLimiter.limiter, rateLimitPoints: points, rateLimitWindowSeconds: windowSeconds,
  ops, logger, publicBaseUrl,
  trustProxy: trustProxyOf(env.TRUST_PROXY),
  corsOrigins: env.CORS_ORIGINS,
  requestTimeoutMs: httpLimits.requestTimeoutMs,
  sessions: rateLimiter.redis ? makeRedisSessionTokens(rateLimiter.redis, logger, consistencyKeyPrefix) : makeMemorySessionTokens(),
  upstreams: httpUpstreams(upstreamUrls, logger, { docs: { blobs: () => blobs } }, mongoUrl === undefined ? {} : { stats: localStats }),
});
// /metrics only ever on the internal metrics listener, never on the public port (docs/observability.md).
const metricsAt = metricsListenOrExit(process.env, port, (message) => logger.fatal(message));
const metrics = metricsAt === undefined ? undefined : await serveMetrics(ops, metricsAt, logger, httpLimits);
const { server, port: bound } = await listen(app, port, env.HOST, httpLimits, logger);
logger.info({ port: bound, upstreams: upstreamUrls, statsFrom: mongoUrl === undefined ? 'stats-projector' : 'read model' }, `${NAME} listening`);
exitGracefully(logger, [
  () => closeServer(server), async () => { if (metrics) await closeServer(metrics.server, 1_000); }, () => rateLimiter.close(),
  async () => {
    stats.stopped = true;
    await stats.client?.close();
  },
]);
