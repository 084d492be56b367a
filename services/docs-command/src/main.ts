import express from 'express';
import { backoffMs } from '@docshare/contracts';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { makeMinioBlobStore } from '@docshare/blob-store/minio';
import { openMongoClaimStore } from '@docshare/claim-store/mongo';
import { openMongoIdempotencyStore } from '@docshare/idempotency-store/mongo';
import { openMongoEventStore } from '@docshare/event-store/mongo';
import {
  closeServer, configOrExit, counter, exitGracefully, HTTP_VARS, httpLimitsOf, installLastResort, intVar, listen, makeLogger, makeOps,
  metricsListenOrExit, optionalVar, requestLog, serveMetrics, stringVar,
} from '@docshare/http';
import { startOutboxRelay } from '@docshare/outbox';
import { honourConsistency, makeConsistencyGate, makeMongoCheckpoints } from '@docshare/consistency';
import { makeGenerationalReadStore } from '@docshare/projection';
import { COMMON_VARS, commonConfig, connectMongo, countStoreCommands, ensureKafkaTopics, instanceId, kafkaBus } from '@docshare/runtime/distributed';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeStatsQueries } from '@docshare/stats-projector';
import { makeFilesQueries } from '@docshare/files-projector';
import { makeDocsCommands } from './commands.ts';
import { makeDocsCommandApp } from './app.ts';
import { fileStateFrom, startBlobSweeper } from './blob-sweeper.ts';
import { makeStorageMetrics, registerOutboxMetrics } from './metrics.ts';

const NAME = 'docs-command';
const logger = makeLogger(NAME);
installLastResort(logger);
/** Everything docs-command can be told (README: the services' environment). */
const DOCS_COMMAND_VARS = {
  ...COMMON_VARS,
  ...HTTP_VARS,
  PORT: intVar(8081),
  LOG_LEVEL: optionalVar(),
  INSTANCE_ID: optionalVar(),
  JWT_SECRET: stringVar(),
  JWT_TTL_SECONDS: intVar(86_400, 1),
  MONGO_SOCKET_TIMEOUT_MS: intVar(0, 0),
  MINIO_ENDPOINT: stringVar(),
  MINIO_ACCESS_KEY: stringVar(),
  MINIO_SECRET_KEY: stringVar(),
  MINIO_BUCKET: stringVar('docshare-files'),
  MINIO_REQUEST_TIMEOUT_MS: intVar(10_000, 1),
  BLOB_PUBLIC_URL: optionalVar(),
  RELAY_STALL_MS: intVar(10_000, 1),
  DOWNLOAD_URL_TTL_SECONDS: intVar(900, 1),
  STORAGE_QUOTA_BYTES: intVar(1024 ** 3, 0),
  MAX_UPLOAD_BYTES: intVar(100 * 1024 * 1024, 1),
  BLOB_SWEEP_INTERVAL_SECONDS: intVar(60 * 60, 0),
  BLOB_SWEEP_GRACE_SECONDS: intVar(60 * 60, 1),
  /** Shared with the text extractor, which sends it to record extractions; unset: no internal routes. */
  INTERNAL_TOKEN: optionalVar(),
};
const env = configOrExit(DOCS_COMMAND_VARS, process.env, (message) => logger.fatal(message));
const config = commonConfig(process.env);
const port = env.PORT;
const jwtSecret = env.JWT_SECRET;

// Appends must know whether a failed insert reached the server (an unknown outcome is read back,
// never answered as "try again"): no driver-side write retries, and by default no socket timeout,
// so a frozen server holds the writes in flight until it answers rather than leaving them unknown.
const { client, db } = await connectMongo(config.mongoUrl, config.commandDb, {
  ...config, mongoSocketTimeoutMs: env.MONGO_SOCKET_TIMEOUT_MS,
}, { retryWrites: false });
const readDb = client.db(config.readDb);
const events = await openMongoEventStore(db);
const claims = await openMongoClaimStore(db);
const idempotencyKeys = await openMongoIdempotencyStore(db);
const blobs = await makeMinioBlobStore({
  endPoint: env.MINIO_ENDPOINT, accessKey: env.MINIO_ACCESS_KEY, secretKey: env.MINIO_SECRET_KEY,
  bucket: env.MINIO_BUCKET,
  requestTimeoutMs: env.MINIO_REQUEST_TIMEOUT_MS,
  // The object store's address as clients reach it: signed content links then redirect there
  // (presigned GETs) instead of streaming through docs-command and the gateway.
  publicEndPoint: env.BLOB_PUBLIC_URL,
});
// Writes need MongoDB and MinIO only: Kafka may be down now, the relay publishes once it is back.
const bus = kafkaBus(config, NAME, logger);
void (async () => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ensureKafkaTopics(config);
    } catch (err) {
      logger.warn({ err, attempt }, 'could not check the Kafka topics; retrying');
      await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt + 1, 200, 5_000)));
    }
  }
})();
// The same owner after a restart: the restarted relay takes its lease back at once.
const relay = startOutboxRelay({ db, publisher: bus.publisher, logger, owner: instanceId(process.env, port) });
const relayStallMs = env.RELAY_STALL_MS;

