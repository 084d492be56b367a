import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { fsyncDir } from '@docshare/durable-log';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { InvalidPart, MIN_PART_BYTES, NoSuchUpload, RangeNotSatisfiable } from './port.ts';
import type { BlobEntry, BlobInfo, BlobStore, BlobStream, ByteRange, MultipartEntry, PartInfo, PutOptions } from './port.ts';
import {
  bareEtag, byteCounter, checkCompleteParts, checkKey, checkPartNumber, checkPartSize, checkPutSize, checkRange, checkUploadId,
  isKey, partCounter, toBytes,
} from './validate.ts';

/*
 * On-disk layout, under `dir`:
 *   blobs/<first two chars of key>/<key>   one file per blob: header, then the bytes
 *   tmp/<uuid>                             puts in flight; wiped when a store opens
 *   multipart/<uploadId>/upload.json       a multipart upload: {key, contentType, initiated}
 *   multipart/<uploadId>/<partNumber>      its parts: "DSP1" + md5 hex of the bytes, then the bytes
 *
 * The content type lives in a header inside the blob's own file rather than in a sidecar, so a
 * single rename publishes data and metadata together: there is no crash window where the new
 * bytes sit beside the old content type. Header = "DSB1" + uint32 BE length + JSON
 * {size, contentType}; the blob's bytes follow it. `size` is redundant with the file length and
 * is kept to catch a damaged file instead of serving it. It is written padded with spaces to a
 * fixed width (valid JSON), so a put whose size is known only at the end writes the bytes after
 * a placeholder header and then the real header over it, in place.
 *
 * Multipart uploads live beside blobs/, so `list` never sees them. Every change to one is a
 * rename, so a crash leaves each upload whole or absent: an upload directory is made in tmp/ with
 * its upload.json and renamed into multipart/; a part is written to tmp/, fsynced, then renamed
 * over its number (the etag in its header, published with the bytes); an upload ends by its
 * directory being renamed back into tmp/ (wiped when a store opens) before it is removed.
 */

const MAGIC = Buffer.from('DSB1', 'latin1');
const PREFIX_LEN = MAGIC.length + 4;
// A sane cap so a damaged length field cannot make us allocate gigabytes.
const MAX_HEADER_JSON = 64 * 1024;
// Digits of Number.MAX_SAFE_INTEGER: the width of the header's size field.
const SIZE_WIDTH = 16;
// Bytes gathered from the body before one write (writev) goes out; one batch is written while the next is read.
const WRITE_BATCH_BYTES = 1024 * 1024;
// ...or chunks (one writev takes a bounded number of buffers).
const WRITE_BATCH_CHUNKS = 256;
// Bytes per read of a blob being served: fewer, larger reads than the stream default of 64 KiB.
const READ_CHUNK_BYTES = 256 * 1024;

interface Header { size: number; contentType: string; dataStart: number }

/** What upload.json holds. */
interface UploadMeta { key: string; contentType: string; initiated: string }

const PART_MAGIC = 'DSP1';
// "DSP1" + 32 hex digits of the md5: the part's bytes start after it.
const PART_HEADER_LEN = PART_MAGIC.length + 32;
// The upload ids this store makes (randomUUID).
const UPLOAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// A part file's name: its number, 1 to 10 000, unpadded.
const PART_NAME = /^[1-9][0-9]{0,4}$/;
// Bytes per read while parts are joined into a blob (two such buffers: one read while the other is written).
const COPY_CHUNK_BYTES = 4 * 1024 * 1024;

