import { basename } from 'node:path';
import type { Readable } from 'node:stream';
import type { Request } from 'express';
import busboy from 'busboy';
import { BlobTooLarge } from '@docshare/blob-store';
import { invalid, tooLarge, M } from '@docshare/contracts';
import type { FileSink, ReceivedFile, StoredBytes } from '../commands/file-sink.ts';

/** The sink a form's file part goes into is the upload use case's port (commands/file-sink.ts). */
export type { FileSink, ReceivedFile, StoredBytes };

export interface UploadForm<S extends StoredBytes> {
  fields: Record<string, string>;
  file: ReceivedFile<S> | null;
  /** Removes the stored file; safe to call twice. For a form whose upload is not going to be recorded. */
  discard(): Promise<void>;
}

/** Multipart field bytes beyond which the whole request is refused (fields are short texts). */
const FIELDS_ALLOWANCE = 1024 * 1024;

/**
 * Keeps just the last path segment of a client file name, without control characters or bidi
 * embeddings, overrides and isolates (`invoice\u202Efdp.exe` would show as `invoiceexe.pdf`).
 */
export const cleanFileName = (name: string): string =>
  basename(name.replace(/\\/g, '/')).replace(/[\p{Cc}\u202a-\u202e\u2066-\u2069]/gu, '').slice(0, 255) || 'file';

/**
 * Reads a multipart upload: text fields into memory (bounded), the file part streamed into `sink`
 * as it arrives, so memory stays flat whatever its size and the bytes are stored once, with no
 * spool file read a second time. Fields may come before or after the file part: the form resolves
 * once the whole body is read and the file stored. A request that is not multipart reads as a
 * form without fields or file (its body is never read).
 *
 * Fails with `File too large` (413) the moment the file passes `maxBytes` or the whole body passes
 * `maxBytes` plus the fields' allowance, and stops reading there: the rest of the body is never
 * read (the answer closes the connection). A body busboy cannot read is `Malformed multipart body`
 * (400); a client gone mid-body `Request aborted`; a sink that fails (the store is down) fails the
 * form with its error. A form that fails leaves nothing stored: the sink's put is cut off (its
 * body destroyed) or what it stored is discarded. Every stream of the form has an error listener:
 * no part, however broken or cut off, can throw outside this function.
 */
export const readUploadForm = async <S extends StoredBytes>(req: Request, sink: FileSink<S>, maxBytes: number): Promise<UploadForm<S>> => {
  const contentType = req.get('content-type') ?? '';
  let file: ReceivedFile<S> | null = null;
  let discarded = false;
  const discard = async (): Promise<void> => {
    if (file === null || discarded) return;
    discarded = true;
    await sink.discard(file);
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
  const writes: Promise<void>[] = [];
  let received = 0;

  /** The file part being stored: ended with an error when the form fails, so its store settles. */
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
      reject(reason);
    };
    const count = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > maxBytes + FIELDS_ALLOWANCE) settle(tooLarge(M.fileTooLarge));
    };
    req.on('data', count);
    // A client that goes away mid-body: there is nobody to answer, only the stored file to remove.
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
      // failed is never stored (nothing would end its stream).
      if (settled || name !== 'file' || filePart !== null || !info.filename) {
        stream.resume();
        return;
      }
      stream.on('limit', () => settle(tooLarge(M.fileTooLarge)));
      filePart = stream;
      const about = { fileName: cleanFileName(info.filename), contentType: contentTypeOf(info.mimeType) };
      // A store that fails (the blob store down, disk full) ends the form with that error: ours,
      // not the client's; past the limit it is the client's `File too large`.
      const write = sink.store(stream, about.contentType, maxBytes).then((stored) => {
        file = { ...stored, ...about };
      }, (error: unknown) => {
        const failure = error instanceof BlobTooLarge ? tooLarge(M.fileTooLarge) : error;
        settle(failure);
        throw failure;
      });
      write.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
      writes.push(write);
    });
    req.pipe(parser);
  });

  try {
    await outcome;
    // The file is stored before the form is used or anything is removed.
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
