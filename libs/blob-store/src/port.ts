import type { Readable } from 'node:stream';

/** Inclusive byte range, as in HTTP `Range: bytes=start-end`. */
export interface ByteRange { start: number; end: number }

export interface BlobInfo { size: number; contentType: string }

export interface BlobStream extends BlobInfo {
  /** The bytes asked for: the whole blob, or just the range. */
  body: Readable;
  /** The range served, when one was asked for (clamped to the blob's size). */
  range?: ByteRange;
}

/** One stored blob, as `list` gives it. */
export interface BlobEntry {
  key: string;
  /** When the blob was last written (its put completed). */
  lastModified: Date;
}

export interface PutOptions {
  /**
   * The most bytes the body may carry: a longer body is refused with `BlobTooLarge` (storing
   * nothing) as soon as its byte `maxBytes + 1` arrives, without reading the rest. Also what an
   * adapter sizes its parts by when `size` is unknown.
   */
  maxBytes?: number;
}

/** What `presignGet` signs into the URL: the answer's headers, as the object store will send them. */
export interface PresignOptions {
  /** How long the URL works, in seconds (at least 1; stores cap it, S3 at 7 days). */
  expiresInSeconds: number;
  /** The answer's Content-Disposition (e.g. `attachment; filename="a.pdf"`). */
  contentDisposition?: string;
  /** The answer's Content-Type, when it must differ from the type the blob was stored with. */
  contentType?: string;
  /** The answer's Cache-Control. */
  cacheControl?: string;
}

/** Thrown by `get` when a range starts at or past the end of the blob. */
export class RangeNotSatisfiable extends Error {
  readonly size: number;
  constructor(size: number) {
    super(`range not satisfiable for a blob of ${size} bytes`);
    this.name = 'RangeNotSatisfiable';
    this.size = size;
  }
}

/** Thrown by `put` when the body carries more than `maxBytes`. */
export class BlobTooLarge extends Error {
  readonly maxBytes: number;
  constructor(key: string, maxBytes: number) {
    super(`blob ${key}: body is longer than the limit of ${maxBytes} bytes`);
    this.name = 'BlobTooLarge';
    this.maxBytes = maxBytes;
  }
}

/** One part of a multipart upload, as `listParts` gives it. */
export interface PartInfo {
  partNumber: number;
  size: number;
  /** Quoted, as S3 gives it: `"<md5 hex of the part's bytes>"`. */
  etag: string;
}

/** A multipart upload in progress, as `listMultipart` gives it. */
export interface MultipartEntry {
  key: string;
  uploadId: string;
  /** When `createMultipart` made it: what a sweeper ages it by. */
  initiated: Date;
}

/** No multipart upload with that id for that key (never made, completed, or aborted). */
export class NoSuchUpload extends Error {
  constructor(key: string, uploadId: string) {
    super(`blob ${key}: no multipart upload ${uploadId}`);
    this.name = 'NoSuchUpload';
  }
}

/** A part's body did not carry exactly the size declared (nothing is stored for that part). */
export class PartSizeMismatch extends Error {
  readonly expected: number;
  constructor(key: string, partNumber: number, expected: number, detail: string) {
    super(`blob ${key}: part ${partNumber} ${detail}, declared ${expected} bytes`);
    this.name = 'PartSizeMismatch';
    this.expected = expected;
  }
}

/**
 * `completeMultipart` named a part that is not there, or with another etag, or too small (a part
 * other than the last under 5 MiB, S3's minimum), or parts out of ascending order. The upload
 * stays as it was, usable.
 */
export class InvalidPart extends Error {
  constructor(key: string, detail: string) {
    super(`blob ${key}: ${detail}`);
    this.name = 'InvalidPart';
  }
}

/** The smallest part S3 accepts other than an upload's last one. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
/** The most parts one multipart upload may have (part numbers 1 to 10 000). */
export const MAX_PART_NUMBER = 10_000;

