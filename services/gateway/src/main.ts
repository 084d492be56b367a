import type { RequestHandler } from 'express';
import { loadOrCreateSecret, makeTokens, makeUrlSigner } from '@docshare/auth';
import { retrying } from '@docshare/contracts';
import {
  closeServer, exitGracefully, installLastResort, listen, makeLogger, makeOps, sendUnavailable, serveMetrics,
} from '@docshare/http';
import { connectMongo, countStoreCommands } from '@docshare/runtime/distributed';
import {
  concern, consistency, edge, authOrSecretFile, groups, loadConfigOrExit, optionalBlob, optionalMongo, rateLimit, service,
} from '@docshare/runtime/config';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeMinioBlobStore } from '@docshare/blob-store/minio';
import { statsProjector } from '@docshare/stats-projector';
import type { MongoClient } from 'mongodb';
import { makeRateLimiter } from '@docshare/rate-limit';
import { makeGateway } from './app.ts';
import { httpUpstreams, upstreamChecks, upstreamUrlsOf, UPSTREAM_URL_VARS } from './proxy.ts';
import { makeMemorySessionTokens, makeRedisSessionTokens } from './consistency.ts';
import { makeMemoryRevokedUsers, makeRedisRevokedUsers } from './revocations.ts';
import { localQuery } from './local-query.ts';
import type { BlobReader } from './blob-handoff.ts';

const NAME = 'gateway';
/** Everything the gateway can be told (README: the services' environment), read once. */
const config = loadConfigOrExit(process.env, {
  service: service({ port: 8080, publicPort: 'own' }),
  /** JWT_SECRET, or JWT_SECRET_FILE: a file holding it, created with a new secret when missing. */
  auth: authOrSecretFile(),
  rateLimit: rateLimit(),
  edge: edge(),
  /** DOCS_COMMAND_URL, STATS_URL, ...: each service behind the gateway, from the registry (proxy.ts). */
  upstreams: concern(UPSTREAM_URL_VARS, upstreamUrlsOf),
  /**
   * With MONGO_URL the gateway answers api-stats itself from the stats read model (one `_id`
   * lookup, no hop to the stats projector); without it, it forwards to STATS_URL.
   */
  mongo: optionalMongo(),
  /** The stats projector's checkpoint group is its name + KAFKA_GROUP_SUFFIX (as the projector's). */
  groups: groups(),
  consistency: consistency(),
  /**
   * With MinIO's address and keys the gateway streams a signed link's bytes from MinIO itself,
   * once docs-command has checked the link (blob-handoff.ts); without them docs-command streams.
   */
  blob: optionalBlob(),
}, (message) => makeLogger(NAME).fatal(message));
const logger = makeLogger(NAME, config.service.logLevel);
installLastResort(logger);
const port = config.service.port;
const jwtSecret = config.auth.secret.kind === 'value' ? config.auth.secret.value : await loadOrCreateSecret(config.auth.secret.path);
const points = config.rateLimit.points;
const windowSeconds = config.rateLimit.windowSeconds;

const rateLimiter = makeRateLimiter({
  points, windowSeconds, redis: config.rateLimit.redis, logger, keyPrefix: config.rateLimit.keyPrefix,
});
// Instances that share a Redis keep apart by their rate-limit prefix already: the tokens follow it (rate-limit.ts).
const consistencyKeyPrefix = config.rateLimit.consistencyKeyPrefix;
const upstreamUrls = config.upstreams;
const mongo = config.mongo;

// The gateway is ready whenever it runs: it answers every request itself, with a 503 for a route
// whose service is down. So each upstream (and Redis, and MongoDB when it reads the stats model
// itself) is reported in the /readyz body and never fails it: a load balancer must not take every
// gateway out while one projector restarts, and a limiter outage must not become an API outage
// (each replica then limits on its own, docs/minio-redis.md).
const stats: { handler?: RequestHandler; client?: MongoClient; stopped: boolean } = { stopped: false };
const ops = makeOps(NAME, {}, undefined, {
  ...upstreamChecks(upstreamUrls),
  redis: () => rateLimiter.ready(),
  ...(mongo === undefined ? {} : {
    'stats-read-model': async () => {
      if (!stats.client) throw new Error('not connected yet');
      await stats.client.db(mongo.readDb).command({ ping: 1 });
    },
  }),
});
const publicBaseUrl = config.service.publicBaseUrl;

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
const stopping = new AbortController();
const connectInBackground = (connect: () => Promise<void>, meanwhile: string): void => {
  retrying(connect, {
    baseMs: 200, capMs: 5_000, signal: stopping.signal,
    onRetry: (err, attempt, retryInMs) => logger.warn({ err, attempt, retryInMs }, meanwhile),
  }).catch(() => {
    // Stopped before it could connect: nothing to connect to any more.
  });
};

