import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join, basename } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
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
 * file under `spoolDir` so memory stays flat whatever its size. Throws `File too large` past
 * `maxBytes`; a request that is not multipart reads as a form without fields or file.
 */
export const readUploadForm = async (req: Request, spoolDir: string, maxBytes: number): Promise<UploadForm> => {
  const contentType = req.get('content-type') ?? '';
  const spooled: string[] = [];
  const discard = async (): Promise<void> => {
    await Promise.all(spooled.map((p) => rm(p, { force: true })));
  };
  if (!/^multipart\/form-data/i.test(contentType)) {
    req.resume();
    return { fields: {}, file: null, discard };
  }
  const declared = Number(req.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes + FIELDS_ALLOWANCE) {
    throw tooLarge(M.fileTooLarge);
  }

  const fields: Record<string, string> = {};
  let file: SpooledFile | null = null;
  let fileTooLarge = false;
  const writes: Promise<void>[] = [];

  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      // busboy reports `limit` once a file reaches fileSize, so allow one byte more and check the count.
      limits: { fileSize: maxBytes + 1, files: 1, fields: 50, fieldSize: 256 * 1024, parts: 60 },
      defParamCharset: 'utf8',
    });
  } catch {
    req.resume();
    throw invalid(M.fileRequired);
  }

  parser.on('field', (name, value) => {
    if (!(name in fields)) fields[name] = value;
  });
  parser.on('file', (name, stream, info) => {
    if (name !== 'file' || file !== null || !info.filename) {
      stream.resume();
      return;
    }
    const path = join(spoolDir, `upload-${randomUUID()}`);
    spooled.push(path);
    let size = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        size += chunk.length;
        callback(null, chunk);
      },
    });
    stream.on('limit', () => { fileTooLarge = true; });
    const entry: SpooledFile = {
      path, size: 0, fileName: cleanFileName(info.filename),
      contentType: info.mimeType && /^[\w.+-]+\/[\w.+-]+/.test(info.mimeType) ? info.mimeType : 'application/octet-stream',
    };
    file = entry;
    writes.push(pipeline(stream, counter, createWriteStream(path)).then(() => {
      entry.size = size;
      if (size > maxBytes) fileTooLarge = true;
    }));
  });

  let parseError: unknown;
  try {
    // pipeline destroys the parser (and so the file part's stream) when the request aborts.
    await pipeline(req, parser);
  } catch (error) {
    parseError = error;
  }
  // Every spool write settles before anything is removed: no open descriptor on an unlinked file.
  const written = await Promise.allSettled(writes);
  const writeFailure = written.find((w): w is PromiseRejectedResult => w.status === 'rejected');
  if (parseError !== undefined || writeFailure) {
    await discard();
    if (fileTooLarge) throw tooLarge(M.fileTooLarge);
    const aborted = req.destroyed || (parseError instanceof Error && /abort|premature/i.test(parseError.message));
    if (aborted) throw invalid('Request aborted');
    // A multipart body busboy cannot read is the client's; a spool write failure (disk full) is ours.
    if (writeFailure && parseError === undefined) throw writeFailure.reason;
    throw invalid(M.fileRequired);
  }
  if (fileTooLarge) {
    await discard();
    throw tooLarge(M.fileTooLarge);
  }
  return { fields, file, discard };
};
