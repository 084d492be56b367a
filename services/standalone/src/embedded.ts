import type { Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { RateLimiterMemory } from 'rate-limiter-flexible';

import { makeFsBlobStore } from '@docshare/blob-store';
import { openFileClaimStore } from '@docshare/claim-store';
import { openFileIdempotencyStore } from '@docshare/idempotency-store';
import { makeLogBus } from '@docshare/event-bus';
import { openFileEventLog } from '@docshare/event-store';
import { makeViewerKeys, openFileViewerSalts } from '@docshare/analytics';
import { closeServer, counter, listen, makeLogger, makeOps, serveMetrics, type Logger } from '@docshare/http';
import { honourConsistency, makeConsistencyGate, makeMemoryCheckpoints } from '@docshare/consistency';
import { loadProjectorModules, registerReadModelGenerations, runProjector, type ProjectorModule } from '@docshare/projection';
import { deadLetterCounter, registerConsumerLag, type RunningConsumer } from '@docshare/runtime';
import type { RequestHandler } from 'express';
import { makeMemoryReadStore } from '@docshare/read-store';
import { makeMemorySearchIndex } from '@docshare/search-index';
import { fileStateFrom, makeDocsCommandApp, makeDocsCommands, makeStorageMetrics, openEmbeddedStorageLedger, startBlobSweeper, startPeriodic } from '@docshare/docs-command';
import { filesProjector, makeFilesQueries } from '@docshare/files-projector';
import { PROJECTOR_SERVICES } from '@docshare/contracts/services';
import { makeGateway } from '@docshare/gateway';
import { EXTRACTOR_OPENS, makeExtraction, registerExtractionMetrics, textExtractor } from '@docshare/text-extractor';
import type { EmbeddedConfig } from './config.ts';
import { loadOrCreateSecret, makeTokens, makeUrlSigner } from '@docshare/auth';
import { lockDataDir } from './data-lock.ts';
import { makeDeliverer, makeSecretSealer } from '@docshare/webhooks';
import { openFileWebhookStore } from '@docshare/webhooks/store';
import { DISPATCHER_OPENS, registerWebhookMetrics, startWebhookDispatch, webhookDispatcher } from '@docshare/webhook-dispatcher';
import { makePersonalData, openFileKeyStore, openingConsumer, parseKek, sealingEventStore } from '@docshare/personal-data';
import { makeStatsQueries, statsProjector } from '@docshare/stats-projector';
import { consume } from '@docshare/runtime';
import { ACCOUNTS_GROUP, accountSources } from '@docshare/docs-command';

export interface Embedded {
  server: Server;
  port: number;
  /** The metrics listener's port (`METRICS_PORT`), when there is one. */
  metricsPort?: number;
  logger: Logger;
  /** Graceful stop: no new connections, in-flight requests finish, projectors stop, stores close. */
  stop(): Promise<void>;
}

/**
 * Every docshare service in one process on the embedded adapters: the event log, claims and blobs
 * on disk under DATA_DIR, the bus in process, read models and the search index in memory, rebuilt
 * from the log at start.
 */
export const startEmbedded = async (config: EmbeddedConfig, logger = makeLogger('docshare', config.logLevel)): Promise<Embedded> => {
  const started = performance.now();
  const dir = (name: string): string => join(config.dataDir, name);
  await mkdir(config.dataDir, { recursive: true });
  const unlock = await lockDataDir(join(config.dataDir, '.lock'));

  const jwtSecret = config.jwtSecret ?? await loadOrCreateSecret(join(config.dataDir, 'secrets', 'jwt-secret'));
  const tokens = makeTokens(jwtSecret, config.jwtTtlSeconds);
  const signer = makeUrlSigner(jwtSecret);

  // Personal data (issue 24): each person's fields sealed under their own data key, the keys wrapped by
  // the KEK (DATA_KEK, or one generated into DATA_DIR/secrets) and kept in DATA_DIR/keys. The log holds
  // sealed events; the command side reads and writes through the sealing store, every consumer through
  // the opening one.
  const kek = parseKek(config.dataKek ?? await loadOrCreateSecret(join(config.dataDir, 'secrets', 'data-kek')));
  const keyStore = await openFileKeyStore(dir('keys'));
  const personalData = makePersonalData({ store: keyStore, kek });
  const log = await openFileEventLog(dir('events'), { onWarning: (message) => logger.warn(message) });
  const events = sealingEventStore(log, personalData);
  const claims = await openFileClaimStore(dir('claims'));
  const idempotencyKeys = await openFileIdempotencyStore(dir('idempotency'));
  const blobs = await makeFsBlobStore(dir('blobs'));
  const bus = makeLogBus(log, { onWarning: (message, err) => logger.warn({ err }, message) });
  const consumer = openingConsumer(bus, personalData);

  // Every projector of the distributed mode, declared by its package, on in-memory read models.
  // The same read-your-writes: checkpoints per group, tokens from the gateway, reads that wait for
  // their token (here in memory, one partition).
  const ops = makeOps('docshare', {});
  const deadLetters = deadLetterCounter(ops.registry);
  const checkpoints = makeMemoryCheckpoints();
  // Every projector of the registry (libs/contracts/src/services.ts), on in-memory read models.
  const modules = await loadProjectorModules(PROJECTOR_SERVICES);
  const documentStores = new Map<string, ReturnType<typeof makeMemoryReadStore>>();
  const readModels = new Map<string, { close(): Promise<void> }>();
  const queryApps: Partial<Record<ProjectorModule['upstream'], RequestHandler>> = {};
  const context = { publicBaseUrl: config.publicBaseUrl, logger };
  const lagging = counter(ops.registry, 'docshare_consistency_timeouts_total',
    'Queries answered before the read model reached their consistency token', ['model']);
  const projectors: RunningConsumer[] = await Promise.all(modules.map((module) => {
    const built = module.kind === 'documents'
      ? (() => {
        const store = makeMemoryReadStore();
        documentStores.set(module.name, store);
        return { model: store, apply: module.handler(store), app: module.queryApp(store, context) };
      })()
      : (() => {
        const index = makeMemorySearchIndex();
        return { model: index, apply: module.handler(index), app: module.queryApp(index, context) };
      })();
    readModels.set(module.name, built.model);
    const honour = honourConsistency(makeConsistencyGate(checkpoints, module.name, 1), config.consistencyWaitMs, () => lagging.inc({ model: module.model }));
    queryApps[module.upstream] = (req, res, next) => honour(req, res, (err?: unknown) => (err ? next(err) : built.app(req, res, next)));
    // The runner of the distributed projectors, with the same metrics (events projected, dead letters).
    return runProjector({ consumer, group: module.name, apply: built.apply, checkpoints, logger, registry: ops.registry });
  }));
  const storeOf = (name: string): ReturnType<typeof makeMemoryReadStore> => {
    const store = documentStores.get(name);
    if (!store) throw new Error(`no projector ${name} in the registry`);
    return store;
  };
  // Read by docs-command too: api-purchases lists from it.
  const filesStore = storeOf(filesProjector.name);
  registerConsumerLag(ops.registry, bus, [...modules.map((module) => module.name), textExtractor.name, webhookDispatcher.name, ACCOUNTS_GROUP]);
  // In memory, rebuilt at every start: always the first generation.
  registerReadModelGenerations(ops.registry, Object.fromEntries(modules.map((module) => [module.model, async () => `${module.model}_`])));
  const queryApp = (upstream: ProjectorModule['upstream']): RequestHandler => {
    const app = queryApps[upstream];
    if (!app) throw new Error(`no projector serves ${upstream}`);
    return app;
  };
  const replayTo = await log.lastPosition();
  await bus.waitForGroups(replayTo, 10 * 60_000);
  const replayedMs = Math.round(performance.now() - started);

  const ledger = await openEmbeddedStorageLedger(dir('storage'), log, (message) => logger.warn(message));
  const storageMetrics = makeStorageMetrics(ops.registry, { totalStored: ledger.total, logger });
  // Webhooks (issue 23): secrets sealed in events under a key kept in DATA_DIR (or WEBHOOK_SECRET_KEY);
  // the delivery state (tasks, attempts, the dispatcher's checkpoint) on disk.
  const webhookKey = config.webhooks.secretKey ?? await loadOrCreateSecret(join(config.dataDir, 'secrets', 'webhook-key'));
  const sealer = makeSecretSealer(webhookKey);
  const webhookStore = await openFileWebhookStore(dir('webhooks'));
  // The anonymous viewers' salt of the day, on disk so a restart keeps counting them as the same (libs/analytics).
  const viewerSalts = await openFileViewerSalts(dir('viewers'));
  const filesQueries = makeFilesQueries(filesStore, config.publicBaseUrl);
  const filesGate = makeConsistencyGate(checkpoints, filesProjector.name, 1);
  const commands = makeDocsCommands({
    events, claims, blobs, tokens, signer, logger, personalData,
    viewerKeys: makeViewerKeys({ salts: viewerSalts }),
    publicBaseUrl: config.publicBaseUrl,
    downloadUrlTtlSeconds: config.downloadUrlTtlSeconds,
    storageQuotaBytes: config.storageQuotaBytes,
    ledger,
    onStored: storageMetrics.recorded,
    purchasesOf: filesQueries.purchasesOf,
    resumable: config.resumable,
    webhooks: { settings: { maxPerUser: config.webhooks.maxPerUser, policy: config.webhooks.policy }, sealer, store: webhookStore },
    accounts: accountSources({
      filesStore, filesQueries, statsQueries: makeStatsQueries(storeOf(statsProjector.name), { publicBaseUrl: config.publicBaseUrl }),
      gates: [filesGate, ...modules.filter((m) => m.name !== filesProjector.name).map((m) => makeConsistencyGate(checkpoints, m.name, 1))],
      idempotency: idempotencyKeys,
      purchases: (userId, page) => commands.purchases(userId, page),
    }),
  });

  // The text extractor, after the replay: its group must not hold up the start (a new process
  // finds every file already done and skips it; files uploaded while it was down are read now).
  const extraction = makeExtraction({
    blobs, logger, settings: config.extract, onOutcome: registerExtractionMetrics(ops.registry),
    recorder: {
      status: commands.extractionStatus,
      record: async (fileId, blobKey, report, cause) => {
        await commands.recordExtraction(fileId, blobKey, report, { requestId: cause.eventId, correlationId: cause.correlationId });
      },
    },
  });
  const extracting = await extraction.start(openingConsumer(bus, personalData, { only: EXTRACTOR_OPENS }), textExtractor.name, logger, () => deadLetters.inc({ group: textExtractor.name }));

  // The webhook dispatcher, after the replay like the extractor: its checkpoint (in the webhook
  // store) says which events it already turned into deliveries, so the replay sends nothing twice.
  const projectorGates = modules.map((module) => makeConsistencyGate(checkpoints, module.name, 1));
  const deliverer = makeDeliverer({ policy: config.webhooks.policy, timeoutMs: config.webhooks.timeoutMs });
  const dispatching = await startWebhookDispatch(openingConsumer(bus, personalData, { only: DISPATCHER_OPENS }), {
    store: webhookStore, sealer, deliverer, settings: config.webhooks, logger, group: webhookDispatcher.name,
    metrics: registerWebhookMetrics(ops.registry),
    readModelsReached: async (position) => {
      await Promise.all(projectorGates.map((gate) => gate.wait(position, config.consistencyWaitMs)));
    },
    recorder: {
      disable: async (webhookId, ownerId, reason) => {
        await commands.webhooks?.disable(ownerId, webhookId, reason, { requestId: randomUUID() });
      },
    },
  }, () => deadLetters.inc({ group: webhookDispatcher.name }));

  // The accounts process manager (erasures, exports), after the replay like the extractor: a
  // request already carried out costs a check. Its requests carry no personal data: the log as stored.
  const accounts = await consume(bus, ACCOUNTS_GROUP, (batch) => commands.accounts!.handle(batch.records), logger,
    () => deadLetters.inc({ group: ACCOUNTS_GROUP }));
  const exportSweeper = startPeriodic({ name: 'export sweep', pass: commands.exports.sweep, logger, intervalMs: 3_600_000 });

  const swept = counter(ops.registry, 'docshare_blobs_swept_total', 'Unreferenced blobs removed by the blob sweeper');
  const sweeper = startBlobSweeper({
    blobs, logger, fileState: fileStateFrom(events),
    intervalMs: config.blobSweepIntervalSeconds * 1000, graceMs: config.blobSweepGraceSeconds * 1000,
    onSwept: ({ removed }) => swept.inc(removed),
  });
  const uploadSweeper = startPeriodic({
    name: 'upload sweep', pass: commands.sweepUploads, logger, intervalMs: config.resumable.sweepIntervalSeconds * 1000,
  });
  const gateway = makeGateway({
    tokens, logger, ops, partLinks: signer,
    // Erased accounts' tokens are refused: docs-command's users' streams say who (cached folds), so a
    // restart forgets no one.
    revocations: { revoke: async () => {}, isRevoked: commands.isErased },
    limiter: new RateLimiterMemory({ points: config.rateLimitPoints, duration: config.rateLimitWindowSeconds }),
    rateLimitPoints: config.rateLimitPoints,
    rateLimitWindowSeconds: config.rateLimitWindowSeconds,
    publicBaseUrl: config.publicBaseUrl,
    trustProxy: config.trustProxy,
    corsOrigins: config.corsOrigins,
    requestTimeoutMs: config.http.requestTimeoutMs,
    upstreams: {
      docs: makeDocsCommandApp({
        commands, logger, maxUploadBytes: config.maxUploadBytes, publicBaseUrl: config.publicBaseUrl,
        idempotency: { store: idempotencyKeys, secret: jwtSecret, logger },
        purchasesConsistency: honourConsistency(filesGate, config.consistencyWaitMs),
      }),
      stats: queryApp('stats'),
      files: queryApp('files'),
      search: queryApp('search'),
    },
  });

  // /metrics never on the public port: on the metrics listener, when there is one.
  const metrics = config.metrics === undefined ? undefined : await serveMetrics(ops, config.metrics, logger, config.http);
  const { server, port } = await listen(gateway, config.port, config.host, config.http, logger);
  logger.info({
    port, metricsPort: metrics?.port, publicBaseUrl: config.publicBaseUrl, dataDir: config.dataDir, events: replayTo, replayedMs,
    startMs: Math.round(performance.now() - started),
  }, 'docshare listening (embedded mode)');

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await closeServer(server);
      if (metrics) await closeServer(metrics.server, 1_000);
      storageMetrics.stop();
      await sweeper.stop();
      await uploadSweeper.stop();
      await exportSweeper.stop();
      await Promise.all([...projectors.map((p) => p.stop()), extracting.stop(), dispatching.stop(), accounts.stop()]);
      deliverer.close();
      await Promise.all([webhookStore.close(), keyStore.close(), events.close(), claims.close(), idempotencyKeys.close(), ledger.close(), viewerSalts.close(), ...[...readModels.values()].map((model) => model.close())]);
      await unlock();
    })();
    return stopping;
  };
  return { server, port, metricsPort: metrics?.port, logger, stop };
};
