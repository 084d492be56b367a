import express from 'express';
import { retrying } from '@docshare/contracts';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { makeMinioBlobStore } from '@docshare/blob-store/minio';
import { openMongoClaimStore } from '@docshare/claim-store/mongo';
import { openMongoIdempotencyStore } from '@docshare/idempotency-store/mongo';
import { openMongoEventStore } from '@docshare/event-store/mongo';
import {
  closeServer, counter, exitGracefully, installLastResort, listen, makeLogger, makeOps, requestLog, serveMetrics,
} from '@docshare/http';
import { startOutboxRelay } from '@docshare/outbox';
import { honourConsistency, makeConsistencyGate, makeMongoCheckpoints } from '@docshare/consistency';
import { makeGenerationalReadStore } from '@docshare/projection';
import { connectMongo, countStoreCommands, ensureKafkaTopics, instanceId, kafkaBus } from '@docshare/runtime/distributed';
import {
  auth, blob, consistency, files, internalRoutes, kafka, loadConfigOrExit, mongo, outbox, personalData, service, webhooksWithKey,
} from '@docshare/runtime/config';
import { makeSecretSealer, remoteUrlCheck } from '@docshare/webhooks';
import { makeMongoWebhookStore } from '@docshare/webhooks/store/mongo';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { openMongoStorageLedger } from '@docshare/storage-ledger/mongo';
import { makeViewerKeys } from '@docshare/analytics';
import { makeMongoViewerSalts } from '@docshare/analytics/mongo';
import { filesProjector, makeFilesQueries } from '@docshare/files-projector';
import { makeStatsQueries } from '@docshare/stats-projector';
import { PROJECTOR_SERVICES } from '@docshare/contracts/services';
import { makePersonalData, parseKek, sealingEventStore } from '@docshare/personal-data';
import { openMongoKeyStore } from '@docshare/personal-data/mongo';
import { consume, type RunningConsumer } from '@docshare/runtime';
import { ACCOUNTS_GROUP } from './commands/accounts.ts';
import { accountSources } from './commands/account-sources.ts';
import { makeDocsCommands } from './commands/docs-commands.ts';
import { makeDocsCommandApp } from './http/app.ts';
import { fileStateFrom, startBlobSweeper, startPeriodic } from './commands/blob-sweeper.ts';
import { resolvedHold } from './commands/resumable.ts';
import { resolvedBy, storageFromEvents } from './commands/storage-quota.ts';
import { makeStorageMetrics, registerOutboxMetrics } from './metrics.ts';

const NAME = 'docs-command';
/** Everything docs-command can be told (README: the services' environment), read once. */
const config = loadConfigOrExit(process.env, {
  service: service({ port: 8081, publicPort: 'edge' }),
  // Appends must know whether a failed insert reached the server: no socket timeout by default (mongo.ts).
  mongo: mongo({ socketTimeout: 'writeSide' }),
  kafka: kafka(),
  consistency: consistency(),
  auth: auth(),
  blob: blob(),
  files: files(),
  outbox: outbox(),
  /** Shared with the text extractor, which sends it to record extractions; unset: no internal routes. */
  internal: internalRoutes(),
  /** Webhooks: the limit, the URL policy, and the key secrets are sealed with in events (required here). */
  webhooks: webhooksWithKey(),
  /** The KEK that wraps every person's data key (DATA_KEK_FILE). */
  personalData: personalData(),
}, (message) => makeLogger(NAME).fatal(message));
const logger = makeLogger(NAME, config.service.logLevel);
installLastResort(logger);
const port = config.service.port;
const jwtSecret = config.auth.jwtSecret;

