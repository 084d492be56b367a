import { randomUUID } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { fsyncDir } from '@docshare/durable-log';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { RangeNotSatisfiable } from './port.ts';
import type { BlobEntry, BlobInfo, BlobStore, BlobStream, ByteRange, PutOptions } from './port.ts';
import { byteCounter, checkKey, checkPutSize, checkRange, isKey, toBytes } from './validate.ts';

/*
 * On-disk layout, under `dir`:
 *   blobs/<first two chars of key>/<key>   one file per blob: header, then the bytes
 *   tmp/<uuid>                             puts in flight; wiped when a store opens
 *
 * The content type lives in a header inside the blob's own file rather than in a sidecar, so a
 * single rename publishes data and metadata together: there is no crash window where the new
 * bytes sit beside the old content type. Header = "DSB1" + uint32 BE length + JSON
 * {size, contentType}; the blob's bytes follow it. `size` is redundant with the file length and
 * is kept to catch a damaged file instead of serving it. It is written padded with spaces to a
 * fixed width (valid JSON), so a put whose size is known only at the end writes the bytes after
 * a placeholder header and then the real header over it, in place.
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

/** Opens (creating if needed) a BlobStore that keeps each blob as one file under `dir`. */
export async function makeFsBlobStore(dir: string): Promise<BlobStore> {
  const blobsDir = join(dir, 'blobs');
  const tmpDir = join(dir, 'tmp');
  await mkdir(blobsDir, { recursive: true });
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

  return {
    async put(key: string, body: Readable, size: number | undefined, contentType: string, options: PutOptions = {}): Promise<number> {
      let tmp: string | undefined;
      let handle: FileHandle | undefined;
      // The batch being written while the next one is read: settled before the handle closes.
      let writing: Promise<void> | undefined;
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
        let position = headerLength;
        let batch: Buffer[] = [];
        let batchBytes = 0;
        // One batch is written while the next is read: reading and writing overlap, and memory
        // holds at most two batches plus the source's own buffer, whatever the blob size. Awaiting
        // the previous write before starting the next is the backpressure on the body.
        const flush = async (): Promise<void> => {
          const chunks = batch;
          const at = position;
          position += batchBytes;
          batch = [];
          batchBytes = 0;
          if (writing !== undefined) await writing;
          writing = writevFully(out, chunks, at);
          writing.catch(() => {}); // awaited by the next flush, the end, or the cleanup
        };
        for await (const raw of body) {
          const chunk = toBytes(raw);
          counter.add(chunk.length);
          if (chunk.length === 0) continue;
          batch.push(chunk);
          batchBytes += chunk.length;
          if (batchBytes >= WRITE_BATCH_BYTES || batch.length >= WRITE_BATCH_CHUNKS) await flush();
        }
        const count = counter.end();
        if (batchBytes > 0) await flush();
        await writing;
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
        await writing?.catch(() => {});
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
  };
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
