import { createHash } from 'node:crypto';
import http, { type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { Client } from 'minio';
import { RangeNotSatisfiable } from './port.ts';
import type { BlobEntry, BlobInfo, BlobStore, BlobStream, ByteRange } from './port.ts';
import { checkKey, checkRange, checkSize, isKey, toBytes, tooLong, tooShort } from './validate.ts';

/*
 * One bucket, one object per blob, named by the blob key itself (keys are server-made and already
 * safe as object names). The content type is the object's own Content-Type, so bytes and metadata
 * are published together by the one request that creates the object.
 *
 * Puts never hand the caller's stream to minio-js: `putObject(stream)` does not check the byte
 * count against `size` (a short or long body would be stored as is), leaves the upload hanging
 * when the source stream errors during a multipart upload, never aborts a failed multipart upload
 * and resumes any earlier incomplete upload of the same key. Instead the body is read here,
 * counted, and cut into parts of `partSize` bytes:
 *   - size ≤ partSize: read into one buffer, checked, then sent as one PUT;
 *   - larger: a multipart upload, one part in memory at a time, completed only once exactly
 *     `size` bytes have arrived, aborted on any failure.
 * Either way the object under `key` appears (or is replaced) only when the whole body was right:
 * a failed put leaves the previous object, or nothing, under the key. Memory held per put is one
 * part (≤ partSize) plus the stream's own buffering.
 */

// Header-safe: visible ASCII and spaces, bounded.
const CONTENT_TYPE = /^[\x20-\x7e]{1,1024}$/;
const MIN_PART = 5 * 1024 * 1024;
const DEFAULT_PART = 16 * 1024 * 1024;
const MAX_PARTS = 10_000;
// How often `get` retries when the object changes between a failed ranged read and the stat
// that explains it.
const RANGE_RETRIES = 3;

export interface MinioBlobStoreOptions {
  /** e.g. `http://127.0.0.1:9000` or `https://s3.example.com`. */
  endPoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  /** Bytes per multipart part, and the largest blob sent as a single PUT. Default 16 MiB, min 5 MiB. */
  partSize?: number;
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

/**
 * http(s).request with a no-progress timeout until the response headers arrive. minio-js itself
 * has none: a frozen server (SIGSTOP, a dead peer without RST) held every request for ever.
 */
export function timedTransport(base: Pick<typeof http, 'request'>, timeoutMs: number): Pick<typeof http, 'request'> {
  const request = (...args: unknown[]): ClientRequest => {
    const req = (base.request as (...a: unknown[]) => ClientRequest)(...args);
    req.setTimeout(timeoutMs, () => {
      req.destroy(Object.assign(new Error(`object store: no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    });
    req.once('response', () => req.setTimeout(0));
    return req;
  };
  return { request: request as typeof http.request };
}

/** A BlobStore over one S3 bucket (MinIO or any S3-compatible server); creates the bucket if missing. */
export async function makeMinioBlobStore(options: MinioBlobStoreOptions): Promise<BlobStore> {
  const { bucket, accessKey, secretKey } = options;
  const partSize = options.partSize ?? DEFAULT_PART;
  if (!Number.isSafeInteger(partSize) || partSize < MIN_PART) {
    throw new RangeError(`partSize must be an integer of at least ${MIN_PART} bytes, got ${partSize}`);
  }
  const endPoint = parseEndPoint(options.endPoint);
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  if (!Number.isSafeInteger(requestTimeoutMs) || requestTimeoutMs < 1) {
    throw new RangeError(`requestTimeoutMs must be a positive integer, got ${requestTimeoutMs}`);
  }
  const client = new Client({
    ...endPoint,
    transport: timedTransport(endPoint.useSSL ? https : http, requestTimeoutMs),
    accessKey,
    secretKey,
    partSize,
    ...(options.region === undefined ? {} : { region: options.region }),
  });
  await ensureBucket(client, bucket, options.region);

  const putWhole = async (key: string, body: Readable, size: number, headers: Record<string, string>): Promise<void> => {
    const bytes = Buffer.allocUnsafe(size);
    let filled = 0;
    for await (const raw of body) {
      const chunk = toBytes(raw);
      if (filled + chunk.length > size) throw tooLong(key, size);
      bytes.set(chunk, filled);
      filled += chunk.length;
    }
    if (filled !== size) throw tooShort(key, filled, size);
    // A Buffer goes out with its Content-Length and a checksum of exactly these bytes.
    await client.putObject(bucket, key, bytes, size, headers);
  };

  const putParts = async (key: string, body: Readable, size: number, headers: Record<string, string>): Promise<void> => {
    // S3 allows 10 000 parts: a blob too large for that many parts of `partSize` gets larger parts.
    const part = Math.max(partSize, Math.ceil(size / MAX_PARTS));
    const uploadId = await client.initiateNewMultipartUpload(bucket, key, headers);
    try {
      const etags: { part: number; etag: string }[] = [];
      // One buffer, refilled for each part once the previous one is acknowledged: the memory
      // bound, and the backpressure on the body (nothing is read while a part is in flight).
      const buf = Buffer.allocUnsafe(Math.min(part, size));
      let filled = 0;
      let total = 0;
      const send = async (bytes: Buffer): Promise<void> => {
        const partNumber = etags.length + 1;
        const md5 = createHash('md5').update(bytes).digest('base64');
        const { etag } = await client.uploadPart(
          { bucketName: bucket, objectName: key, uploadID: uploadId, partNumber, headers: { 'Content-MD5': md5 } },
          bytes,
        );
        etags.push({ part: partNumber, etag });
      };
      for await (const raw of body) {
        let chunk = toBytes(raw);
        total += chunk.length;
        if (total > size) throw tooLong(key, size);
        while (chunk.length > 0) {
          const n = Math.min(chunk.length, buf.length - filled);
          buf.set(chunk.subarray(0, n), filled);
          filled += n;
          chunk = chunk.subarray(n);
          if (filled === buf.length) {
            await send(buf);
            filled = 0;
          }
        }
      }
      if (total !== size) throw tooShort(key, total, size);
      if (filled > 0) await send(buf.subarray(0, filled));
      // Only this request makes the object visible (replacing any previous one at once).
      await client.completeMultipartUpload(bucket, key, uploadId, etags);
    } catch (err) {
      // Parts of an aborted upload are dropped; should the abort itself fail, they are never
      // visible as an object and the server's stale-upload cleanup removes them later.
      await client.abortMultipartUpload(bucket, key, uploadId).catch(() => {});
      throw err;
    }
  };

  const stat = async (key: string): Promise<BlobInfo | null> => {
    checkKey(key);
    const info = await orNullIfMissing(client.statObject(bucket, key));
    if (info === null) return null;
    const contentType = info.metaData['content-type'] as unknown;
    return { size: info.size, contentType: typeof contentType === 'string' ? contentType : 'application/octet-stream' };
  };

  return {
    async put(key: string, body: Readable, size: number, contentType: string): Promise<void> {
      try {
        checkKey(key);
        checkSize(size);
        if (typeof contentType !== 'string' || !CONTENT_TYPE.test(contentType)) {
          throw new TypeError(`blob content type must be 1-1024 printable ASCII characters, got ${JSON.stringify(contentType)}`);
        }
        const headers = { 'Content-Type': contentType };
        if (size <= partSize) await putWhole(key, body, size, headers);
        else await putParts(key, body, size, headers);
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
      for (let attempt = 1; ; attempt++) {
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
          const actual = Number((err as { actualobjectsize?: unknown }).actualobjectsize);
          if (Number.isSafeInteger(actual) && actual >= 0 && range.start >= actual) throw new RangeNotSatisfiable(actual);
        }
        // Otherwise ask for the size; should the object have grown meanwhile so the range is now
        // satisfiable, read again.
        const info = await stat(key);
        if (info === null) return null;
        if (range.start >= info.size || attempt >= RANGE_RETRIES) throw new RangeNotSatisfiable(info.size);
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
        const { name, lastModified } = item as { name?: string; lastModified?: Date };
        if (typeof name === 'string' && isKey(name) && lastModified instanceof Date) yield { key: name, lastModified };
      }
    },
  };
}

function parseEndPoint(url: string): { endPoint: string; port: number; useSSL: boolean } {
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

function codeOf(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
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

function headersOf(res: Readable): IncomingHttpHeaders {
  // minio-js resolves object reads with the http.IncomingMessage itself.
  const headers = (res as Readable & { headers?: IncomingHttpHeaders }).headers;
  if (headers === undefined) throw new Error('minio-js returned an object body without HTTP headers');
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
