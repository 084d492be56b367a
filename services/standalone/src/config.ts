import { httpLimitsOf, publicBaseUrlOf, trustProxyOf, type HttpLimits } from '@docshare/http';
import { resolve } from 'node:path';

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
  logLevel: string;
  /** Header, idle and total timeouts and the connection limit of the public port (`HTTP_*`). */
  http: HttpLimits;
  /** Seconds between passes of the blob sweeper (removes unreferenced blobs); 0 = off. */
  blobSweepIntervalSeconds: number;
  /** Blobs younger than this are never swept (an upload's blob is written before its event). */
  blobSweepGraceSeconds: number;
}

const integer = (env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number => {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
};

/** The configuration of embedded mode; throws a clear error on a bad value. */
export const embeddedConfig = (env: NodeJS.ProcessEnv): EmbeddedConfig => {
  const port = integer(env, 'PORT', 8080, 0);
  return {
    port,
    host: env.HOST ?? '0.0.0.0',
    publicBaseUrl: publicBaseUrlOf(env, port),
    dataDir: resolve(env.DATA_DIR ?? './data'),
    rateLimitPoints: integer(env, 'RATE_LIMIT_POINTS', 30, 1),
    rateLimitWindowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1),
    maxUploadBytes: integer(env, 'MAX_UPLOAD_BYTES', 100 * 1024 * 1024, 1),
    storageQuotaBytes: integer(env, 'STORAGE_QUOTA_BYTES', 1024 ** 3, 0),
    jwtSecret: env.JWT_SECRET || undefined,
    jwtTtlSeconds: integer(env, 'JWT_TTL_SECONDS', 24 * 60 * 60, 1),
    downloadUrlTtlSeconds: integer(env, 'DOWNLOAD_URL_TTL_SECONDS', 15 * 60, 1),
    trustProxy: trustProxyOf(env.TRUST_PROXY),
    logLevel: env.LOG_LEVEL ?? 'info',
    http: httpLimitsOf(env),
    blobSweepIntervalSeconds: integer(env, 'BLOB_SWEEP_INTERVAL_SECONDS', 60 * 60, 0),
    blobSweepGraceSeconds: integer(env, 'BLOB_SWEEP_GRACE_SECONDS', 60 * 60, 1),
  };
};
