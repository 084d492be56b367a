import { createHash, createHmac } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request, RequestHandler, Response } from 'express';
import { BlobTooLarge } from '@docshare/blob-store';
import { CONSISTENCY_HEADER, CONSISTENCY_USERS_HEADER, DocshareError, M } from '@docshare/contracts';
import { IDENTITY_HEADER, metaOf, type Logger } from '@docshare/http';
import type { IdempotencyStore, StoredAnswer } from '@docshare/idempotency-store';
import type { FileSink, StoredBytes, UploadForm } from './upload-form.ts';
import type { Recorded } from '../commands/recorded.ts';

/*
 * Safe retries of writes (IETF httpapi draft "The Idempotency-Key HTTP Header Field"; decisions in
 * docs/api-decisions.md, "Safe retries"). A write sent with `Idempotency-Key` is done once per key
 * and user: the same key with the same request replays the first answer (`Idempotent-Replayed:
 * true`) without doing the work again, whatever happened to the first answer on its way back (a
 * dropped connection, a restart of any service); the same key with another request is 422; a
 * request still working on the key makes a second one 409. Only answers that recorded something
 * are kept: an error answer, or a success that changed nothing (an update to the values the file
 * already has, a repeated purchase answered with the first sale), releases the key, and a retry
 * does the work afresh (that is also what an upload cut off mid-body gets): what it finds then is
 * what the first would have found, and a stream of no-op retries costs no memory or disk. Keys
 * live 24 hours after their answer.
 */

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
/** How long a completed key replays its answer. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/** How long a key stays in flight without its request renewing it (a request renews every third of it). */
export const IDEMPOTENCY_LEASE_MS = 60_000;

export interface Idempotency {
  store: IdempotencyStore;
  /** Keys the request fingerprints (HMAC), so a stored fingerprint reveals nothing of a body (a password). */
  secret: string;
  logger: Logger;
  now?: () => number;
  leaseMs?: number;
  ttlMs?: number;
}

/**
 * The key as sent: the draft's Structured Field string (`"…"`, with `\"` and `\\` escapes), or the
 * bare value most clients send; 1 to 255 printable ASCII characters. Undefined: no key sent.
 */
