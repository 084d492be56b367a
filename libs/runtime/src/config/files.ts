import { intVar } from '@docshare/http';
import { concern } from './concern.ts';

/** Resumable uploads' settings (docs-command's ResumableSettings, plus the sweeper's interval). */
export interface ResumableConfig {
  maxBytes: number;
  sessionTtlSeconds: number;
  partBytes: number;
  partBytesPerSecond: number;
  sweepIntervalSeconds: number;
}

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
  /** Largest file a resumable upload (api-uploads) may declare (`File too large for a resumable upload`, 413). */
  MAX_RESUMABLE_BYTES: intVar(5 * 1024 ** 3, 1),
  /** How long a resumable upload session lasts: after it, `expired`, its quota released and its parts removed. */
  UPLOAD_SESSION_TTL_SECONDS: intVar(24 * 60 * 60, 1),
  /** The part size resumable uploads are cut into (5 to 64 MiB; larger for files that would need over 10,000 parts). */
  UPLOAD_PART_BYTES: intVar(8 * 1024 * 1024, 5 * 1024 * 1024, 64 * 1024 * 1024),
  /** Bytes per second one user may send through docshare's part URLs (not presigned ones); 0 = unlimited. */
  UPLOAD_PART_BYTES_PER_SECOND: intVar(100 * 1024 * 1024, 0),
  /** Seconds between passes of the upload sweeper (removes the parts of ended sessions); 0 = off. */
  UPLOAD_SWEEP_INTERVAL_SECONDS: intVar(10 * 60, 0),
}, (v) => ({
  maxUploadBytes: v.MAX_UPLOAD_BYTES,
  storageQuotaBytes: v.STORAGE_QUOTA_BYTES,
  downloadUrlTtlSeconds: v.DOWNLOAD_URL_TTL_SECONDS,
  blobSweepIntervalSeconds: v.BLOB_SWEEP_INTERVAL_SECONDS,
  blobSweepGraceSeconds: v.BLOB_SWEEP_GRACE_SECONDS,
  resumable: {
    maxBytes: v.MAX_RESUMABLE_BYTES,
    sessionTtlSeconds: v.UPLOAD_SESSION_TTL_SECONDS,
    partBytes: v.UPLOAD_PART_BYTES,
    partBytesPerSecond: v.UPLOAD_PART_BYTES_PER_SECOND,
    sweepIntervalSeconds: v.UPLOAD_SWEEP_INTERVAL_SECONDS,
  } satisfies ResumableConfig,
}));
