import { BlobTooLarge } from './port.ts';
import type { ByteRange } from './port.ts';

/** What a blob key must look like: a plain name, usable as a file name and as an object name. */
const KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** Whether `key` is a valid blob key (for names found in storage, which may hold anything). */
export const isKey = (key: string): boolean => typeof key === 'string' && KEY.test(key);

export function checkKey(key: string): void {
  // Keys are made by the server; anything else (slashes, "..", empty) is a bug or an attack.
  if (typeof key !== 'string' || !KEY.test(key)) throw new TypeError(`invalid blob key: ${JSON.stringify(key)}`);
}

function checkSize(size: number): void {
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new TypeError(`blob size must be a non-negative integer, got ${size}`);
  }
}

/**
 * Checks a put's declared size (undefined: unknown) and `maxBytes` limit; a declared size over the
 * limit is refused at once. Returns the most bytes the body may carry (undefined: no bound).
 */
export function checkPutSize(key: string, size: number | undefined, maxBytes: number | undefined): number | undefined {
  if (size !== undefined) checkSize(size);
  if (maxBytes !== undefined && (!Number.isSafeInteger(maxBytes) || maxBytes < 0)) {
    throw new TypeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  }
  if (size !== undefined && maxBytes !== undefined && size > maxBytes) throw new BlobTooLarge(key, maxBytes);
  return size ?? maxBytes;
}

export function checkRange(range: ByteRange): void {
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new RangeError(`invalid byte range ${start}-${end}`);
  }
}

/** A chunk of a put's body as bytes; a body may yield only bytes or strings. */
export function toBytes(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  throw new TypeError('blob body must yield bytes or strings');
}

/** The body of a put of `key` carried more than its declared `size`. */
export const tooLong = (key: string, size: number): Error => new Error(`blob ${key}: body is longer than the declared ${size} bytes`);

/** The body of a put of `key` ended after `count` of its declared `size` bytes. */
const tooShort = (key: string, count: number, size: number): Error =>
  new Error(`blob ${key}: body has ${count} bytes, declared ${size}`);

/**
 * Counts a put's body as it arrives: throws `tooLong` past a declared `size`, `BlobTooLarge` past
 * `maxBytes` (checked per chunk, before the chunk is used), `tooShort` at the end.
 */
export function byteCounter(key: string, size: number | undefined, maxBytes: number | undefined) {
  let count = 0;
  return {
    get count(): number { return count; },
    add(bytes: number): void {
      count += bytes;
      if (size !== undefined && count > size) throw tooLong(key, size);
      if (maxBytes !== undefined && count > maxBytes) throw new BlobTooLarge(key, maxBytes);
    },
    end(): number {
      if (size !== undefined && count !== size) throw tooShort(key, count, size);
      return count;
    },
  };
}
