import { ConfigError, intVar, optionalVar, stringVar } from '@docshare/http';
import type { z } from 'zod';
import { concern } from './concern.ts';

/** MinIO (the blob store): address, keys, bucket, request timeout. */
export interface BlobSettings {
  endPoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  requestTimeoutMs: number;
  /** The object store's address as clients reach it (BLOB_PUBLIC_URL): signed links then redirect there. */
  publicEndPoint: string | undefined;
}

const BLOB_VARS = {
  MINIO_ENDPOINT: optionalVar(),
  MINIO_ACCESS_KEY: optionalVar(),
  MINIO_SECRET_KEY: optionalVar(),
  MINIO_BUCKET: stringVar('docshare-files'),
  /** A MinIO request without progress until its response headers fails (503). */
  MINIO_REQUEST_TIMEOUT_MS: intVar(10_000, 1),
  BLOB_PUBLIC_URL: optionalVar(),
};
type Values = z.output<z.ZodObject<typeof BLOB_VARS>>;
const REQUIRED = ['MINIO_ENDPOINT', 'MINIO_ACCESS_KEY', 'MINIO_SECRET_KEY'] as const;

const settingsOf = (v: Values, endPoint: string, accessKey: string, secretKey: string): BlobSettings => ({
  endPoint, accessKey, secretKey, bucket: v.MINIO_BUCKET, requestTimeoutMs: v.MINIO_REQUEST_TIMEOUT_MS, publicEndPoint: v.BLOB_PUBLIC_URL,
});

/** MINIO_*: address and keys required (the write side, the text extractor). */
export const blob = () => concern(BLOB_VARS, (v): BlobSettings => {
  const missing = REQUIRED.filter((key) => v[key] === undefined);
  if (v.MINIO_ENDPOINT === undefined || v.MINIO_ACCESS_KEY === undefined || v.MINIO_SECRET_KEY === undefined) {
    throw new ConfigError(missing.map((key) => `${key} is required`));
  }
  return settingsOf(v, v.MINIO_ENDPOINT, v.MINIO_ACCESS_KEY, v.MINIO_SECRET_KEY);
});

/** MINIO_*, optional (the edge streams signed content itself with them): undefined unless address and keys are all set. */
export const optionalBlob = () => concern(BLOB_VARS, (v): BlobSettings | undefined =>
  (v.MINIO_ENDPOINT === undefined || v.MINIO_ACCESS_KEY === undefined || v.MINIO_SECRET_KEY === undefined
    ? undefined : settingsOf(v, v.MINIO_ENDPOINT, v.MINIO_ACCESS_KEY, v.MINIO_SECRET_KEY)));
