import type { Server } from 'node:http';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { RateLimiterMemory } from 'rate-limiter-flexible';

import { makeFsBlobStore } from '@docshare/blob-store';
import { openFileClaimStore } from '@docshare/claim-store';
import { makeLogBus } from '@docshare/event-bus';
import { openFileEventLog } from '@docshare/event-store';
import { closeServer, counter, listen, makeLogger, makeOps, type Logger } from '@docshare/http';
import { runProjector, type RunningProjector } from '@docshare/projection';
import { makeMemoryReadStore } from '@docshare/read-store';
import { makeMemorySearchIndex } from '@docshare/search-index';
import { fileStateFrom, makeDocsCommandApp, makeDocsCommands, prepareSpool, startBlobSweeper } from '@docshare/docs-command';
import { makeFilesApp, filesHandler } from '@docshare/files-projector';
import { makeSearchApp, searchHandler } from '@docshare/search-projector';
import { makeStatsApp, makeStatsQueries, statsHandler } from '@docshare/stats-projector';
import { makeGateway } from '@docshare/gateway';
import type { EmbeddedConfig } from './config.ts';
import { loadOrCreateSecret, makeTokens, makeUrlSigner } from '@docshare/auth';
import { lockDataDir } from './data-lock.ts';

export interface Embedded {
  server: Server;
  port: number;
  logger: Logger;
  /** Graceful stop: no new connections, in-flight requests finish, projectors stop, stores close. */
  stop(): Promise<void>;
}

/** How long a command waits for the read models to show it before answering anyway. */
const READ_YOUR_WRITES_MS = 5_000;

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
  const spoolDir = dir('tmp');
  await prepareSpool(spoolDir);

  const jwtSecret = config.jwtSecret ?? await loadOrCreateSecret(join(config.dataDir, 'secrets', 'jwt-secret'));
  const tokens = makeTokens(jwtSecret, config.jwtTtlSeconds);
  const signer = makeUrlSigner(jwtSecret);

  const events = await openFileEventLog(dir('events'), { onWarning: (message) => logger.warn(message) });
  const claims = await openFileClaimStore(dir('claims'));
  const blobs = await makeFsBlobStore(dir('blobs'));
  const bus = makeLogBus(events, { onWarning: (message, err) => logger.warn({ err }, message) });

  const statsStore = makeMemoryReadStore();
  const filesStore = makeMemoryReadStore();
  const searchIndex = makeMemorySearchIndex();
  const projectors: RunningProjector[] = await Promise.all([
    runProjector(bus, 'stats-projector', statsHandler(statsStore), logger),
    runProjector(bus, 'files-projector', filesHandler(filesStore), logger),
    runProjector(bus, 'search-projector', searchHandler(searchIndex), logger),
  ]);
  const replayTo = await events.lastPosition();
  await bus.waitForGroups(replayTo, 10 * 60_000);
  const replayedMs = Math.round(performance.now() - started);

  const commands = makeDocsCommands({
    events, claims, blobs, tokens, signer, logger,
    publicBaseUrl: config.publicBaseUrl,
    downloadUrlTtlSeconds: config.downloadUrlTtlSeconds,
    storageQuotaBytes: config.storageQuotaBytes,
    storageUsedBy: makeStatsQueries(statsStore).bytesStoredBy,
    afterCommit: async ({ position }) => {
      if (!(await bus.waitForGroups(position, READ_YOUR_WRITES_MS))) logger.warn({ position }, 'read models lag behind a command');
    },
  });

  const ops = makeOps('docshare', {});
  const swept = counter(ops.registry, 'docshare_blobs_swept_total', 'Unreferenced blobs removed by the blob sweeper');
  const sweeper = startBlobSweeper({
    blobs, logger, fileState: fileStateFrom(events),
    intervalMs: config.blobSweepIntervalSeconds * 1000, graceMs: config.blobSweepGraceSeconds * 1000,
    onSwept: ({ removed }) => swept.inc(removed),
  });
  const gateway = makeGateway({
    tokens, logger, ops,
    limiter: new RateLimiterMemory({ points: config.rateLimitPoints, duration: config.rateLimitWindowSeconds }),
    rateLimitPoints: config.rateLimitPoints,
    rateLimitWindowSeconds: config.rateLimitWindowSeconds,
    publicBaseUrl: config.publicBaseUrl,
    trustProxy: config.trustProxy,
    requestTimeoutMs: config.http.requestTimeoutMs,
    upstreams: {
      docs: makeDocsCommandApp({ commands, logger, spoolDir, maxUploadBytes: config.maxUploadBytes, publicBaseUrl: config.publicBaseUrl }),
      stats: makeStatsApp(statsStore, logger),
      files: makeFilesApp(filesStore, config.publicBaseUrl, logger),
      search: makeSearchApp(searchIndex, config.publicBaseUrl, logger),
    },
  });

  const { server, port } = await listen(gateway, config.port, config.host, config.http, logger);
  logger.info({
    port, publicBaseUrl: config.publicBaseUrl, dataDir: config.dataDir, events: replayTo, replayedMs,
    startMs: Math.round(performance.now() - started),
  }, 'docshare listening (embedded mode)');

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await closeServer(server);
      await sweeper.stop();
      await Promise.all(projectors.map((p) => p.stop()));
      await Promise.all([events.close(), claims.close(), statsStore.close(), filesStore.close(), searchIndex.close()]);
      await unlock();
    })();
    return stopping;
  };
  return { server, port, logger, stop };
};
