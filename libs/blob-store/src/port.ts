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

/** Thrown by `get` when a range starts at or past the end of the blob. */
export class RangeNotSatisfiable extends Error {
  readonly size: number;
  constructor(size: number) {
    super(`range not satisfiable for a blob of ${size} bytes`);
    this.name = 'RangeNotSatisfiable';
    this.size = size;
  }
}

/**
 * File bytes, streamed in with a known size and out whole or by range. Keys are names the server
 * makes: 1 to 200 of `A-Z a-z 0-9 . _ -`, starting with a letter or digit. Every method refuses
 * any other key with a TypeError (a refused put still releases its body).
 */
export interface BlobStore {
  /**
   * Streams `body` to `key`. Resolves once the bytes are durable; rejects (storing nothing under
   * `key`) when the stream fails or does not carry exactly `size` bytes.
   */
  put(key: string, body: Readable, size: number, contentType: string): Promise<void>;
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
}
