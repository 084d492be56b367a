import {
  HTTP_VARS, httpLimitsOf, intVar, metricsListenOf, optionalVar, publicBaseUrlOf, readConfig, stringVar, trustProxyOf, type HttpLimits, type MetricsListen,
} from '@docshare/http';
import { resolve } from 'node:path';
import { EXTRACT_VARS, type ExtractSettings } from '@docshare/text-extractor';
import { corsOriginsVar, type CorsOrigins } from '@docshare/gateway';

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
  /** The text extractor's budgets (`EXTRACT_*`). */
  extract: ExtractSettings;
}

/** Everything `npm start` reads from its environment (decisions §13), as one schema. */
export const EMBEDDED_VARS = {
  ...HTTP_VARS,
  PORT: intVar(8080, 0),
  HOST: stringVar('0.0.0.0'),
  PUBLIC_BASE_URL: optionalVar(),
  DATA_DIR: stringVar('./data'),
  RATE_LIMIT_POINTS: intVar(30, 1),
  RATE_LIMIT_WINDOW_SECONDS: intVar(60, 1),
  MAX_UPLOAD_BYTES: intVar(100 * 1024 * 1024, 1),
  STORAGE_QUOTA_BYTES: intVar(1024 ** 3, 0),
  JWT_SECRET: optionalVar(),
  JWT_TTL_SECONDS: intVar(24 * 60 * 60, 1),
  DOWNLOAD_URL_TTL_SECONDS: intVar(15 * 60, 1),
  TRUST_PROXY: optionalVar(),
  CORS_ORIGINS: corsOriginsVar(),
  LOG_LEVEL: stringVar('info'),
  BLOB_SWEEP_INTERVAL_SECONDS: intVar(60 * 60, 0),
  BLOB_SWEEP_GRACE_SECONDS: intVar(60 * 60, 1),
  ...EXTRACT_VARS,
};

/** The configuration of embedded mode; throws a ConfigError naming every bad value. */
export const embeddedConfig = (env: NodeJS.ProcessEnv): EmbeddedConfig => {
  const v = readConfig(EMBEDDED_VARS, env);
  return {
    port: v.PORT,
    host: v.HOST,
    publicBaseUrl: publicBaseUrlOf(env, v.PORT),
    dataDir: resolve(v.DATA_DIR),
    rateLimitPoints: v.RATE_LIMIT_POINTS,
    rateLimitWindowSeconds: v.RATE_LIMIT_WINDOW_SECONDS,
    maxUploadBytes: v.MAX_UPLOAD_BYTES,
    storageQuotaBytes: v.STORAGE_QUOTA_BYTES,
    jwtSecret: v.JWT_SECRET,
    jwtTtlSeconds: v.JWT_TTL_SECONDS,
    downloadUrlTtlSeconds: v.DOWNLOAD_URL_TTL_SECONDS,
    trustProxy: trustProxyOf(v.TRUST_PROXY),
    corsOrigins: v.CORS_ORIGINS,
    logLevel: v.LOG_LEVEL,
    http: httpLimitsOf(env),
    metrics: metricsListenOf(env, v.PORT),
    blobSweepIntervalSeconds: v.BLOB_SWEEP_INTERVAL_SECONDS,
    blobSweepGraceSeconds: v.BLOB_SWEEP_GRACE_SECONDS,
    extract: {
      EXTRACT_TIMEOUT_MS: v.EXTRACT_TIMEOUT_MS, EXTRACT_MEMORY_MB: v.EXTRACT_MEMORY_MB, EXTRACT_MAX_CHARS: v.EXTRACT_MAX_CHARS,
      EXTRACT_MAX_BYTES: v.EXTRACT_MAX_BYTES, EXTRACT_CONCURRENCY: v.EXTRACT_CONCURRENCY, EXTRACT_OWNER_BACKLOG: v.EXTRACT_OWNER_BACKLOG,
    },
  };
};
