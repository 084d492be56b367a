import type { Readable } from 'node:stream';

/** Where a file part's bytes went: at least their count. */
export interface StoredBytes { size: number }

/**
 * Takes a file part's bytes while the form is being read (docs-command: straight into the blob
 * store, under a key made before the first byte arrives).
 */
export interface FileSink<S extends StoredBytes> {
  /**
   * Stores `body` (the part's bytes, at most `maxBytes`) and resolves once they are stored. Reads
   * `body` to its end, or destroys it when it fails; rejects with `BlobTooLarge` past `maxBytes`.
   */
  store(body: Readable, contentType: string, maxBytes: number): Promise<S>;
  /** Removes what `store` stored; never rejects (a blob it cannot remove is left to the sweeper). */
  discard(stored: S): Promise<void>;
}

/** The form's file part, stored: where (`S`), and what the client said it is. */
export type ReceivedFile<S extends StoredBytes> = S & { fileName: string; contentType: string };