export const parseIdempotencyKey = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined;
  let value = header.trim();
  if (value.startsWith('"')) {
    if (value.length < 2 || !value.endsWith('"')) throw new DocshareError('invalid', M.invalidIdempotencyKey);
    const inner = value.slice(1, -1);
    if (/(^|[^\\])"|\\[^"\\]|\\$/.test(inner.replace(/\\\\/g, ''))) throw new DocshareError('invalid', M.invalidIdempotencyKey);
    value = inner.replace(/\\(["\\])/g, '$1');
  }
  if (!/^[\x20-\x7e]{1,255}$/.test(value) || value.trim() === '') throw new DocshareError('invalid', M.invalidIdempotencyKey);
  return value;
};

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` are the same request. */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
};

/** A stored file's bytes with their SHA-256, hashed as they stream by. */
export type Hashed<S extends StoredBytes> = S & { sha256: string };

/** `sink`, also hashing each file's bytes on their way to it. */
export const hashingSink = <S extends StoredBytes>(sink: FileSink<S>): FileSink<Hashed<S>> => ({
  async store(body: Readable, contentType: string, maxBytes: number): Promise<Hashed<S>> {
    const hash = createHash('sha256');
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    // A body that fails (the client went away) fails the tap, which the sink reads and reports;
    // the tap's error is listened to here too, since the sink may not be reading it yet.
    tap.on('error', () => {});
    body.on('error', (error) => tap.destroy(error));
    body.pipe(tap);
    const stored = await sink.store(tap, contentType, maxBytes);
    return { ...stored, sha256: hash.digest('hex') };
  },
  discard: (stored) => sink.discard(stored),
});

/** A sink that keeps nothing: the bytes of a replayed upload are only hashed, to compare requests. */
export const hashOnlySink: FileSink<Hashed<StoredBytes>> = {
  async store(body: Readable, _contentType: string, maxBytes: number) {
    const hash = createHash('sha256');
    let size = 0;
    await pipeline(body, async (chunks: AsyncIterable<Buffer>) => {
      for await (const chunk of chunks) {
        size += chunk.length;
        if (size > maxBytes) throw new BlobTooLarge('idempotent-replay', maxBytes);
        hash.update(chunk);
      }
    });
    return { size, sha256: hash.digest('hex') };
  },
  async discard() {},
};

/** What identifies an upload: its fields, the file's name, type and bytes (never the multipart boundary). */
export const uploadRequestOf = (form: UploadForm<StoredBytes & { sha256?: string }>): unknown => ({
  fields: form.fields,
  file: form.file ? { name: form.file.fileName, type: form.file.contentType, size: form.file.size, sha256: form.file.sha256 } : null,
});

/** What a write answers: status, body and what it recorded (its consistency headers come from that). */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
  recorded: Recorded | null;
  /** What identified the request, when only the work knows it (an upload, once its form is read). */
  request?: unknown;
}

/** The headers of an answer that recorded something: its consistency token and the users it changed. */
export const consistencyHeaders = (recorded: Recorded | null): Record<string, string> => {
  if (!recorded) return {};
  return {
    [CONSISTENCY_HEADER]: String(recorded.position),
    ...(recorded.users.length > 0 ? { [CONSISTENCY_USERS_HEADER]: recorded.users.join(',') } : {}),
  };
};

/** Sends an answer: its headers once, then the JSON body. */
export const send = (res: Response, answer: Pick<Answer, 'status' | 'body' | 'recorded'>): void => {
  res.set(consistencyHeaders(answer.recorded)).status(answer.status).json(answer.body);
};

/** A write's work: everything but sending, so a wrapper can keep the answer before it is sent. */
export type Work = (req: Request) => Promise<Answer>;

export interface IdempotentRoute {
  /** What identifies the request (for a replay's comparison): the parsed JSON body, or the upload's form. */
  requestOf(req: Request): Promise<unknown>;
  /** For a request being done: what identified it comes back with the answer (`Answer.request`), not from `requestOf`. */
  deferred?: boolean;
  /** Takes out of the stored body what must not be stored (a token), and puts it back on replay. */
  redact?(body: Record<string, unknown>): Record<string, unknown>;
  restore?(body: Record<string, unknown>, req: Request): Record<string, unknown> | Promise<Record<string, unknown>>;
}

/**
 * Wraps a write's work (as eShop's IdentifiedCommand does): without `Idempotency-Key` it runs
 * and its answer is sent; with one, a first request runs the work, keeps its answer (when it
 * recorded something) and then sends it; a retry gets the kept answer.
 */
export const idempotent = (options: Idempotency, route: IdempotentRoute, work: Work): RequestHandler => {
  const { store, logger } = options;
  const now = options.now ?? Date.now;
  const leaseMs = options.leaseMs ?? IDEMPOTENCY_LEASE_MS;
  const ttlMs = options.ttlMs ?? IDEMPOTENCY_TTL_MS;
  const fingerprintOf = (req: Request, request: unknown): string =>
    createHmac('sha256', options.secret).update(canonicalJson([req.method, req.path, request])).digest('base64url');

  return async (req, res) => {
    const key = parseIdempotencyKey(req.get(IDEMPOTENCY_KEY_HEADER));
    if (key === undefined) return send(res, await work(req));
    // One user's keys are theirs alone; registrations (no user yet) share the anonymous scope,
    // where the request's fingerprint (the e-mail address) tells them apart.
    const scoped = `${req.get(IDENTITY_HEADER) ?? 'anonymous'}/${key}`;
    const begun = await store.begin(scoped, now(), leaseMs);

    if (begun.state === 'in_flight') throw new DocshareError('conflict', M.idempotencyKeyInFlight);
    if (begun.state === 'done') {
      const fingerprint = fingerprintOf(req, await route.requestOf(req));
      if (fingerprint !== begun.fingerprint) throw new DocshareError('unprocessable', M.idempotencyKeyReused);
      return replay(req, res, begun.answer, route);
    }

    const { token } = begun;
    const renewal = setInterval(() => {
      store.renew(scoped, token, now(), leaseMs).catch((err: unknown) => logger.warn({ err }, 'could not renew an idempotency key'));
    }, Math.max(1, Math.floor(leaseMs / 3)));
    renewal.unref();
    let answer: Answer;
    try {
      answer = await work(req);
    } catch (error) {
      await store.abandon(scoped, token).catch((err: unknown) => logger.warn({ err }, 'could not release an idempotency key'));
      throw error;
    } finally {
      clearInterval(renewal);
    }
    // A write that recorded nothing carries no consistency token: nothing to replay.
    if (answer.status < 200 || answer.status >= 300 || answer.recorded === null) {
      await store.abandon(scoped, token).catch((err: unknown) => logger.warn({ err }, 'could not release an idempotency key'));
      return send(res, answer);
    }
    // The answer is kept before it is sent: a client that sees it can always have it again.
    const { requestId } = metaOf(req);
    try {
      const request = route.deferred ? answer.request : await route.requestOf(req);
      if (request === undefined) throw new Error('an idempotent route answered without identifying its request');
      const stored: StoredAnswer = {
        status: answer.status, headers: consistencyHeaders(answer.recorded),
        body: JSON.stringify(route.redact ? route.redact(answer.body) : answer.body),
      };
      const completed = await store.complete(scoped, token, { fingerprint: fingerprintOf(req, request), answer: stored, expiresAt: now() + ttlMs });
      if (!completed) logger.warn({ requestId }, 'an idempotency key was taken over before its request completed');
    } catch (err) {
      // The write is done and the client is told so; only a retry of it after a lost answer
      // would do it again (once the lease lapses).
      logger.error({ err, requestId }, 'could not keep an idempotent answer');
    }
    send(res, answer);
  };
};

const replay = async (req: Request, res: Response, answer: StoredAnswer, route: IdempotentRoute): Promise<void> => {
  // What was taken out of the stored body (a token, a secret) is read again first, so a failure answers an error, not half a replay.
  const body = route.restore ? JSON.stringify(await route.restore(JSON.parse(answer.body) as Record<string, unknown>, req)) : answer.body;
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.setHeader(REPLAYED_HEADER, 'true');
  res.status(answer.status).type('application/json').send(body);
};
