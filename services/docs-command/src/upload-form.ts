import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join, basename } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';
import type { Request } from 'express';
import busboy from 'busboy';
import { invalid, tooLarge, M } from '@docshare/contracts';

export interface SpooledFile {
  path: string;
  size: number;
  fileName: string;
  contentType: string;
}

export interface UploadForm {
  fields: Record<string, string>;
  file: SpooledFile | null;
  /** Removes the spooled file; safe to call twice. */
  discard(): Promise<void>;
}

/** Multipart field bytes beyond which the whole request is refused (fields are short texts). */
const FIELDS_ALLOWANCE = 1024 * 1024;

/** Keeps just the last path segment of a client file name, without control characters. */
const cleanFileName = (name: string): string =>
  basename(name.replace(/\\/g, '/')).replace(/[\p{Cc}]/gu, '').slice(0, 255) || 'file';

/**
 * Reads a multipart upload: text fields into memory (bounded), the file part streamed to a spool
 * file under `spoolDir` so memory stays flat whatever its size. A request that is not multipart
 * reads as a form without fields or file (its body is never read).
 *
 * Fails with `File too large` (413) the moment the file passes `maxBytes` or the whole body passes
 * `maxBytes` plus the fields' allowance, and stops reading there: the rest of the body is never
 * read (the answer closes the connection). A body busboy cannot read is `Malformed multipart body`
 * (400). Every stream of the form has an error listener: no part, however broken or cut off, can
 * throw outside this function.
 */
export const readUploadForm = async (req: Request, spoolDir: string, maxBytes: number): Promise<UploadForm> => {
  const contentType = req.get('content-type') ?? '';
  const spooled: string[] = [];
  const discard = async (): Promise<void> => {
    await Promise.all(spooled.map((p) => rm(p, { force: true })));
  };
  if (!/^multipart\/form-data/i.test(contentType)) return { fields: {}, file: null, discard };
  const declared = Number(req.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes + FIELDS_ALLOWANCE) throw tooLarge(M.fileTooLarge);

  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      // busboy reports `limit` once a file reaches fileSize, so allow one byte more and check the count.
      limits: { fileSize: maxBytes + 1, files: 1, fields: 50, fieldSize: 256 * 1024, parts: 60 },
      defParamCharset: 'utf8',
    });
  } catch {
    // No boundary, or a charset busboy does not know.
    throw invalid(M.malformedMultipart);
  }

  const fields: Record<string, string> = {};
  let file: SpooledFile | null = null;
  const writes: Promise<void>[] = [];
  let received = 0;

  /** The file part being spooled: ended with an error when the form fails, so its spool write settles. */
  let filePart: Readable | null = null;
  let settled = false;
  const outcome = new Promise<void>((resolve, reject) => {
    const settle = (failure?: unknown): void => {
      if (settled) return;
      settled = true;
      req.off('data', count);
      if (failure === undefined) return resolve();
      // Stop reading here: the rest of the body stays unread, and the file part (if any) ends.
      req.unpipe(parser);
      req.pause();
      const reason = failure instanceof Error ? failure : new Error(String(failure));
      parser.destroy(reason);
      filePart?.destroy(reason);
      reject(failure);
    };
    const count = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > maxBytes + FIELDS_ALLOWANCE) settle(tooLarge(M.fileTooLarge));
    };
    req.on('data', count);
    // A client that goes away mid-body: there is nobody to answer, only files to clean up.
    req.on('error', () => settle(invalid(M.requestAborted)));
    req.on('close', () => {
      if (!req.complete) settle(invalid(M.requestAborted));
    });
    parser.on('error', () => settle(invalid(M.malformedMultipart)));
    parser.on('finish', () => settle());

    parser.on('field', (name, value) => {
      if (!(name in fields)) fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      // Busboy destroys a part's stream with an error when the form ends inside it.
      stream.on('error', () => {});
      // Busboy goes on parsing the chunk in hand after an error: a part that starts after the form
      // failed is never spooled (nothing would end its stream).
      if (settled || name !== 'file' || file !== null || !info.filename) {
        stream.resume();
        return;
      }
      stream.on('limit', () => settle(tooLarge(M.fileTooLarge)));
      file = { path: join(spoolDir, `upload-${randomUUID()}`), size: 0, fileName: cleanFileName(info.filename), contentType: contentTypeOf(info.mimeType) };
      spooled.push(file.path);
      filePart = stream;
      // A spool write that fails (disk full) ends the form with that error: ours, not the client's.
      const write = spool(stream, file).catch((error: unknown) => {
        settle(error);
        throw error;
      });
      write.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
      writes.push(write);
    });
    req.pipe(parser);
  });

  try {
    await outcome;
    // Every spool write settles before the form is used or anything is removed.
    await Promise.all(writes);
  } catch (error) {
    await Promise.allSettled(writes);
    await discard();
    throw error;
  }
  return { fields, file, discard };
};

/** The part's declared content type when it looks like one, else `application/octet-stream`. */
const contentTypeOf = (mimeType: string | undefined): string =>
  mimeType && /^[\w.+-]+\/[\w.+-]+/.test(mimeType) ? mimeType : 'application/octet-stream';

/** Streams a file part to its spool file and records its size. */
const spool = async (stream: Readable, entry: SpooledFile): Promise<void> => {
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      callback(null, chunk);
    },
  });
  await pipeline(stream, counter, createWriteStream(entry.path));
  entry.size = size;
};
