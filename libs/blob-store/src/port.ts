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
}