// Appends must know whether a failed insert reached the server (an unknown outcome is read back,
// never answered as "try again"): no driver-side write retries, and by default no socket timeout,
// so a frozen server holds the writes in flight until it answers rather than leaving them unknown.
const { client, db } = await connectMongo(config.mongo.mongoUrl, config.mongo.commandDb, config.mongo, { retryWrites: false });
const readDb = client.db(config.mongo.readDb);
// Personal data (issue 24): events are stored with each person's fields sealed under their data key
// (data_keys, wrapped by the KEK); the command side reads and writes through the sealing store, the
// relay publishes what is stored.
const keyStore = await openMongoKeyStore(db);
const personal = makePersonalData({ store: keyStore, kek: parseKek(config.personalData.kek) });
const log = await openMongoEventStore(db);
const events = sealingEventStore(log, personal);
const claims = await openMongoClaimStore(db);
const idempotencyKeys = await openMongoIdempotencyStore(db);
const blobs = await makeMinioBlobStore({
  endPoint: config.blob.endPoint, accessKey: config.blob.accessKey, secretKey: config.blob.secretKey,
  bucket: config.blob.bucket,
  requestTimeoutMs: config.blob.requestTimeoutMs,
  // The object store's address as clients reach it: signed content links then redirect there
  // (presigned GETs) instead of streaming through docs-command and the gateway.
  publicEndPoint: config.blob.publicEndPoint,
});
// Writes need MongoDB and MinIO only: Kafka may be down now, the relay publishes once it is back.
const bus = kafkaBus(config.kafka, NAME, logger);
void retrying(() => ensureKafkaTopics(config.kafka), {
  baseMs: 400, capMs: 5_000,
  onRetry: (err, attempt) => logger.warn({ err, attempt }, 'could not check the Kafka topics; retrying'),
});
// The same owner after a restart: the restarted relay takes its lease back at once.
const relay = startOutboxRelay({ db, publisher: bus.publisher, logger, owner: instanceId({ INSTANCE_ID: config.outbox.instanceId }, port) });
const relayStallMs = config.outbox.relayStallMs;

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
// The storage quota's count, the write side's own (libs/storage-ledger); seeded from the event log
// once, for uploads recorded before it existed.
const ledger = await openMongoStorageLedger(db, { resolve: resolvedBy(fileStateFrom(log)), resolveHold: resolvedHold(log) });
await ledger.seed(() => storageFromEvents(log));
const storageMetrics = makeStorageMetrics(ops.registry, { totalStored: ledger.total, logger });
// Read-only too: api-purchases lists from the files read model (the files projector owns it), and
// waits, like the files projector's own queries, for the caller's consistency token.
const filesStore = makeGenerationalReadStore(readDb, 'files', (prefix) => makeMongoReadStore(readDb, { prefix, indexes: {} }));
const filesQueries = makeFilesQueries(filesStore, config.service.publicBaseUrl);
const readCheckpoints = makeMongoCheckpoints(readDb);
const gateOf = (name: string) => makeConsistencyGate(readCheckpoints, `${name}${config.kafka.groupSuffix}`, config.kafka.eventsPartitions, 50);
const filesApplied = makeConsistencyGate(readCheckpoints, `files-projector${config.kafka.groupSuffix}`, config.kafka.eventsPartitions);
// Exports read the stats model too (read-only, like the files model).
const statsQueries = makeStatsQueries(
  makeGenerationalReadStore(readDb, 'stats', (prefix) => makeMongoReadStore(readDb, { prefix, indexes: {} })), { publicBaseUrl: config.service.publicBaseUrl },
);

// Webhooks (issue 23): the secrets sealed into events; the dispatcher's delivery state (attempts,
// dead letters), read here for the API's listings.
const webhookStore = await makeMongoWebhookStore(db);
// Where an endpoint's URL is resolved at registration: by the dispatcher when it is named (in compose
// docs-command has no way out to public DNS; the dispatcher connects through the egress network), else here.
const checkUrl = config.webhooks.dispatcherUrl === undefined ? undefined : (() => {
  if (config.internal.internalToken === undefined) {
    logger.fatal('configuration: WEBHOOK_DISPATCHER_URL needs INTERNAL_TOKEN (the dispatcher\'s URL check is an internal route)');
    process.exit(78);
  }
  return remoteUrlCheck(config.webhooks.dispatcherUrl, config.internal.internalToken);
})();