if (mongo !== undefined) {
  connectInBackground(async () => {
    const { client, db } = await connectMongo(mongo.mongoUrl, mongo.readDb, mongo);
    stats.client = client;
    if (stats.stopped) return void (await client.close());
    countStoreCommands(client, ops.registry);
    stats.handler = localQuery(statsProjector, {
      db, open: (prefix) => makeMongoReadStore(db, { prefix, indexes: statsProjector.indexes }),
      group: `${statsProjector.name}${config.groups.groupSuffix}`, partitions: config.groups.eventsPartitions,
      consistencyWaitMs: config.consistency.consistencyWaitMs, publicBaseUrl, logger, ops,
    });
    logger.info({ db: mongo.readDb }, 'api-stats answered from the stats read model');
  }, 'could not reach MongoDB for the stats read model; api-stats answers 503 meanwhile');
}
/** The blob store for handed-off content (blob-handoff.ts), once MinIO is reached (retried in the background like MongoDB). */
let blobs: BlobReader | undefined;
const minio = config.blob;
if (minio !== undefined) {
  connectInBackground(async () => {
    blobs = await makeMinioBlobStore({
      endPoint: minio.endPoint, accessKey: minio.accessKey, secretKey: minio.secretKey, bucket: minio.bucket, requestTimeoutMs: minio.requestTimeoutMs,
    });
    logger.info({ bucket: minio.bucket }, 'file content streamed from MinIO by the gateway');
  }, 'could not reach MinIO; docs-command streams file content meanwhile');
}

/** api-stats answered here, from the read model (without MONGO_URL it is forwarded to STATS_URL like every other route). */
const localStats: RequestHandler = (req, res, next) => (stats.handler ? stats.handler(req, res, next) : sendUnavailable(res));

const httpLimits = config.service.http;
const app = makeGateway({
  tokens: makeTokens(jwtSecret, config.auth.jwtTtlSeconds),
  partLinks: makeUrlSigner(jwtSecret),
  limiter: rateLimiter.limiter, rateLimitPoints: points, rateLimitWindowSeconds: windowSeconds,
  ops, logger, publicBaseUrl,
  trustProxy: config.edge.trustProxy,
  corsOrigins: config.edge.corsOrigins,
  requestTimeoutMs: httpLimits.requestTimeoutMs,
  sessions: rateLimiter.redis ? makeRedisSessionTokens(rateLimiter.redis, logger, consistencyKeyPrefix) : makeMemorySessionTokens(),
  // Erased accounts' tokens, refused by every replica (revocations.ts); kept as long as a token lives.
  revocations: rateLimiter.redis
    ? makeRedisRevokedUsers(rateLimiter.redis, logger, { keyPrefix: `${config.rateLimit.keyPrefix}:revoked`, ttlSeconds: config.auth.jwtTtlSeconds })
    : makeMemoryRevokedUsers(),
  upstreams: httpUpstreams(upstreamUrls, logger, { docs: { blobs: () => blobs } }, mongo === undefined ? {} : { stats: localStats }),
});
// /metrics only ever on the internal metrics listener, never on the public port (docs/observability.md).
const metricsAt = config.service.metrics;
const metrics = metricsAt === undefined ? undefined : await serveMetrics(ops, metricsAt, logger, httpLimits);
const { server, port: bound } = await listen(app, port, config.service.host, httpLimits, logger);
logger.info({ port: bound, upstreams: upstreamUrls, statsFrom: mongo === undefined ? 'stats-projector' : 'read model' }, `${NAME} listening`);
exitGracefully(logger, [
  () => closeServer(server), async () => { if (metrics) await closeServer(metrics.server, 1_000); }, () => rateLimiter.close(),
  async () => {
    stats.stopped = true;
    stopping.abort();
    await stats.client?.close();
  },
]);
