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
import { makeExtraction, registerExtractionMetrics, textExtractor } from '@docshare/text-extractor';
import type { EmbeddedConfig } from './config.ts';
import { loadOrCreateSecret, makeTokens, makeUrlSigner } from '@docshare/auth';
import { lockDataDir } from './data-lock.ts';
import { makeDeliverer, makeSecretSealer } from '@docshare/webhooks';
import { openFileWebhookStore } from '@docshare/webhooks/store';
import { registerWebhookMetrics, startWebhookDispatch, webhookDispatcher } from '@docshare/webhook-dispatcher';

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

  const events = await openFileEventLog(dir('events'), { onWarning: (message) => logger.warn(message) });
  const claims = await openFileClaimStore(dir('claims'));
  const idempotencyKeys = await openFileIdempotencyStore(dir('idempotency'));
  const blobs = await makeFsBlobStore(dir('blobs'));
  const bus = makeLogBus(events, { onWarning: (message, err) => logger.warn({ err }, message) });

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
    return runProjector({ consumer: bus, group: module.name, apply: built.apply, checkpoints, logger, registry: ops.registry });
  }));
  const storeOf = (name: string): ReturnType<typeof makeMemoryReadStore> => {
    const store = documentStores.get(name);
    if (!store) throw new Error(`no projector ${name} in the registry`);
    return store;
  };
  // Read by docs-command too: api-purchases lists from it.
  const filesStore = storeOf(filesProjector.name);
  registerConsumerLag(ops.registry, bus, [...modules.map((module) => module.name), textExtractor.name, webhookDispatcher.name]);
  // In memory, rebuilt at every start: always the first generation.
  registerReadModelGenerations(ops.registry, Object.fromEntries(modules.map((module) => [module.model, async () => `${module.model}_`])));
  const queryApp = (upstream: ProjectorModule['upstream']): RequestHandler => {
    const app = queryApps[upstream];
    if (!app) throw new Error(`no projector serves ${upstream}`);
    return app;
  };
  const replayTo = await events.lastPosition();
  await bus.waitForGroups(replayTo, 10 * 60_000);
  const replayedMs = Math.round(performance.now() - started);

  const ledger = await openEmbeddedStorageLedger(dir('storage'), events, (message) => logger.warn(message));
  const storageMetrics = makeStorageMetrics(ops.registry, { totalStored: ledger.total, logger });
  // Webhooks (issue 23): secrets sealed in events under a key kept in DATA_DIR (or WEBHOOK_SECRET_KEY);
  // the delivery state (tasks, attempts, the dispatcher's checkpoint) on disk.
  const webhookKey = config.webhooks.secretKey ?? await loadOrCreateSecret(join(config.dataDir, 'secrets', 'webhook-key'));
  const sealer = makeSecretSealer(webhookKey);
  const webhookStore = await openFileWebhookStore(dir('webhooks'));
  // The anonymous viewers' salt of the day, on disk so a restart keeps counting them as the same (libs/analytics).
  const viewerSalts = await openFileViewerSalts(dir('viewers'));
  const commands = makeDocsCommands({
    events, claims, blobs, tokens, signer, logger,
    viewerKeys: makeViewerKeys({ salts: viewerSalts }),
    publicBaseUrl: config.publicBaseUrl,
    downloadUrlTtlSeconds: config.downloadUrlTtlSeconds,
    storageQuotaBytes: config.storageQuotaBytes,
    ledger,
    onStored: storageMetrics.recorded,
    purchasesOf: makeFilesQueries(filesStore, config.publicBaseUrl).purchasesOf,
    resumable: config.resumable,
    webhooks: { settings: { maxPerUser: config.webhooks.maxPerUser, policy: config.webhooks.policy }, sealer, store: webhookStore },
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
  const extracting = await extraction.start(bus, textExtractor.name, logger, () => deadLetters.inc({ group: textExtractor.name }));

  // The webhook dispatcher, after the replay like the extractor: its checkpoint (in the webhook
  // store) says which events it already turned into deliveries, so the replay sends nothing twice.
  const projectorGates = modules.map((module) => makeConsistencyGate(checkpoints, module.name, 1));
  const deliverer = makeDeliverer({ policy: config.webhooks.policy, timeoutMs: config.webhooks.timeoutMs });
  const dispatching = await startWebhookDispatch(bus, {
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
        purchasesConsistency: honourConsistency(makeConsistencyGate(checkpoints, filesProjector.name, 1), config.consistencyWaitMs),
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
      await Promise.all([...projectors.map((p) => p.stop()), extracting.stop(), dispatching.stop()]);
      deliverer.close();
      await Promise.all([webhookStore.close(), events.close(), claims.close(), idempotencyKeys.close(), ledger.close(), viewerSalts.close(), ...[...readModels.values()].map((model) => model.close())]);
      await unlock();
    })();
    return stopping;
  };
  return { server, port, metricsPort: metrics?.port, logger, stop };
};
