import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * A pass-through that hashes (SHA-256) and counts what goes through it, so a ZIP's or an original's
 * checksum is known when its last byte is written, without reading it back. It holds no chunk:
 * backpressure passes through it as through any Transform.
 */
export class DigestTap extends Transform {
  readonly #hash = createHash('sha256');
  #bytes = 0;
  #sha256: string | undefined;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#hash.update(chunk);
    this.#bytes += chunk.length;
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.#sha256 = this.#hash.digest('hex');
    callback();
  }

  /** Bytes seen so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The hex SHA-256 of every byte, once the stream has ended (before: an error, not a partial hash). */
  get sha256(): string {
    if (this.#sha256 === undefined) throw new Error('DigestTap: the stream has not ended yet');
    return this.#sha256;
  }
}
