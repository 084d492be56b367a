import { BlobTooLarge, InvalidPart, MAX_PART_NUMBER, PartSizeMismatch } from './port.ts';
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

/** S3's largest part: a part declared larger can never be stored. */
const MAX_PART_BYTES = 5 * 1024 * 1024 * 1024;

/** Refuses an upload id that is not a string matching `pattern` (the adapter's own id format). */
export function checkUploadId(uploadId: string, pattern: RegExp): void {
  if (typeof uploadId !== 'string' || !pattern.test(uploadId)) throw new TypeError(`invalid upload id: ${JSON.stringify(uploadId)}`);
}

export function checkPartNumber(partNumber: number): void {
  if (!Number.isSafeInteger(partNumber) || partNumber < 1 || partNumber > MAX_PART_NUMBER) {
    throw new TypeError(`part number must be an integer from 1 to ${MAX_PART_NUMBER}, got ${partNumber}`);
  }
}

export function checkPartSize(size: number): void {
  if (!Number.isSafeInteger(size) || size < 0 || size > MAX_PART_BYTES) {
    throw new TypeError(`part size must be an integer from 0 to ${MAX_PART_BYTES}, got ${size}`);
  }
}

/** An etag without its quotes (clients may send either form; S3 compares them so). */
export const bareEtag = (etag: string): string => etag.replace(/^"(.*)"$/, '$1');

/**
 * Checks a completion's part list: well-formed entries (a TypeError otherwise), at least one,
 * strictly ascending part numbers (`InvalidPart` otherwise, as S3's InvalidPartOrder).
 */
export function checkCompleteParts(key: string, parts: { partNumber: number; etag: string }[]): void {
  if (!Array.isArray(parts)) throw new TypeError('parts must be a list of {partNumber, etag}');
  for (const part of parts) {
    checkPartNumber(part.partNumber);
    if (typeof part.etag !== 'string') throw new TypeError(`part ${part.partNumber}: etag must be a string`);
  }
  if (parts.length === 0) throw new InvalidPart(key, 'a multipart upload is completed with at least one part');
  for (let i = 1; i < parts.length; i++) {
    if (parts[i]!.partNumber <= parts[i - 1]!.partNumber) throw new InvalidPart(key, 'parts must be listed in ascending order, each once');
  }
}

/**
 * Counts a part's body as it arrives, like `byteCounter` with a declared size, throwing
 * `PartSizeMismatch` past `size` (checked per chunk, before the chunk is used) or short at the end.
 */
export function partCounter(key: string, partNumber: number, size: number) {
  let count = 0;
  return {
    get count(): number { return count; },
    add(bytes: number): void {
      count += bytes;
      if (count > size) throw new PartSizeMismatch(key, partNumber, size, 'has more bytes');
    },
    end(): number {
      if (count !== size) throw new PartSizeMismatch(key, partNumber, size, `has ${count} bytes`);
      return count;
    },
  };
}
