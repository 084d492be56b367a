import type { Readable } from 'node:stream';

/*
 * A request body's declared size, and reading a small one to its end before a refusal that comes
 * before the body (the storage quota's, on an upload: commands/storage-quota.ts).
 */

/** Parses a declared `Content-Length`: the body's size when it is sent as a plain decimal, else undefined (chunked). */
export const declaredLength = (header: string | undefined): number | undefined =>
  header !== undefined && /^\d{1,15}$/.test(header.trim()) ? Number(header) : undefined;

/** Bodies up to this size are read to their end before a refusal that comes before the body (see drainSmallBody). */
export const DRAIN_BEFORE_REFUSAL_BYTES = 64 * 1024;

/**
 * Reads and drops a request body that is small (declared, or found to be, at most `limit` bytes)
 * before the server answers without it. An answer that leaves body bytes unread closes the
 * connection, and a client still writing a small upload (fetch, most libraries) sees a reset
 * instead of the answer; a large body is left unread (the answer closes the connection), which is
 * the point of refusing first.
 */
export const drainSmallBody = async (req: Readable & { complete?: boolean; headers: Record<string, unknown> }, limit = DRAIN_BEFORE_REFUSAL_BYTES): Promise<void> => {
  if (req.complete || req.readableEnded) return;
  const declared = declaredLength(typeof req.headers['content-length'] === 'string' ? req.headers['content-length'] : undefined);
  if (declared !== undefined && declared > limit) return;
  await new Promise<void>((resolve) => {
    let read = 0;
    const done = (): void => {
      req.off('data', onData);
      req.off('end', done);
      req.off('error', done);
      req.off('close', done);
      resolve();
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read > limit) {
        req.pause();
        done();
      }
    };
    req.on('data', onData);
    req.on('end', done);
    req.on('error', done);
    req.on('close', done);
    req.resume();
  });
};
