import { createHash } from 'node:crypto';
import http, { type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { retrying } from '@docshare/contracts';
import { Client } from 'minio';
import { BlobTooLarge, InvalidPart, NoSuchUpload, RangeNotSatisfiable } from './port.ts';
import type { BlobEntry, BlobInfo, BlobStore, BlobStream, ByteRange, MultipartEntry, PartInfo, PresignOptions, PutOptions } from './port.ts';
import {
  bareEtag, byteCounter, checkCompleteParts, checkKey, checkPartNumber, checkPartSize, checkPutSize, checkRange, checkUploadId,
  isKey, partCounter, toBytes,
} from './validate.ts';

/*
 * One bucket, one object per blob, named by the blob key itself (keys are server-made and already
 * safe as object names). The content type is the object's own Content-Type, so bytes and metadata
 * are published together by the one request that creates the object.
 *
 * Puts never hand the caller's stream to minio-js: `putObject(stream)` does not check the byte
 * count against `size` (a short or long body would be stored as is), leaves the upload hanging
 * when the source stream errors during a multipart upload, never aborts a failed multipart upload,
 * resumes any earlier incomplete upload of the same key, and with an unknown size picks parts of
 * 5 TiB / 10 000 (over 500 MiB each, held in memory). Instead the body is read here, counted, and
 * cut into parts of `partSize` bytes, whether its size is declared or not:
 *   - a body that fits in one part (declared ≤ partSize, or ending before partSize bytes arrived):
 *     read into one buffer, checked, then sent as one PUT;
 *   - larger: a multipart upload. Parts are filled from the body and sent as they fill, up to
 *     `partsInFlight` at a time while the next one is read (reading the client and writing to the
 *     store overlap); completed only once the body has ended with the right count; aborted on any
 *     failure.
 * Either way the object under `key` appears (or is replaced) only when the whole body was right:
 * a failed put leaves the previous object, or nothing, under the key. Memory held per put is at
 * most `partsInFlight + 1` parts plus the stream's own buffering, whatever the blob's size.
 *
 * The port's multipart uploads (resumable uploads, whose parts arrive one request each, or go
 * straight from clients to the store by presigned URL) are S3's own, request for request; a part
 * put through the adapter is read into one buffer of exactly its declared size first, so a body
 * of another length never reaches the store.
 */

// Header-safe: visible ASCII and spaces, bounded.
const CONTENT_TYPE = /^[\x20-\x7e]{1,1024}$/;
const MIN_PART = 5 * 1024 * 1024;
const DEFAULT_PART = 8 * 1024 * 1024;
const DEFAULT_PARTS_IN_FLIGHT = 2;
const MAX_PARTS = 10_000;
// S3's longest presigned URL: 7 days.
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;
// The upload ids S3 and MinIO make (base64url-like): minio-js puts them unescaped in query strings.
const S3_UPLOAD_ID = /^[A-Za-z0-9._~-]{1,1024}$/;
// What S3 answers a completion naming a part that is missing, has another etag, is too small, or out of order.
const INVALID_PART_CODES = new Set(['InvalidPart', 'EntityTooSmall', 'PartTooSmall', 'InvalidPartOrder']);
// How often `get` retries when the object changes between a failed ranged read and the stat
// that explains it.
const RANGE_RETRIES = 3;

/** A range refused by an object that has grown past the range's start meanwhile: worth reading again. */
class RangeRaced extends Error {
  readonly size: number;
  constructor(size: number) {
    super('the object grew while its range was read');
    this.size = size;
  }
}

export interface MinioBlobStoreOptions {
  /** e.g. `http://127.0.0.1:9000` or `https://s3.example.com`. */
  endPoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  /** Bytes per multipart part, and the largest blob sent as a single PUT. Default 8 MiB, min 5 MiB. */
  partSize?: number;
  /** Parts of one put being sent at once while the next is read from the body. Default 2. */
  partsInFlight?: number;
  /**
   * The store's address as clients reach it (`http(s)://host[:port]`, e.g. BLOB_PUBLIC_URL), when
   * they can: enables `presignGet`, URLs signed for that host. Unset: no `presignGet`.
   */
  publicEndPoint?: string;
  /** The bucket's region; default: asked from the server (MinIO answers us-east-1). */
  region?: string;
  /**
   * How long a request may go without progress before it fails with ETIMEDOUT (a 503 for the
   * client): connecting, sending, and waiting for the response headers. Default 10 000 ms. Once
   * the headers are in, a body being streamed to a client is not timed here (a slow client must
   * not cut its own download; the HTTP server's idle timeout bounds it).
   */
  requestTimeoutMs?: number;
}

/** minio-js's Client, with its (protected) listing of an upload's parts made usable. */
class StoreClient extends Client {
  /** Every part of the upload (minio-js pages through them), etags without quotes. */
  uploadParts(bucket: string, key: string, uploadId: string): ReturnType<Client['listParts']> {
    return this.listParts(bucket, key, uploadId);
  }
}

/**
 * http(s).request with a no-progress timeout until the response headers arrive. minio-js itself
 * has none: a frozen server (SIGSTOP, a dead peer without RST) held every request for ever.
 */
function timedTransport(base: Pick<typeof http, 'request'>, timeoutMs: number): Pick<typeof http, 'request'> {
  const request = (...args: unknown[]): ClientRequest => {
    const req = (base.request as (...a: unknown[]) => ClientRequest)(...args);
    req.setTimeout(timeoutMs, () => {
      req.destroy(Object.assign(new Error(`object store: no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    });
    req.once('response', () => req.setTimeout(0));
    return req;
  };
  return { request: request };
}

/** A BlobStore over one S3 bucket (MinIO or any S3-compatible server); creates the bucket if missing. */
export async function makeMinioBlobStore(options: MinioBlobStoreOptions): Promise<BlobStore> {
  const { bucket, accessKey, secretKey } = options;
  const partSize = options.partSize ?? DEFAULT_PART;
  if (!Number.isSafeInteger(partSize) || partSize < MIN_PART) {
    throw new RangeError(`partSize must be an integer of at least ${MIN_PART} bytes, got ${partSize}`);
  }
  const partsInFlight = options.partsInFlight ?? DEFAULT_PARTS_IN_FLIGHT;
  if (!Number.isSafeInteger(partsInFlight) || partsInFlight < 1) {
    throw new RangeError(`partsInFlight must be a positive integer, got ${partsInFlight}`);
  }
  const endPoint = parseEndPoint(options.endPoint);
  const publicEndPoint = options.publicEndPoint === undefined ? undefined : parseEndPoint(options.publicEndPoint);
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  if (!Number.isSafeInteger(requestTimeoutMs) || requestTimeoutMs < 1) {
    throw new RangeError(`requestTimeoutMs must be a positive integer, got ${requestTimeoutMs}`);
  }
  const client = new StoreClient({
    ...endPoint,
    transport: timedTransport(endPoint.useSSL ? https : http, requestTimeoutMs),
    accessKey,
    secretKey,
    partSize,
    ...(options.region === undefined ? {} : { region: options.region }),
  });
  await ensureBucket(client, bucket, options.region);

  // Content-MD5 only where the payload is not signed: over http minio-js signs each body's
  // SHA-256 (x-amz-content-sha256), which the server checks; over https it sends UNSIGNED-PAYLOAD.
  const md5Needed = endPoint.useSSL;

  /**
   * Streams `body` to `key` in parts (see the top of this file); resolves with the byte count.
   * `limit` is the most bytes the body may carry (its declared size, or maxBytes), if any.
   */
  const putBody = async (
    key: string, body: Readable, size: number | undefined, maxBytes: number | undefined, limit: number | undefined,
    headers: Record<string, string>,
  ): Promise<number> => {
    // S3 allows 10 000 parts: a blob that may be too large for that many parts of `partSize` gets larger parts.
    const part = Math.max(partSize, limit === undefined ? 0 : Math.ceil(limit / MAX_PARTS));
    const reader = partReader(body, byteCounter(key, size, maxBytes));
    // The first part: a declared size that fits one part is read into a buffer of exactly that
    // size, a larger one into a part buffer; a body of unknown size is gathered as it comes, so a
    // small upload (or a slow one) never holds a whole part's worth of memory.
    let first: Buffer;
    let firstFilled: number;
    if (size === undefined) {
      const chunks = await reader.gather(part);
      firstFilled = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
      // A copy: the buffer becomes a reusable part buffer, and the source's chunks are not ours to write into.
      first = Buffer.concat(chunks, firstFilled);
    } else {
      first = Buffer.allocUnsafe(Math.min(size, part));
      firstFilled = await reader.fill(first);
    }
    if (firstFilled < first.length || await reader.ended()) {
      const count = reader.end();
      // A Buffer goes out with its Content-Length and a checksum of exactly these bytes.
      await client.putObject(bucket, key, first.subarray(0, firstFilled), count, headers);
      return count;
    }

    const uploadId = await client.initiateNewMultipartUpload(bucket, key, headers);
    const etags: { part: number; etag: string }[] = [];
    const inFlight = new Set<Promise<void>>();
    // Buffers whose part has been sent, ready to be filled again: at most partsInFlight + 1 exist.
    const spare: Buffer[] = [];
    let failure: { error: unknown } | undefined;
    let parts = 0;
    const send = (buf: Buffer, length: number): void => {
      const partNumber = ++parts;
      if (partNumber > MAX_PARTS) throw new BlobTooLarge(key, MAX_PARTS * part);
      const bytes = buf.subarray(0, length);
      const partHeaders: Record<string, string> = md5Needed ? { 'Content-MD5': createHash('md5').update(bytes).digest('base64') } : {};
      const sent: Promise<void> = client.uploadPart({ bucketName: bucket, objectName: key, uploadID: uploadId, partNumber, headers: partHeaders }, bytes)
        .then(({ etag }) => { etags.push({ part: partNumber, etag }); }, (error: unknown) => {
          failure ??= { error };
          // Stop reading the body at once: the put has failed.
          body.destroy();
        })
        .finally(() => {
          inFlight.delete(sent);
          spare.push(buf);
        });
      inFlight.add(sent);
    };
    try {
      send(first, firstFilled);
      for (let last = false; !last;) {
        // Backpressure: nothing more is read while partsInFlight parts are being sent.
        while (inFlight.size >= partsInFlight) await Promise.race(inFlight);
        if (failure) throw failure.error;
        const buf = spare.pop() ?? Buffer.allocUnsafe(part);
        const filled = await reader.fill(buf);
        last = filled < buf.length || await reader.ended();
        if (filled > 0) send(buf, filled);
        else spare.push(buf);
      }
      const count = reader.end();
      await Promise.all(inFlight);
      if (failure) throw failure.error;
      etags.sort((a, b) => a.part - b.part);
      // Only this request makes the object visible (replacing any previous one at once).
      await client.completeMultipartUpload(bucket, key, uploadId, etags);
      return count;
    } catch (err) {
      // A part's own failure explains the body destroyed after it.
      const cause = failure ? failure.error : err;
      // Parts still in flight settle before the abort, so none lands after it. Parts of an aborted
      // upload are dropped; should the abort itself fail, they are never visible as an object and
      // the server's stale-upload cleanup removes them later.
      await Promise.allSettled(inFlight);
      await client.abortMultipartUpload(bucket, key, uploadId).catch(() => {});
      throw cause;
    }
  };

  const publicClient = publicEndPoint === undefined ? undefined : new Client({
    ...publicEndPoint,
    accessKey,
    secretKey,
    // Signing for the public host needs the region; asking that host for it may not even be
    // possible from here, so the region comes from the store's own client.
    region: options.region ?? await client.getBucketRegionAsync(bucket),
  });

  const stat = async (key: string): Promise<BlobInfo | null> => {
    checkKey(key);
    const info = await orNullIfMissing(client.statObject(bucket, key));
    if (info === null) return null;
    const contentType: unknown = info.metaData['content-type'];
    return { size: info.size, contentType: typeof contentType === 'string' ? contentType : 'application/octet-stream' };
  };

  const checkContentType = (contentType: string): void => {
    if (typeof contentType !== 'string' || !CONTENT_TYPE.test(contentType)) {
      throw new TypeError(`blob content type must be 1-1024 printable ASCII characters, got ${JSON.stringify(contentType)}`);
    }
  };

  /** Checks an upload's key and id (a TypeError when malformed). */
  const checkUpload = (key: string, uploadId: string): void => {
    checkKey(key);
    checkUploadId(uploadId, S3_UPLOAD_ID);
  };

  return {
    async put(key: string, body: Readable, size: number | undefined, contentType: string, options: PutOptions = {}): Promise<number> {
      try {
        checkKey(key);
        const limit = checkPutSize(key, size, options.maxBytes);
        checkContentType(contentType);
        return await putBody(key, body, size, options.maxBytes, limit, { 'Content-Type': contentType });
      } catch (err) {
        // The caller handed the body over; a rejected put must not leave it half read and paused.
        body.destroy();
        throw err;
      }
    },

    async get(key: string, range?: ByteRange): Promise<BlobStream | null> {
      checkKey(key);
      if (range === undefined) {
        // One request: the headers describe exactly the bytes of this body, even if the object
        // is replaced meanwhile.
        const res = await orNullIfMissing(client.getObject(bucket, key));
        if (res === null) return null;
        const headers = headersOf(res);
        return { size: contentLength(headers), contentType: contentTypeOf(headers), body: res };
      }
      checkRange(range);
      try {
        return await retrying(async () => {
          try {
            const res = await orNullIfMissing(client.getPartialObject(bucket, key, range.start, range.end - range.start + 1));
            if (res === null) return null;
            const headers = headersOf(res);
            // S3 clamps the end to the object; Content-Range says what was served and the total size.
            const served = parseContentRange(headers['content-range']);
            if (served === null) {
              // 200 instead of 206: a server that ignored the Range header.
              res.destroy();
              throw new Error(`blob ${key}: the server answered a range request without Content-Range`);
            }
            return {
              size: served.size,
              contentType: contentTypeOf(headers),
              body: res,
              range: { start: served.start, end: served.end },
            };
          } catch (err) {
            if (codeOf(err) !== 'InvalidRange') throw err;
            // MinIO and S3 put the object's size in the 416 error (ActualObjectSize): the size of
            // the very object that refused the range.
            const actual = Number(fieldOf(err, 'actualobjectsize'));
            if (Number.isSafeInteger(actual) && actual >= 0 && range.start >= actual) throw new RangeNotSatisfiable(actual);
          }
          // Otherwise ask for the size; should the object have grown meanwhile so the range is now
          // satisfiable, read again (at once, RANGE_RETRIES reads in all).
          const info = await stat(key);
          if (info === null) return null;
          if (range.start >= info.size) throw new RangeNotSatisfiable(info.size);
          throw new RangeRaced(info.size);
        }, { attempts: RANGE_RETRIES, baseMs: 0, capMs: 0, retryIf: (err) => err instanceof RangeRaced });
      } catch (err) {
        if (err instanceof RangeRaced) throw new RangeNotSatisfiable(err.size);
        throw err;
      }
    },

    stat,

    async remove(key: string): Promise<void> {
      checkKey(key);
      // S3 answers 204 whether or not the object existed.
      await client.removeObject(bucket, key);
    },

    async *list(): AsyncIterable<BlobEntry> {
      // ListObjectsV2 pages of 1000, fetched as the caller reads; lastModified is when the
      // object's upload completed. Names that are not blob keys (put there by hand) are skipped.
      for await (const item of client.listObjectsV2(bucket, '', true)) {
        const { name, lastModified }: { name?: unknown; lastModified?: unknown } = item;
        if (typeof name === 'string' && isKey(name) && lastModified instanceof Date) yield { key: name, lastModified };
      }
    },

    ...(publicClient === undefined ? {} : {
      async presignGet(key: string, presign: PresignOptions): Promise<string> {
        checkKey(key);
        const { expiresInSeconds, contentDisposition, cacheControl, contentType } = presign;
        if (!Number.isSafeInteger(expiresInSeconds) || expiresInSeconds < 1) {
          throw new RangeError(`expiresInSeconds must be a positive integer, got ${expiresInSeconds}`);
        }
        const answer: Record<string, string> = {};
        if (contentDisposition !== undefined) answer['response-content-disposition'] = contentDisposition;
        if (contentType !== undefined) answer['response-content-type'] = contentType;
        if (cacheControl !== undefined) answer['response-cache-control'] = cacheControl;
        // Pure computation (an HMAC): no request is made, the region is known.
        return publicClient.presignedGetObject(bucket, key, Math.min(expiresInSeconds, MAX_PRESIGN_SECONDS), answer);
      },

      async presignPart(key: string, uploadId: string, partNumber: number, expiresInSeconds: number): Promise<string> {
        checkUpload(key, uploadId);
        checkPartNumber(partNumber);
        if (!Number.isSafeInteger(expiresInSeconds) || expiresInSeconds < 1) {
          throw new RangeError(`expiresInSeconds must be a positive integer, got ${expiresInSeconds}`);
        }
        // S3's UploadPart is a PUT with these two query parameters; they are part of the signed
        // (canonical) query, so the URL cannot be turned to another part or upload.
        return publicClient.presignedUrl('PUT', bucket, key, Math.min(expiresInSeconds, MAX_PRESIGN_SECONDS), {
          partNumber: String(partNumber),
          uploadId,
        });
      },
    }),

    async createMultipart(key: string, contentType: string): Promise<string> {
      checkKey(key);
      checkContentType(contentType);
      // The upload's Content-Type becomes the object's at completion.
      return client.initiateNewMultipartUpload(bucket, key, { 'Content-Type': contentType });
    },

    async putPart(key: string, uploadId: string, partNumber: number, body: Readable, size: number): Promise<string> {
      try {
        checkUpload(key, uploadId);
        checkPartNumber(partNumber);
        checkPartSize(size);
        // Exactly `size` bytes, then one more pull to know the body ends there: a longer body
        // fails on the chunk that passes `size` (PartSizeMismatch), and is read no further.
        const reader = partReader(body, partCounter(key, partNumber, size));
        const bytes = Buffer.allocUnsafe(size);
        await reader.fill(bytes);
        await reader.ended();
        reader.end();
        const headers: Record<string, string> = md5Needed ? { 'Content-MD5': createHash('md5').update(bytes).digest('base64') } : {};
        const { etag } = await client.uploadPart({ bucketName: bucket, objectName: key, uploadID: uploadId, partNumber, headers }, bytes);
        return `"${etag}"`;
      } catch (err) {
        // The caller handed the body over; a rejected put must not leave it half read and paused.
        body.destroy();
        if (codeOf(err) === 'NoSuchUpload') throw new NoSuchUpload(key, uploadId);
        throw err;
      }
    },

    async listParts(key: string, uploadId: string): Promise<PartInfo[] | null> {
      checkUpload(key, uploadId);
      try {
        const parts = await client.uploadParts(bucket, key, uploadId);
        return parts.map(({ part, size, etag }) => ({ partNumber: part, size, etag: `"${etag}"` })).sort((a, b) => a.partNumber - b.partNumber);
      } catch (err) {
        if (codeOf(err) === 'NoSuchUpload') return null;
        throw err;
      }
    },

    async completeMultipart(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<number> {
      checkUpload(key, uploadId);
      checkCompleteParts(key, parts);
      try {
        await client.completeMultipartUpload(bucket, key, uploadId, parts.map(({ partNumber, etag }) => ({ part: partNumber, etag: bareEtag(etag) })));
      } catch (err) {
        const code = codeOf(err);
        if (typeof code === 'string' && INVALID_PART_CODES.has(code)) throw new InvalidPart(key, `upload ${uploadId}: ${code}: ${String(fieldOf(err, 'message'))}`);
        if (code !== 'NoSuchUpload') throw err;
        // Completed before (or aborted): the object under the key is what the completion made.
        const info = await stat(key);
        if (info === null) throw new NoSuchUpload(key, uploadId);
        return info.size;
      }
      const info = await stat(key);
      if (info === null) throw new Error(`blob ${key}: gone right after its multipart upload ${uploadId} completed`);
      return info.size;
    },

    async abortMultipart(key: string, uploadId: string): Promise<void> {
      checkUpload(key, uploadId);
      try {
        await client.abortMultipartUpload(bucket, key, uploadId);
      } catch (err) {
        if (codeOf(err) !== 'NoSuchUpload') throw err;
      }
    },

    async *listMultipart(): AsyncIterable<MultipartEntry> {
      // ListMultipartUploads pages of 1000, one request each (minio-js's listIncompleteUploads
      // also lists every upload's parts, and drops Initiated from its typing). The next page
      // starts after the last upload of this one: that is what S3's NextKeyMarker and
      // NextUploadIdMarker name, and minio-js 8.0.7 loses the latter.
      let keyMarker = '';
      let uploadIdMarker = '';
      for (;;) {
        const page = await client.listIncompleteUploadsQuery(bucket, '', keyMarker, uploadIdMarker, '');
        for (const { key, uploadId, initiated } of page.uploads) {
          if (isKey(key) && S3_UPLOAD_ID.test(uploadId) && initiated instanceof Date && !Number.isNaN(initiated.getTime())) {
            yield { key, uploadId, initiated };
          }
        }
        const last = page.uploads.at(-1);
        if (!page.isTruncated || last === undefined) return;
        keyMarker = last.key;
        uploadIdMarker = last.uploadId;
      }
    },
  };
}

/**
 * Reads a put's body into part buffers, counting every byte (`counter` throws past the size or
 * the limit). `fill` copies into `buf` until it is full or the body ends; `ended` tells whether
 * the body has more bytes (pulling the next chunk to know); `end` checks the final count.
 */
function partReader(body: Readable, counter: ReturnType<typeof byteCounter>) {
  const chunks = body[Symbol.asyncIterator]() as AsyncIterator<unknown>;
  let pending: Buffer | null = null;
  let done = false;
  const pull = async (): Promise<void> => {
    while (pending === null && !done) {
      const next = await chunks.next();
      if (next.done === true) {
        done = true;
        return;
      }
      const chunk = toBytes(next.value);
      counter.add(chunk.length);
      if (chunk.length > 0) pending = chunk;
    }
  };
  return {
    async fill(buf: Buffer): Promise<number> {
      let filled = 0;
      while (filled < buf.length) {
        await pull();
        if (pending === null) break;
        const n = Math.min(pending.length, buf.length - filled);
        pending.copy(buf, filled, 0, n);
        filled += n;
        pending = n === pending.length ? null : pending.subarray(n);
      }
      return filled;
    },
    /** Like `fill`, into the chunks as they came (split at `max` bytes) instead of a buffer made beforehand. */
    async gather(max: number): Promise<Buffer[]> {
      const out: Buffer[] = [];
      let gathered = 0;
      while (gathered < max) {
        await pull();
        if (pending === null) break;
        const n = Math.min(pending.length, max - gathered);
        out.push(n === pending.length ? pending : pending.subarray(0, n));
        gathered += n;
        pending = n === pending.length ? null : pending.subarray(n);
      }
      return out;
    },
    async ended(): Promise<boolean> {
      await pull();
      return pending === null;
    },
    end: (): number => counter.end(),
  };
}

/** A MinIO endpoint URL (`scheme://host[:port]`) as minio-js's Client options; throws a TypeError on anything else. */
export function parseEndPoint(url: string): { endPoint: string; port: number; useSSL: boolean } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`MinIO endpoint must be a URL like http://host:9000, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`MinIO endpoint must be http or https, got ${parsed.protocol}`);
  }
  if ((parsed.pathname !== '/' && parsed.pathname !== '') || parsed.search !== '' || parsed.username !== '') {
    throw new TypeError('MinIO endpoint must be scheme://host[:port] only (credentials go in accessKey/secretKey)');
  }
  const useSSL = parsed.protocol === 'https:';
  const port = parsed.port === '' ? (useSSL ? 443 : 80) : Number(parsed.port);
  // URL keeps IPv6 hosts in brackets; minio-js wants the bare address.
  const endPoint = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  return { endPoint, port, useSSL };
}

async function ensureBucket(client: Client, bucket: string, region: string | undefined): Promise<void> {
  if (await client.bucketExists(bucket)) return;
  try {
    await client.makeBucket(bucket, region ?? '');
  } catch (err) {
    // Another process (a second replica starting at the same time) may have created it first:
    // BucketAlreadyOwnedByYou / BucketAlreadyExists. Whatever the error, the bucket existing now
    // is what counts.
    if (await client.bucketExists(bucket).catch(() => false)) return;
    throw err;
  }
}

/** A property of a thrown value (minio-js errors carry `code`, `actualobjectsize`, …), whatever was thrown. */
function fieldOf(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, name) : undefined;
}

function codeOf(err: unknown): unknown {
  return fieldOf(err, 'code');
}

async function orNullIfMissing<T>(request: Promise<T>): Promise<T | null> {
  try {
    return await request;
  } catch (err) {
    // GET answers NoSuchKey; HEAD has no body, so minio-js names its 404 NotFound.
    const code = codeOf(err);
    if (code === 'NoSuchKey' || code === 'NotFound') return null;
    throw err;
  }
}

const isHeaders = (value: unknown): value is IncomingHttpHeaders => typeof value === 'object' && value !== null;

function headersOf(res: Readable): IncomingHttpHeaders {
  // minio-js resolves object reads with the http.IncomingMessage itself.
  const headers = fieldOf(res, 'headers');
  if (!isHeaders(headers)) throw new Error('minio-js returned an object body without HTTP headers');
  return headers;
}

function contentLength(headers: IncomingHttpHeaders): number {
  const size = Number(headers['content-length']);
  if (!Number.isSafeInteger(size) || size < 0) throw new Error(`object has a bad Content-Length: ${headers['content-length']}`);
  return size;
}

function contentTypeOf(headers: IncomingHttpHeaders): string {
  return headers['content-type'] ?? 'application/octet-stream';
}

function parseContentRange(value: string | undefined): { start: number; end: number; size: number } | null {
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value ?? '');
  if (match === null) return null;
  return { start: Number(match[1]), end: Number(match[2]), size: Number(match[3]) };
}
