import type { CorsOrigins, HttpLimits, MetricsListen } from '@docshare/http';
import {
  consistency, dataDir, edge, extraction, files, loadConfig, optionalAuth, optionalPersonalData, rateLimit, service, webhooks, type ExtractSettings, type ResumableConfig,
  type WebhookSettings,
} from '@docshare/runtime/config';

/** Everything `npm start` can be told, from the environment (decisions §13). */
export interface EmbeddedConfig {
  port: number;
  host: string;
  publicBaseUrl: string;
  dataDir: string;
  rateLimitPoints: number;
  rateLimitWindowSeconds: number;
  maxUploadBytes: number;
  /** Bytes each user may store (`Storage quota exceeded` past it); 0 = unlimited. */
  storageQuotaBytes: number;
  jwtSecret: string | undefined;
  jwtTtlSeconds: number;
  downloadUrlTtlSeconds: number;
  trustProxy: boolean | number | string | undefined;
  /** Browser origins allowed to call the API cross-origin (`CORS_ORIGINS`); undefined: no CORS headers. */
  corsOrigins: CorsOrigins | undefined;
  logLevel: string;
  /** Header, idle and total timeouts and the connection limit of the public port (`HTTP_*`). */
  http: HttpLimits;
  /** Where /metrics is served (`METRICS_PORT`, `METRICS_HOST`); never on the public port, so unset: nowhere. */
  metrics: MetricsListen | undefined;
  /** Seconds between passes of the blob sweeper (removes unreferenced blobs); 0 = off. */
  blobSweepIntervalSeconds: number;
  /** Blobs younger than this are never swept (an upload's blob is written before its event). */
  blobSweepGraceSeconds: number;
  /** Resumable uploads (`MAX_RESUMABLE_BYTES`, `UPLOAD_*`). */
  resumable: ResumableConfig;
  /** How long a read carrying a consistency token waits for its read model before answering anyway (`CONSISTENCY_WAIT_MS`). */
  consistencyWaitMs: number;
  /** The text extractor's budgets (`EXTRACT_*`). */
  extract: ExtractSettings;
  /** Webhooks (`WEBHOOK_*`): the limit, the URL policy, the sealing key (generated into DATA_DIR when unset), the dispatcher's schedule and budgets. */
  webhooks: WebhookSettings;
  /** The key-encryption key(s) of personal data (`DATA_KEK` / `DATA_KEK_FILE`); undefined: generated into DATA_DIR/secrets/data-kek. */
  dataKek: string | undefined;
}

/** Everything `npm start` reads from its environment (decisions §13): the same concerns, and defaults, as the services'. */
export const EMBEDDED_CONCERNS = {
  service: service({ port: 8080, publicPort: 'own' }),
  dataDir: dataDir(),
  rateLimit: rateLimit(),
  files: files(),
  auth: optionalAuth(),
  edge: edge(),
  extraction: extraction(),
  consistency: consistency(),
  webhooks: webhooks(),
  personalData: optionalPersonalData(),
};

/** The configuration of embedded mode; throws a ConfigError naming every bad value. */
export const embeddedConfig = (env: NodeJS.ProcessEnv): EmbeddedConfig => {
  const c = loadConfig(env, EMBEDDED_CONCERNS);
  return {
    port: c.service.port,
    host: c.service.host,
    publicBaseUrl: c.service.publicBaseUrl,
    dataDir: c.dataDir,
    rateLimitPoints: c.rateLimit.points,
    rateLimitWindowSeconds: c.rateLimit.windowSeconds,
    maxUploadBytes: c.files.maxUploadBytes,
    storageQuotaBytes: c.files.storageQuotaBytes,
    jwtSecret: c.auth.jwtSecret,
    jwtTtlSeconds: c.auth.jwtTtlSeconds,
    downloadUrlTtlSeconds: c.files.downloadUrlTtlSeconds,
    trustProxy: c.edge.trustProxy,
    corsOrigins: c.edge.corsOrigins,
    logLevel: c.service.logLevel,
    http: c.service.http,
    metrics: c.service.metrics,
    blobSweepIntervalSeconds: c.files.blobSweepIntervalSeconds,
    blobSweepGraceSeconds: c.files.blobSweepGraceSeconds,
    resumable: c.files.resumable,
    consistencyWaitMs: c.consistency.consistencyWaitMs,
    extract: c.extraction,
    webhooks: c.webhooks,
    dataKek: c.personalData.kek,
  };
};