/**
 * File bytes, streamed in (with a known size or not) and out whole or by range. Keys are names the
 * server makes: 1 to 200 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit. Every method
 * refuses any other key with a TypeError (a refused put still releases its body).
 */
export interface BlobStore {
  /**
   * Streams `body` to `key` and resolves with the number of bytes stored, once they are durable.
   * `size` undefined: the body's length is unknown until it ends (an upload being received).
   * Rejects, storing nothing under `key` (a previous blob there stays) and destroying `body`, when
   * the stream fails, when it does not carry exactly `size` bytes (if given), or more than
   * `options.maxBytes` (`BlobTooLarge`). Memory held stays bounded whatever the body's length.
   */
  put(key: string, body: Readable, size: number | undefined, contentType: string, options?: PutOptions): Promise<number>;
  /** The blob, or null when missing. */
  get(key: string, range?: ByteRange): Promise<BlobStream | null>;
  stat(key: string): Promise<BlobInfo | null>;
  /** Removes the blob; a missing key is a no-op. */
  remove(key: string): Promise<void>;
  /**
   * Every stored blob with its last-modified time, in no particular order, streamed (a store may
   * hold millions). Puts in flight are not listed. What the garbage sweeper walks.
   */
  list(): AsyncIterable<BlobEntry>;
  /**
   * Present only on a store that clients can reach themselves (MinIO with a public endpoint): a
   * URL that serves the blob's bytes (GET, `Range` supported) with the given answer headers until
   * it expires, signed without asking the store (the blob's existence is not checked).
   */
  presignGet?(key: string, options: PresignOptions): Promise<string>;

  /*
   * Multipart uploads (S3's protocol, on every adapter): a blob sent in numbered parts, in any
   * order and over any time, that becomes visible under its key only when completed. What
   * resumable uploads are built on. Upload ids are the store's own (refused with a TypeError when
   * malformed, like keys); part numbers run from 1 to 10 000 (a TypeError otherwise).
   */

  /** Starts a multipart upload of `key`, the blob to have `contentType`; resolves with its upload id. */
  createMultipart(key: string, contentType: string): Promise<string>;
  /**
   * Stores part `partNumber` (replacing one sent before) from `body`, which must carry exactly
   * `size` bytes: rejects with `PartSizeMismatch` as soon as byte `size + 1` arrives (the rest is
   * never read) or when the body ends short, storing nothing for that part (an earlier one stays).
   * `NoSuchUpload` when the upload is not there. `body` is destroyed on any rejection. Resolves
   * with the part's etag (quoted) once it is durable.
   */
  putPart(key: string, uploadId: string, partNumber: number, body: Readable, size: number): Promise<string>;
  /** The parts stored so far, ascending by number; null when the upload is not there. */
  listParts(key: string, uploadId: string): Promise<PartInfo[] | null>;
  /**
   * Makes the blob from `parts` (ascending, each with the etag its put gave), with the content
   * type given at creation, and ends the upload; resolves with the blob's size. `InvalidPart`
   * when a part is missing, has another etag, or is too small, the upload left usable. An upload
   * already completed (gone, and the blob there) resolves with the blob's size again; an upload
   * gone without a blob: `NoSuchUpload`.
   */
  completeMultipart(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<number>;
  /** Ends the upload and drops its parts; an upload not there is a no-op. */
  abortMultipart(key: string, uploadId: string): Promise<void>;
  /** The uploads in progress (made, neither completed nor aborted), streamed. What an upload sweeper walks. */
  listMultipart(): AsyncIterable<MultipartEntry>;
  /**
   * Present only with `presignGet` (clients reach the store themselves): a URL to which a plain
   * `PUT` of the part's bytes stores part `partNumber` and answers its etag in an `ETag` header,
   * until it expires. Signed without asking the store.
   */
  presignPart?(key: string, uploadId: string, partNumber: number, expiresInSeconds: number): Promise<string>;
}