// Who viewed: the anonymous viewers' salt of the day, shared by every replica (libs/analytics).
const viewerSalts = makeMongoViewerSalts(db);
const commands = makeDocsCommands({
  events, claims, blobs, logger, personalData: personal,
  viewerKeys: makeViewerKeys({ salts: viewerSalts }),
  tokens: makeTokens(jwtSecret, config.auth.jwtTtlSeconds),
  signer: makeUrlSigner(jwtSecret),
  publicBaseUrl: config.service.publicBaseUrl,
  downloadUrlTtlSeconds: config.files.downloadUrlTtlSeconds,
  storageQuotaBytes: config.files.storageQuotaBytes,
  ledger,
  afterCommit: () => relay.notify(),
  onStored: storageMetrics.recorded,
  purchasesOf: filesQueries.purchasesOf,
  resumable: config.files.resumable,
  webhooks: {
    settings: { maxPerUser: config.webhooks.maxPerUser, policy: config.webhooks.policy }, store: webhookStore,
    ...(checkUrl === undefined ? {} : { checkUrl }),
    sealer: makeSecretSealer(config.webhooks.secretKey),
  },
  accounts: accountSources({
    filesStore, filesQueries, statsQueries,
    // The files projector's first (an erasure waits for it alone), then every other read model (an export waits for all).
    gates: [gateOf(filesProjector.name), ...PROJECTOR_SERVICES.filter((p) => p.name !== filesProjector.name).map((p) => gateOf(p.name))],
    idempotency: idempotencyKeys,
    purchases: (userId, page) => commands.purchases(userId, page),
  }),
});
// The accounts process manager (erasures, exports; issue 24): a consumer group of its own, on the
// opened bus, joined in the background (writes need MongoDB and MinIO only: Kafka may be down now).
let accounts: RunningConsumer | null = null;
const joining = new AbortController();
void retrying(async () => {
  // The requests it acts on carry no personal data: it consumes the log as stored (what it reads of a
  // user comes from the user's stream, through the sealing store).
  accounts = await consume(bus.consumer, `${ACCOUNTS_GROUP}${config.kafka.groupSuffix}`,
    (batch) => commands.accounts!.handle(batch.records), logger);
}, {
  baseMs: 200, capMs: 5_000, signal: joining.signal,
  onRetry: (err, attempt) => logger.warn({ err, attempt }, 'could not join the accounts consumer group; retrying'),
}).catch(() => {
  // Stopped before it could join.
});
const exportSweeper = startPeriodic({ name: 'export sweep', pass: commands.exports.sweep, logger, intervalMs: 3_600_000 });
// /metrics on the metrics listener when METRICS_PORT is set, else on this internal port.
const metricsAt = config.service.metrics;

const app = express();
app.disable('x-powered-by');
app.use(ops.httpMetrics);
app.use(ops.router);
if (metricsAt === undefined) app.use(ops.metricsRouter);
app.use(requestLog(logger));
app.use(makeDocsCommandApp({
  commands, logger, publicBaseUrl: config.service.publicBaseUrl,
  maxUploadBytes: config.files.maxUploadBytes,
  idempotency: { store: idempotencyKeys, secret: jwtSecret, logger },
  purchasesConsistency: honourConsistency(filesApplied, config.consistency.consistencyWaitMs),
  ...(config.internal.internalToken === undefined ? {} : { internalToken: config.internal.internalToken }),
}));
const swept = counter(ops.registry, 'docshare_blobs_swept_total', 'Unreferenced blobs removed by the blob sweeper');
const sweeper = startBlobSweeper({
  blobs, logger, fileState: fileStateFrom(events),
  intervalMs: config.files.blobSweepIntervalSeconds * 1000,
  graceMs: config.files.blobSweepGraceSeconds * 1000,
  onSwept: ({ removed }) => swept.inc(removed),
});
// The parts of ended resumable uploads (aborted, expired) leave the object store.
const uploadSweeper = startPeriodic({
  name: 'upload sweep', pass: commands.sweepUploads, logger, intervalMs: config.files.resumable.sweepIntervalSeconds * 1000,
});
const metrics = metricsAt === undefined ? undefined : await serveMetrics(ops, metricsAt, logger, config.service.http);
const { server } = await listen(app, port, config.service.host, config.service.http, logger);
logger.info({ port }, `${NAME} listening`);
exitGracefully(logger, [
  () => closeServer(server),
  async () => {
    storageMetrics.stop();
    if (metrics) await closeServer(metrics.server, 1_000);
  },
  () => sweeper.stop(),
  () => uploadSweeper.stop(),
  () => exportSweeper.stop(),
  async () => {
    joining.abort();
    await accounts?.stop();
  },
  () => idempotencyKeys.close(),
  () => webhookStore.close(),
  () => ledger.close(),
  () => keyStore.close(),
  () => viewerSalts.close(),
  () => relay.stop(),
  () => bus.close(),
  () => client.close(),
]);