/** Opens (creating if needed) a BlobStore that keeps each blob as one file under `dir`. */
export async function makeFsBlobStore(dir: string): Promise<BlobStore> {
  const blobsDir = join(dir, 'blobs');
  const tmpDir = join(dir, 'tmp');
  const multipartDir = join(dir, 'multipart');
  await mkdir(blobsDir, { recursive: true });
  await mkdir(multipartDir, { recursive: true });
  // Whatever is in tmp/ was a put interrupted by a crash: never published, safe to drop. This
  // assumes one store per directory (a second live store would lose its in-flight puts).
  await rm(tmpDir, { recursive: true, force: true });
  await mkdir(tmpDir, { recursive: true });
  await fsyncDir(dir);

  const pathOf = (key: string): { shardDir: string; file: string } => {
    checkKey(key);
    const shardDir = join(blobsDir, key.slice(0, 2));
    return { shardDir, file: join(shardDir, key) };
  };

  /** The directory of upload `uploadId` of `key`, checking both. */
  const uploadDirOf = (key: string, uploadId: string): string => {
    checkKey(key);
    checkUploadId(uploadId, UPLOAD_ID);
    return join(multipartDir, uploadId);
  };

  /** The upload in `uploadDir`, or null when it is not there or is another key's (S3: NoSuchUpload). */
  const uploadOf = async (uploadDir: string, key: string): Promise<UploadMeta | null> => {
    const meta = await readUploadMeta(uploadDir);
    return meta !== null && meta.key === key ? meta : null;
  };

  /**
   * Ends an upload: its directory is moved into tmp/ (one rename: the upload is gone at once and
   * whole, even if a crash stops the removal; tmp/ is wiped when a store opens), then removed.
   * Resolves false when it was not there.
   */
  const dropUpload = async (uploadDir: string): Promise<boolean> => {
    const doomed = join(tmpDir, `ended-${randomUUID()}`);
    try {
      await rename(uploadDir, doomed);
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
    await fsyncDir(multipartDir);
    await rm(doomed, { recursive: true, force: true, maxRetries: 3 });
    return true;
  };

  /** An upload's part: its size and etag (bare), from its header; null when missing. */
  const partOf = async (uploadDir: string, partNumber: number): Promise<{ size: number; etag: string } | null> => {
    const file = join(uploadDir, String(partNumber));
    const handle = await openIfExists(file);
    if (handle === null) return null;
    try {
      return await readPartHeader(handle, file);
    } finally {
      await handle.close();
    }
  };

  /** The size of an upload's blob once the upload is gone (completed earlier); NoSuchUpload without a blob. */
  const completedSize = async (key: string, uploadId: string): Promise<number> => {
    const { file } = pathOf(key);
    const handle = await openIfExists(file);
    if (handle === null) throw new NoSuchUpload(key, uploadId);
    try {
      return (await readHeader(handle, file)).size;
    } finally {
      await handle.close();
    }
  };

  return {
    async put(key: string, body: Readable, size: number | undefined, contentType: string, options: PutOptions = {}): Promise<number> {
      let tmp: string | undefined;
      let handle: FileHandle | undefined;
      try {
        const { shardDir, file } = pathOf(key);
        checkPutSize(key, size, options.maxBytes);
        if (typeof contentType !== 'string') throw new TypeError('blob content type must be a string');
        const counter = byteCounter(key, size, options.maxBytes);
        // The header's size field has a fixed width, so the header written once the size is known
        // (the body may not declare one) takes exactly the room left for it.
        const headerLength = encodeHeader(0, contentType).length;
        tmp = join(tmpDir, randomUUID());
        handle = await open(tmp, 'wx');
        const out = handle;
        await writeBody(out, body, headerLength, (chunk) => counter.add(chunk.length));
        const count = counter.end();
        await writeFully(out, encodeHeader(count, contentType), 0);
        await out.sync();
        await out.close();
        handle = undefined;
        // The shard dir may be new: its entry in blobs/ must be durable before the blob in it is.
        const created = await mkdir(shardDir, { recursive: true });
        if (created !== undefined) await fsyncDir(blobsDir);
        await rename(tmp, file);
        tmp = undefined;
        await fsyncDir(shardDir);
        return count;
      } catch (err) {
        // The caller handed the body over; a rejected put must not leave it half read and paused.
        body.destroy();
        await handle?.close().catch(() => {});
        if (tmp !== undefined) await unlink(tmp).catch(() => {});
        throw err;
      }
    },

    async get(key: string, range?: ByteRange): Promise<BlobStream | null> {
      const { file } = pathOf(key);
      if (range !== undefined) checkRange(range);
      const handle = await openIfExists(file);
      if (handle === null) return null;
      try {
        // Header and body come from the same open handle, so a concurrent put that renames a new
        // file over this key cannot mix the old header with the new bytes.
        const header = await readHeader(handle, file);
        const { size, contentType, dataStart } = header;
        if (range === undefined) {
          return { size, contentType, body: handle.createReadStream({ start: dataStart, highWaterMark: READ_CHUNK_BYTES }) };
        }
        if (range.start >= size) throw new RangeNotSatisfiable(size);
        const served = { start: range.start, end: Math.min(range.end, size - 1) };
        const body = handle.createReadStream({ start: dataStart + served.start, end: dataStart + served.end, highWaterMark: READ_CHUNK_BYTES });
        return { size, contentType, body, range: served };
      } catch (err) {
        await handle.close().catch(() => {});
        throw err;
      }
    },

    async stat(key: string): Promise<BlobInfo | null> {
      const { file } = pathOf(key);
      const handle = await openIfExists(file);
      if (handle === null) return null;
      try {
        const { size, contentType } = await readHeader(handle, file);
        return { size, contentType };
      } finally {
        await handle.close();
      }
    },

    async remove(key: string): Promise<void> {
      const { shardDir, file } = pathOf(key);
      try {
        await unlink(file);
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
      await fsyncDir(shardDir);
    },

    async *list(): AsyncIterable<BlobEntry> {
      // A blob's mtime is when its put finished writing (the rename keeps it).
      for (const shard of await readdir(blobsDir)) {
        for (const key of await readdirIfExists(join(blobsDir, shard))) {
          if (!isKey(key) || key.slice(0, 2) !== shard) continue;
          const info = await stat(join(blobsDir, shard, key)).catch((err: unknown) => {
            if (isNotFound(err)) return null; // removed meanwhile
            throw err;
          });
          if (info?.isFile()) yield { key, lastModified: info.mtime };
        }
      }
    },

    async createMultipart(key: string, contentType: string): Promise<string> {
      checkKey(key);
      if (typeof contentType !== 'string') throw new TypeError('blob content type must be a string');
      encodeHeader(0, contentType); // refuses a content type too long for the blob's header, now rather than at completion
      const uploadId = randomUUID();
      // Made whole in tmp/, then renamed into multipart/: an upload directory always has its upload.json.
      const staging = join(tmpDir, `upload-${uploadId}`);
      try {
        await mkdir(staging);
        const meta: UploadMeta = { key, contentType, initiated: new Date().toISOString() };
        const handle = await open(join(staging, 'upload.json'), 'wx');
        try {
          await writeFully(handle, Buffer.from(JSON.stringify(meta), 'utf8'), 0);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await fsyncDir(staging);
        await rename(staging, join(multipartDir, uploadId));
        await fsyncDir(multipartDir);
        return uploadId;
      } catch (err) {
        await rm(staging, { recursive: true, force: true }).catch(() => {});
        throw err;
      }
    },

    async putPart(key: string, uploadId: string, partNumber: number, body: Readable, size: number): Promise<string> {
      let tmp: string | undefined;
      let handle: FileHandle | undefined;
      try {
        const uploadDir = uploadDirOf(key, uploadId);
        checkPartNumber(partNumber);
        checkPartSize(size);
        if (await uploadOf(uploadDir, key) === null) throw new NoSuchUpload(key, uploadId);
        const counter = partCounter(key, partNumber, size);
        const md5 = createHash('md5');
        tmp = join(tmpDir, randomUUID());
        handle = await open(tmp, 'wx');
        const out = handle;
        await writeBody(out, body, PART_HEADER_LEN, (chunk) => {
          counter.add(chunk.length);
          md5.update(chunk);
        });
        counter.end();
        const etag = md5.digest('hex');
        await writeFully(out, Buffer.from(PART_MAGIC + etag, 'latin1'), 0);
        await out.sync();
        await out.close();
        handle = undefined;
        try {
          // Replaces a part sent before, at once and whole.
          await rename(tmp, join(uploadDir, String(partNumber)));
          tmp = undefined;
          await fsyncDir(uploadDir);
        } catch (err) {
          // Aborted or completed meanwhile.
          if (isNotFound(err)) throw new NoSuchUpload(key, uploadId);
          throw err;
        }
        return `"${etag}"`;
      } catch (err) {
        // The caller handed the body over; a rejected put must not leave it half read and paused.
        body.destroy();
        await handle?.close().catch(() => {});
        if (tmp !== undefined) await unlink(tmp).catch(() => {});
        throw err;
      }
    },

    async listParts(key: string, uploadId: string): Promise<PartInfo[] | null> {
      const uploadDir = uploadDirOf(key, uploadId);
      if (await uploadOf(uploadDir, key) === null) return null;
      const parts: PartInfo[] = [];
      for (const name of await readdirIfExists(uploadDir)) {
        if (!PART_NAME.test(name)) continue;
        const partNumber = Number(name);
        const part = await partOf(uploadDir, partNumber);
        if (part !== null) parts.push({ partNumber, size: part.size, etag: `"${part.etag}"` });
      }
      return parts.sort((a, b) => a.partNumber - b.partNumber);
    },

    async completeMultipart(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<number> {
      const uploadDir = uploadDirOf(key, uploadId);
      const { shardDir, file } = pathOf(key);
      checkCompleteParts(key, parts);
      const meta = await uploadOf(uploadDir, key);
      if (meta === null) return completedSize(key, uploadId);
      // Every part checked before a byte is copied, as S3 does: a refused completion changes nothing.
      let total = 0;
      for (const [i, { partNumber, etag }] of parts.entries()) {
        const part = await partOf(uploadDir, partNumber);
        if (part === null) {
          // The upload may have been completed (or aborted) by a concurrent call meanwhile.
          if (await uploadOf(uploadDir, key) === null) return completedSize(key, uploadId);
          throw new InvalidPart(key, `part ${partNumber} of upload ${uploadId} is not there`);
        }
        if (part.etag !== bareEtag(etag)) throw new InvalidPart(key, `part ${partNumber} of upload ${uploadId} has another etag than ${etag}`);
        if (i < parts.length - 1 && part.size < MIN_PART_BYTES) {
          throw new InvalidPart(key, `part ${partNumber} of upload ${uploadId} has ${part.size} bytes, under the ${MIN_PART_BYTES} of any part but the last`);
        }
        total += part.size;
      }
      const tmp = join(tmpDir, randomUUID());
      let published = false;
      try {
        const out = await open(tmp, 'wx');
        try {
          const header = encodeHeader(total, meta.contentType);
          await writeFully(out, header, 0);
          await joinParts(out, header.length, uploadDir, key, parts);
          await out.sync();
        } finally {
          await out.close();
        }
        const created = await mkdir(shardDir, { recursive: true });
        if (created !== undefined) await fsyncDir(blobsDir);
        await rename(tmp, file);
        published = true;
        await fsyncDir(shardDir);
      } finally {
        if (!published) await unlink(tmp).catch(() => {});
      }
      // A crash before this leaves the upload beside its blob: completing again makes the same blob.
      await dropUpload(uploadDir);
      return total;
    },

    async abortMultipart(key: string, uploadId: string): Promise<void> {
      const uploadDir = uploadDirOf(key, uploadId);
      if (await uploadOf(uploadDir, key) === null) return;
      await dropUpload(uploadDir);
    },

    async *listMultipart(): AsyncIterable<MultipartEntry> {
      for (const uploadId of await readdir(multipartDir)) {
        if (!UPLOAD_ID.test(uploadId)) continue;
        // Ended meanwhile: not listed.
        const meta = await readUploadMeta(join(multipartDir, uploadId));
        if (meta !== null) yield { key: meta.key, uploadId, initiated: new Date(meta.initiated) };
      }
    },
  };
}

/**
 * Writes `body` to `out` from `position` on, handing each chunk to `check` (which may throw to
 * stop) before it is used; resolves once every byte is written. One batch is written while the
 * next is read: reading and writing overlap, and memory holds at most two batches plus the
 * source's own buffer, whatever the body's length. Awaiting the previous write before starting the
 * next is the backpressure on the body. On a rejection no write is left in flight.
 */
async function writeBody(out: FileHandle, body: Readable, position: number, check: (chunk: Buffer) => void): Promise<void> {
  let at = position;
  let batch: Buffer[] = [];
  let batchBytes = 0;
  let writing: Promise<void> | undefined;
  const flush = async (): Promise<void> => {
    const chunks = batch;
    const from = at;
    at += batchBytes;
    batch = [];
    batchBytes = 0;
    if (writing !== undefined) await writing;
    writing = writevFully(out, chunks, from);
    writing.catch(() => {}); // awaited by the next flush, the end, or the cleanup
  };
  try {
    for await (const raw of body) {
      const chunk = toBytes(raw);
      check(chunk);
      if (chunk.length === 0) continue;
      batch.push(chunk);
      batchBytes += chunk.length;
      if (batchBytes >= WRITE_BATCH_BYTES || batch.length >= WRITE_BATCH_CHUNKS) await flush();
    }
    if (batchBytes > 0) await flush();
    await writing;
  } finally {
    await writing?.catch(() => {});
  }
}

/**
 * Copies the bytes of `parts` (checked already), in order, from `uploadDir` into `out` from
 * `position` on. Each part's header is read again from the file being copied: a part replaced
 * since the check fails the completion (InvalidPart) instead of slipping other bytes in. Two
 * buffers: one is read while the other is written.
 */
async function joinParts(out: FileHandle, position: number, uploadDir: string, key: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
  const buffers = [Buffer.allocUnsafe(COPY_CHUNK_BYTES), Buffer.allocUnsafe(COPY_CHUNK_BYTES)];
  let turn = 0;
  let at = position;
  let writing: Promise<void> = Promise.resolve();
  try {
    for (const { partNumber, etag } of parts) {
      const file = join(uploadDir, String(partNumber));
      const handle = await openIfExists(file);
      if (handle === null) throw new InvalidPart(key, `part ${partNumber} went away during the completion`);
      try {
        const { size, etag: stored } = await readPartHeader(handle, file);
        if (stored !== bareEtag(etag)) throw new InvalidPart(key, `part ${partNumber} was replaced during the completion`);
        for (let from = 0; from < size;) {
          const buf = buffers[turn++ % 2]!;
          const length = Math.min(buf.length, size - from);
          await readFully(handle, buf, length, PART_HEADER_LEN + from, file);
          // The other buffer's write is done before this one's starts, so it may be refilled next.
          await writing;
          writing = writeFully(out, buf.subarray(0, length), at);
          writing.catch(() => {}); // awaited by the next turn, the end, or the cleanup
          at += length;
          from += length;
        }
      } finally {
        await handle.close();
      }
    }
    await writing;
  } finally {
    await writing.catch(() => {});
  }
}

async function readFully(handle: FileHandle, buf: Buffer, length: number, position: number, file: string): Promise<void> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buf, done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`part file ${file} is damaged: shorter than its bytes`);
    done += bytesRead;
  }
}

/** A part file's size and (bare) etag. */
async function readPartHeader(handle: FileHandle, file: string): Promise<{ size: number; etag: string }> {
  const header = Buffer.alloc(PART_HEADER_LEN);
  const { bytesRead } = await handle.read(header, 0, PART_HEADER_LEN, 0);
  const text = header.toString('latin1');
  if (bytesRead < PART_HEADER_LEN || !/^DSP1[0-9a-f]{32}$/.test(text)) throw new Error(`part file ${file} is damaged: bad header`);
  const { size } = await handle.stat();
  return { size: size - PART_HEADER_LEN, etag: text.slice(PART_MAGIC.length) };
}

/** An upload's upload.json; null when the upload is not there. */
async function readUploadMeta(uploadDir: string): Promise<UploadMeta | null> {
  const file = join(uploadDir, 'upload.json');
  const handle = await openIfExists(file);
  if (handle === null) return null;
  let meta: unknown;
  try {
    meta = JSON.parse((await handle.readFile()).toString('utf8'));
  } catch {
    throw new Error(`upload file ${file} is damaged: unreadable`);
  } finally {
    await handle.close();
  }
  const { key, contentType, initiated }: { key?: unknown; contentType?: unknown; initiated?: unknown } = typeof meta === 'object' && meta !== null ? meta : {};
  if (typeof key !== 'string' || typeof contentType !== 'string' || typeof initiated !== 'string') {
    throw new Error(`upload file ${file} is damaged: bad fields`);
  }
  return { key, contentType, initiated };
}

async function readdirIfExists(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    // Not a directory (a stray file in blobs/) or removed meanwhile.
    if (isNotFound(err) || errorCode(err) === 'ENOTDIR') return [];
    throw err;
  }
}

