import { intVar } from '@docshare/http';
import { concern } from './concern.ts';

/** Uploads, the storage quota, download links and the blob sweeper: the write side's, and `npm start`'s. */
export const files = () => concern({
  /** Largest file accepted (`File too large`, 413). */
  MAX_UPLOAD_BYTES: intVar(100 * 1024 * 1024, 1),
  /** Bytes each user may store (`Storage quota exceeded`, 413); 0 = unlimited. */
  STORAGE_QUOTA_BYTES: intVar(1024 ** 3, 0),
  /** Lifetime of a `download_url`. */
  DOWNLOAD_URL_TTL_SECONDS: intVar(15 * 60, 1),
  /** Seconds between passes of the blob sweeper (removes unreferenced blobs); 0 = off. */
  BLOB_SWEEP_INTERVAL_SECONDS: intVar(60 * 60, 0),
  /** Blobs younger than this are never swept (an upload's blob is written before its event). */
  BLOB_SWEEP_GRACE_SECONDS: intVar(60 * 60, 1),
}, (v) => ({
  maxUploadBytes: v.MAX_UPLOAD_BYTES,
  storageQuotaBytes: v.STORAGE_QUOTA_BYTES,
  downloadUrlTtlSeconds: v.DOWNLOAD_URL_TTL_SECONDS,
  blobSweepIntervalSeconds: v.BLOB_SWEEP_INTERVAL_SECONDS,
  blobSweepGraceSeconds: v.BLOB_SWEEP_GRACE_SECONDS,
}));
