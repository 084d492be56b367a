import express from 'express';
import { Gauge } from 'prom-client';
import { backoffMs } from '@docshare/contracts';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { makeMinioBlobStore } from '@docshare/blob-store/minio';
import { openMongoClaimStore } from '@docshare/claim-store/mongo';
import { openMongoEventStore } from '@docshare/event-store/mongo';
import { closeServer, counter, envReader, exitGracefully, httpLimitsOf, listen, makeLogger, makeOps, requestLog, installLastResort } from '@docshare/http';
import { startOutboxRelay } from '@docshare/outbox';
import { makeConsistencyGate, makeGenerationalReadStore, makeMongoCheckpoints } from '@docshare/projection';
import { commonConfig, connectMongo, ensureKafkaTopics, instanceId, kafkaBus } from '@docshare/projection/distributed';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeStatsQueries } from '@docshare/stats-projector';
import { makeDocsCommands } from './commands.ts';
import { makeDocsCommandApp, prepareSpool } from './app.ts';
import { fileStateFrom, startBlobSweeper } from './blob-sweeper.ts';
import { defaultSpoolDir } from './spool-dir.ts';

const NAME = 'docs-command';
const logger = makeLogger(NAME);
installLastResort(logger);
const env = envReader(process.env);
const config = commonConfig(process.env);
const port = env.int('PORT', 8081);
const jwtSecret = env.string('JWT_SECRET');

// Appends must know whether a failed insert reached the server (an unknown outcome is read back,
// never answered as "try again"): no driver-side write retries, and by default no socket timeout,
// so a frozen server holds the writes in flight until it answers rather than leaving them unknown.
const { client, db } = await connectMongo(config.mongoUrl, config.commandDb, {
  ...config, mongoSocketTimeoutMs: env.int('MONGO_SOCKET_TIMEOUT_MS', 0, 0),
}, { retryWrites: false });
const readDb = client.db(config.readDb);
const events = await openMongoEventStore(db);
const claims = await openMongoClaimStore(db);
const blobs = await makeMinioBlobStore({
  endPoint: env.string('MINIO_ENDPOINT'), accessKey: env.string('MINIO_ACCESS_KEY'), secretKey: env.string('MINIO_SECRET_KEY'),
  bucket: env.string('MINIO_BUCKET', 'docshare-files'),
  requestTimeoutMs: env.int('MINIO_REQUEST_TIMEOUT_MS', 10_000, 1),
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
const relayStallMs = env.int('RELAY_STALL_MS', 10_000, 1);

// /readyz fails when writes cannot be taken (MongoDB, MinIO); Kafka is reported: the outbox keeps
// every acknowledged write until Kafka takes it, so its outage delays the read models only.
const ops = makeOps(NAME, {
  mongodb: async () => { await db.command({ ping: 1 }); },
  minio: async () => { await blobs.stat('readiness-probe'); },
}, undefined, {
  kafka: async () => {
    const failure = relay.lastError();
    if (failure) throw failure;
    const { oldestAgeMs } = await relay.backlog();
    if (oldestAgeMs > relayStallMs) throw new Error(`the oldest unpublished event is ${oldestAgeMs} ms old`);
  },
});
new Gauge({
  name: 'docshare_outbox_backlog_events', help: 'Events recorded in MongoDB and not yet published to Kafka',
  registers: [ops.registry],
  async collect() {
    try {
      const { events: backlog, oldestAgeMs } = await relay.backlog();
      this.set(backlog);
      oldestGauge.set(oldestAgeMs / 1000);
    } catch {
      // MongoDB unreachable: the last values stay (readiness reports MongoDB).
    }
  },
});
const oldestGauge = new Gauge({
  name: 'docshare_outbox_oldest_unpublished_age_seconds',
  help: 'Age of the oldest event recorded and not yet published (0 when none); read with docshare_outbox_backlog_events',
  registers: [ops.registry],
});
// The storage quota keeps an upload's hold until the stats read model counts it (never delaying the answer).
const statsApplied = makeConsistencyGate(makeMongoCheckpoints(readDb), `stats-projector${config.groupSuffix}`, config.eventsPartitions);

const commands = makeDocsCommands({
  events, claims, blobs, logger,
  tokens: makeTokens(jwtSecret, env.int('JWT_TTL_SECONDS', 86_400, 1)),
  signer: makeUrlSigner(jwtSecret),
  publicBaseUrl: config.publicBaseUrl,
  downloadUrlTtlSeconds: env.int('DOWNLOAD_URL_TTL_SECONDS', 900, 1),
  storageQuotaBytes: env.int('STORAGE_QUOTA_BYTES', 1024 ** 3, 0),
  // Read-only: the stats projector owns this read model (and its generations); only bytes_stored is read.
  storageUsedBy: makeStatsQueries(makeGenerationalReadStore(readDb, 'stats', (prefix) => makeMongoReadStore(readDb, { prefix, indexes: {} }))).storageOf,
  storageApplied: (token, timeoutMs) => statsApplied.wait(token, timeoutMs),
  afterCommit: () => relay.notify(),
});

const app = express();
app.disable('x-powered-by');
app.use(ops.httpMetrics);
app.use(ops.router);
app.use(requestLog(logger));
const spoolDir = env.string('SPOOL_DIR', defaultSpoolDir(port));
await prepareSpool(spoolDir);
app.use(makeDocsCommandApp({
  commands, logger, publicBaseUrl: config.publicBaseUrl, spoolDir,
  maxUploadBytes: env.int('MAX_UPLOAD_BYTES', 100 * 1024 * 1024, 1),
}));
const swept = counter(ops.registry, 'docshare_blobs_swept_total', 'Unreferenced blobs removed by the blob sweeper');
const sweeper = startBlobSweeper({
  blobs, logger, fileState: fileStateFrom(events),
  intervalMs: env.int('BLOB_SWEEP_INTERVAL_SECONDS', 60 * 60, 0) * 1000,
  graceMs: env.int('BLOB_SWEEP_GRACE_SECONDS', 60 * 60, 1) * 1000,
  onSwept: ({ removed }) => swept.inc(removed),
});
const { server } = await listen(app, port, config.host, httpLimitsOf(process.env), logger);
logger.info({ port }, `${NAME} listening`);
exitGracefully(logger, [
  () => closeServer(server),
  () => sweeper.stop(),
  () => relay.stop(),
  () => bus.close(),
  () => client.close(),
]);