// /readyz fails when writes cannot be taken (MongoDB, MinIO); Kafka is reported: the outbox keeps
// every acknowledged write until Kafka takes it, so its outage delays the read models only.
const ops = makeOps(NAME, {
  mongodb: async () => { await db.command({ ping: 1 }); },
  minio: async () => { await blobs.stat('readiness-probe'); },
}, undefined, {
  kafka: async () => {
    const failure = relay.lastError();
    if (failure) throw failure instanceof Error ? failure : new Error(String(failure));
    const { oldestAgeMs } = await relay.backlog();
    if (oldestAgeMs > relayStallMs) throw new Error(`the oldest unpublished event is ${oldestAgeMs} ms old`);
  },
});
registerOutboxMetrics(ops.registry, relay);
countStoreCommands(client, ops.registry);
// The storage quota keeps an upload's hold until the stats read model counts it (never delaying the answer).
const statsApplied = makeConsistencyGate(makeMongoCheckpoints(readDb), `stats-projector${config.groupSuffix}`, config.eventsPartitions);

// Read-only: the stats projector owns this read model (and its generations); only bytes_stored is read.
const statsQueries = makeStatsQueries(makeGenerationalReadStore(readDb, 'stats', (prefix) => makeMongoReadStore(readDb, { prefix, indexes: {} })));
const storageMetrics = makeStorageMetrics(ops.registry, { totalStored: statsQueries.totalBytesStored, logger });
// Read-only too: api-purchases lists from the files read model (the files projector owns it), and
// waits, like the files projector's own queries, for the caller's consistency token.
const filesQueries = makeFilesQueries(makeGenerationalReadStore(readDb, 'files', (prefix) => makeMongoReadStore(readDb, { prefix, indexes: {} })), config.publicBaseUrl);
const filesApplied = makeConsistencyGate(makeMongoCheckpoints(readDb), `files-projector${config.groupSuffix}`, config.eventsPartitions);

const commands = makeDocsCommands({
  events, claims, blobs, logger,
  tokens: makeTokens(jwtSecret, env.JWT_TTL_SECONDS),
  signer: makeUrlSigner(jwtSecret),
  publicBaseUrl: config.publicBaseUrl,
  downloadUrlTtlSeconds: env.DOWNLOAD_URL_TTL_SECONDS,
  storageQuotaBytes: env.STORAGE_QUOTA_BYTES,
  storageUsedBy: statsQueries.storageOf,
  storageApplied: (token, timeoutMs) => statsApplied.wait(token, timeoutMs),
  afterCommit: () => relay.notify(),
  onStored: storageMetrics.recorded,
  purchasesOf: filesQueries.purchasesOf,
});
// /metrics on the metrics listener when METRICS_PORT is set, else on this internal port.
const metricsAt = metricsListenOrExit(process.env, port, (message) => logger.fatal(message));

const app = express();
app.disable('x-powered-by');
app.use(ops.httpMetrics);
app.use(ops.router);
if (metricsAt === undefined) app.use(ops.metricsRouter);
app.use(requestLog(logger));
app.use(makeDocsCommandApp({
  commands, logger, publicBaseUrl: config.publicBaseUrl,
  maxUploadBytes: env.MAX_UPLOAD_BYTES,
  idempotency: { store: idempotencyKeys, secret: jwtSecret, logger },
  purchasesConsistency: honourConsistency(filesApplied, config.consistencyWaitMs),
  ...(env.INTERNAL_TOKEN === undefined ? {} : { internalToken: env.INTERNAL_TOKEN }),
}));
const swept = counter(ops.registry, 'docshare_blobs_swept_total', 'Unreferenced blobs removed by the blob sweeper');
const sweeper = startBlobSweeper({
  blobs, logger, fileState: fileStateFrom(events),
  intervalMs: env.BLOB_SWEEP_INTERVAL_SECONDS * 1000,
  graceMs: env.BLOB_SWEEP_GRACE_SECONDS * 1000,
  onSwept: ({ removed }) => swept.inc(removed),
});
const metrics = metricsAt === undefined ? undefined : await serveMetrics(ops, metricsAt, logger);
const { server } = await listen(app, port, config.host, httpLimitsOf(process.env), logger);
logger.info({ port }, `${NAME} listening`);
exitGracefully(logger, [
  () => closeServer(server),
  async () => {
    storageMetrics.stop();
    if (metrics) await closeServer(metrics.server, 1_000);
  },
  () => sweeper.stop(),
  () => idempotencyKeys.close(),
  () => relay.stop(),
  () => bus.close(),
  () => client.close(),
]);
