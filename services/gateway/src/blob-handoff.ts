import type { IncomingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream';
import type { Response } from 'express';
import { M } from '@docshare/contracts';
import { RangeNotSatisfiable, type BlobStore, type ByteRange } from '@docshare/blob-store';
import { BLOB_KEY_HEADER, BLOB_RANGE_HEADER, sendError, sendUnavailable, type Logger } from '@docshare/http';

/** What the gateway needs of the blob store to serve a handed-off file: the same reads docs-command makes. */
export type BlobReader = Pick<BlobStore, 'get'>;

/** `start-end` as docs-command sends it (BLOB_RANGE_HEADER); undefined for the whole blob or a malformed value. */
export const parseBlobRange = (value: string | string[] | undefined): ByteRange | undefined => {
  const match = typeof value === 'string' ? /^(\d{1,15})-(\d{1,15})$/.exec(value) : null;
  if (!match) return undefined;
  const start = Number(match[1]);
  const end = Number(match[2]);
  return end >= start ? { start, end } : undefined;
};

/** Whether docs-command handed the bytes of its answer to the gateway (it checked the link, the file and the range). */
export const isHandoff = (headers: IncomingHttpHeaders): boolean => typeof headers[BLOB_KEY_HEADER] === 'string';

/**
 * Serves a file's bytes that docs-command handed off: `headers` are its answer's, and `relay` the
 * ones of them the client gets (Content-Type, Content-Disposition, validators, the content
 * security policy...: set only on the bytes' answer, never on an error's); the status, Content-Length and Content-Range come from the blob store's answer, exactly as
 * docs-command sets them when it streams itself. The blob's stream goes to the client through one
 * pipe (the store's chunks as they come, paced by the client: a client that stops reading stops
 * the store's reads, and its socket's idle timeout ends both). A blob gone meanwhile is a 404, a
 * range past its end a 416, a store that fails a 503 before any byte, a cut answer after.
 */
export const serveHandoff = (
  headers: IncomingHttpHeaders, relay: Record<string, string | string[]>, res: Response, blobs: BlobReader, logger: Logger,
): void => {
  const key = headers[BLOB_KEY_HEADER] as string;
  const range = parseBlobRange(headers[BLOB_RANGE_HEADER]);
  blobs.get(key, range).then((blob) => {
    if (res.destroyed || res.headersSent) {
      blob?.body.destroy();
      return;
    }
    if (!blob) return sendError(res, 404, M.fileNotFound);
    for (const [name, value] of Object.entries(relay)) {
      if (name !== 'content-length' && name !== BLOB_KEY_HEADER && name !== BLOB_RANGE_HEADER) res.setHeader(name, value);
    }
    if (blob.range) {
      res.status(206).setHeader('Content-Range', `bytes ${blob.range.start}-${blob.range.end}/${blob.size}`);
      res.setHeader('Content-Length', String(blob.range.end - blob.range.start + 1));
    } else {
      res.status(200).setHeader('Content-Length', String(blob.size));
    }
    pipeline(blob.body, res, (err) => {
      if (!err) return;
      logger.warn({ err, requestId: res.locals.requestId }, 'content stream failed');
      res.destroy();
    });
  }, (err: unknown) => {
    if (res.headersSent || res.destroyed) return;
    if (err instanceof RangeNotSatisfiable) {
      res.setHeader('Content-Range', `bytes */${err.size}`);
      return sendError(res, 416, M.rangeNotSatisfiable);
    }
    logger.warn({ err, requestId: res.locals.requestId }, 'blob store failed');
    sendUnavailable(res);
  });
};
