// The client's side of resumable uploads (issue 22) for the black-box tests: the four control
// calls through the SDK's low-level request(), part PUTs straight to whatever URL the server handed
// out (docshare's signed part URL or a presigned object-store URL: a URL is opaque to clients), and
// a part PUT cut off mid-body on a raw connection, as a client that crashes or loses its network.
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { DEFAULT_UPLOAD, toRes, type Api, type Json, type Res } from './client.ts';

export const MiB = 1024 * 1024;
export const UPLOADS = '/api/V1/docs/api-uploads';

export interface PartUrl { part_number: number; url: string }
export interface Received { part_number: number; size: number; etag: string }

export const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** A create body: api-upload's default metadata, then the file's name and size, then `over`. */
export const createBody = (size: number, over: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ ...DEFAULT_UPLOAD, file_name: 'big.bin', size, content_type: 'application/octet-stream', ...over });

/** The control calls of one API client. */
export const uploads = (c: Api) => ({
  create: (token: string | undefined, body: unknown, headers?: Record<string, string>): Promise<Res> =>
    c.json('POST', UPLOADS, token, body, headers === undefined ? {} : { headers }),
  get: (token: string | undefined, id: string): Promise<Res> => c.json('GET', `${UPLOADS}/${id}`, token),
  complete: (token: string | undefined, id: string, body?: unknown, headers?: Record<string, string>): Promise<Res> =>
    c.json('POST', `${UPLOADS}/${id}/complete`, token, body ?? {}, headers === undefined ? {} : { headers }),
  abort: (token: string | undefined, id: string): Promise<Res> => c.json('DELETE', `${UPLOADS}/${id}`, token),
});

/** Bytes `[(n-1)·partSize, n·partSize)` of `data`: part `n`'s share of the file. */
export const partOf = (data: Uint8Array, partSize: number, n: number): Uint8Array =>
  data.subarray((n - 1) * partSize, Math.min(data.length, n * partSize));

/** One PUT of `bytes` (Content-Length set) to a part URL, no token: the answer and its ETag header. */
export const putPart = async (url: string, bytes: Uint8Array): Promise<{ res: Res; etag: string | null }> => {
  const res = await toRes(await fetch(url, { method: 'PUT', body: bytes, redirect: 'manual' }));
  return { res, etag: res.headers.get('etag') };
};

/**
 * A part PUT that announces `total` bytes, sends `head` (fewer), waits until they have left this
 * process, and drops the connection: the part never arrives whole.
 */
export const interruptedPut = async (url: string, total: number, head: Uint8Array): Promise<void> => {
  const transport = url.startsWith('https:') ? https : http;
  const req = transport.request(url, { method: 'PUT', headers: { 'Content-Length': String(total) } });
  req.on('error', () => {});
  req.on('response', (res) => res.resume());
  await new Promise<void>((resolve) => {
    req.write(head, () => resolve());
  });
  req.destroy();
};

/** The parts of a GET's `received`, by part number (the order of the list is not asserted). */
export const byNumber = <T extends { part_number: number }>(list: T[]): T[] => [...list].sort((a, b) => a.part_number - b.part_number);

/** A pending session's missing part numbers, from a GET's `upload`. */
export const missing = (upload: Json): number[] => byNumber(upload.parts as PartUrl[]).map((p) => p.part_number);