function encodeHeader(size: number, contentType: string): Buffer {
  const json = Buffer.from(`{"size":${String(size).padEnd(SIZE_WIDTH)},"contentType":${JSON.stringify(contentType)}}`, 'utf8');
  if (json.length > MAX_HEADER_JSON) throw new TypeError('blob content type is too long');
  const prefix = Buffer.alloc(PREFIX_LEN);
  MAGIC.copy(prefix, 0);
  prefix.writeUInt32BE(json.length, MAGIC.length);
  return Buffer.concat([prefix, json]);
}

async function readHeader(handle: FileHandle, file: string): Promise<Header> {
  const damaged = (why: string) => new Error(`blob file ${file} is damaged: ${why}`);
  const prefix = Buffer.alloc(PREFIX_LEN);
  const { bytesRead } = await handle.read(prefix, 0, PREFIX_LEN, 0);
  if (bytesRead < PREFIX_LEN || !prefix.subarray(0, MAGIC.length).equals(MAGIC)) throw damaged('bad header');
  const jsonLen = prefix.readUInt32BE(MAGIC.length);
  if (jsonLen > MAX_HEADER_JSON) throw damaged('header too long');
  const json = Buffer.alloc(jsonLen);
  const read = await handle.read(json, 0, jsonLen, PREFIX_LEN);
  if (read.bytesRead < jsonLen) throw damaged('truncated header');
  let meta: unknown;
  try {
    meta = JSON.parse(json.toString('utf8'));
  } catch {
    throw damaged('unreadable header');
  }
  const { size, contentType }: { size?: unknown; contentType?: unknown } = typeof meta === 'object' && meta !== null ? meta : {};
  if (typeof size !== 'number' || typeof contentType !== 'string') throw damaged('bad header fields');
  const dataStart = PREFIX_LEN + jsonLen;
  const { size: fileSize } = await handle.stat();
  if (fileSize - dataStart !== size) throw damaged(`holds ${fileSize - dataStart} bytes, header says ${size}`);
  return { size, contentType, dataStart };
}

async function writevFully(handle: FileHandle, chunks: Buffer[], position: number): Promise<void> {
  let rest = chunks;
  let at = position;
  while (rest.length > 0) {
    const { bytesWritten } = await handle.writev(rest, at);
    at += bytesWritten;
    // A short write: drop what went out, keep the rest of the chunk it ended in.
    let skip = bytesWritten;
    while (rest.length > 0 && skip >= rest[0]!.length) {
      skip -= rest[0]!.length;
      rest = rest.slice(1);
    }
    if (skip > 0) rest = [rest[0]!.subarray(skip), ...rest.slice(1)];
  }
}

async function writeFully(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, position + done);
    done += bytesWritten;
  }
}

async function openIfExists(file: string): Promise<FileHandle | null> {
  try {
    return await open(file, 'r');
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

/** The `code` of a Node.js system error (ENOENT, ENOTDIR, …); undefined for anything else thrown. */
function errorCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}

function isNotFound(err: unknown): boolean {
  return errorCode(err) === 'ENOENT';
}
