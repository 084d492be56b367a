import { randomUUID } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import {
  conflict, DocshareError, forbidden, invalid, M, makeKeyedQueue, notFound, streamIds, tooLarge,
  type CategoryCreated, type UploadAbortReason, type UploadStarted,
} from '@docshare/contracts';
import { InvalidPart, NoSuchUpload, PartSizeMismatch, type BlobStore, type PartInfo } from '@docshare/blob-store';
import { VersionConflict, type EventStore } from '@docshare/event-store';
import type { UrlSigner } from '@docshare/auth';
import type { Logger } from '@docshare/http';
import { holdKey, type StorageLedger } from '@docshare/storage-ledger';
import { foldStream, type CommandMeta, type Decider, type Handled } from './command-handler.ts';
import type { CommandContext } from './context.ts';
import type { Categories } from './categories.ts';
import type { makeUploadCommands, UploadMetadata } from './uploads.ts';
import { quotaExceeded } from './storage-quota.ts';
import { recordedBy, type Recorded } from './recorded.ts';
import { makeByteThrottle } from './throttle.ts';
import { contentTypeFor, SNIFF_BYTES } from './sniff.ts';
import {
  completedBy, decideUpload, evolveUpload, initialUploadState, layoutOf, partSizeOf, phaseOf, sessionOf,
  type UploadCommand, type UploadEventBody, type UploadPhase, type UploadState,
} from './domain/upload.ts';

/*
 * Resumable uploads (issue 22, docs/api-decisions.md "Resumable uploads"): a session is started
 * with the file's metadata and size, its parts go straight to the object store (presigned URLs
 * when clients can reach it, else docshare's signed part URLs, served here), and completion
 * assembles them and records the unchanged `docs.file.uploaded.v1`. The session's quota is a
 * ledger hold from its start to its end (completion turns it into the file's pending upload;
 * an abort or expiry gives it back), so open sessions count against the quota in every process.
 */

export interface ResumableSettings {
  /** Largest size a session may declare (MAX_RESUMABLE_BYTES). */
  maxBytes: number;
  /** A session's lifetime (UPLOAD_SESSION_TTL_SECONDS). */
  sessionTtlSeconds: number;
  /** The part size files are cut into (UPLOAD_PART_BYTES). */
  partBytes: number;
  /** Bytes per second a user may send through docshare's part URLs; 0 = unlimited. */
  partBytesPerSecond: number;
}

export const DEFAULT_RESUMABLE: ResumableSettings = {
  maxBytes: 5 * 1024 ** 3, sessionTtlSeconds: 24 * 3600, partBytes: 8 * 1024 * 1024, partBytesPerSecond: 100 * 1024 * 1024,
};

/** What POST api-uploads asks for (parsed by http/validation.ts). */
export interface StartUpload { fileName: string; size: number; contentType: string; metadata: UploadMetadata }

/** A part the client names at completion. */
export interface PartRef { partNumber: number; etag: string }

export interface PartLink { partNumber: number; url: string }

/** A session as GET api-uploads/{id} shows it. */
export interface UploadView {
  session: UploadStarted;
  phase: UploadPhase;
  received: PartInfo[];
  /** The parts still to send, with URLs signed now (pending sessions only). */
  parts: PartLink[];
  fileId?: number;
}

/** Sessions whose store upload has no session after this long are strays (a crash between the two). */
const STRAY_GRACE_MS = 60 * 60_000;
/** An upload id: a lower-case UUID v4 (randomUUID). */
const UPLOAD_ID = '[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}';
const IS_UPLOAD_ID = new RegExp(`^${UPLOAD_ID}$`);
/** The blob key of a session: `f<fileId>-<uploadId>`. */
const SESSION_KEY = new RegExp(`^f[1-9]\\d{0,15}-(${UPLOAD_ID})$`);
/** The upload id a blob key belongs to, or null. */
export const uploadIdOfKey = (key: string): string | null => SESSION_KEY.exec(key)?.[1] ?? null;
/** What a client may name as an upload id (anything else is not found). */
export const isUploadId = (value: string): boolean => IS_UPLOAD_ID.test(value);

/** ETags compare without their quotes (S3 lists them quoted; clients may send them bare). */
const bare = (etag: string): string => etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');

export const uploadDecider: Decider<UploadCommand, UploadState, UploadEventBody> = {
  initialState: initialUploadState, evolve: evolveUpload, decide: decideUpload,
};

/** The path docshare's URL for one part signs (and serves, http/app.ts). */
export const partPath = (uploadId: string, partNumber: number): string => `/api/V1/docs/api-uploads/${uploadId}/parts/${partNumber}`;

/** What the storage ledger's repair asks of a session's hold: whether the session is still open. */
export const resolvedHold = (events: EventStore, now: () => Date = () => new Date()) => async (holdId: string): Promise<'open' | 'ended'> => {
  if (!isUploadId(holdId)) return 'ended';
  const state = await foldStream(events, uploadDecider, streamIds.upload(holdId));
  return state.status === 'open' && now().getTime() <= Date.parse(state.session.expiresAt) ? 'open' : 'ended';
};

export interface ResumableDeps {
  ctx: CommandContext;
  blobs: BlobStore;
  logger: Logger;
  ledger: StorageLedger;
  /** Bytes each user may store; 0 or less: unlimited (no holds). */
  quotaBytes: number;
  categories: Categories;
  signer: UrlSigner;
  publicBaseUrl: string;
  uploads: ReturnType<typeof makeUploadCommands>;
  settings: ResumableSettings;
}

export const makeResumableUploads = (deps: ResumableDeps) => {
  const { ctx, blobs, logger, ledger, categories, signer, settings } = deps;
  const limited = deps.quotaBytes > 0;
  const throttle = makeByteThrottle(settings.partBytesPerSecond);
  // Completions and aborts of one session run one at a time in this process.
  const serialized = makeKeyedQueue();
  const presignPart = blobs.presignPart?.bind(blobs);

  const load = async (uploadId: string): Promise<UploadState> =>
    isUploadId(uploadId) ? (await ctx.handler.load(uploadDecider, streamIds.upload(uploadId))).state : initialUploadState();
  const onUpload = async (uploadId: string, command: UploadCommand, meta: CommandMeta): Promise<Handled<UploadState>> =>
    ctx.committed(await ctx.handler.handle(uploadDecider, streamIds.upload(uploadId), command, ctx.clock().toISOString(), meta));

  const linksFor = async (session: UploadStarted, partNumbers: number[]): Promise<PartLink[]> => {
    const expiresAt = Math.floor(Date.parse(session.expiresAt) / 1000);
    const seconds = Math.max(1, expiresAt - Math.floor(ctx.clock().getTime() / 1000));
    return Promise.all(partNumbers.map(async (partNumber) => {
      if (presignPart) return { partNumber, url: await presignPart(session.blobKey, session.storeUploadId, partNumber, seconds) };
      const path = partPath(session.uploadId, partNumber);
      return { partNumber, url: `${deps.publicBaseUrl}${path}?${signer.sign(path, expiresAt)}` };
    }));
  };
  const numbers = (count: number): number[] => Array.from({ length: count }, (_, i) => i + 1);

  /** Gives a session's room back (nothing held without a quota; a hold already gone: nothing). */
  const releaseHold = (session: Pick<UploadStarted, 'ownerId' | 'uploadId'>): Promise<void> =>
    limited ? ledger.cancel(session.ownerId, holdKey(session.uploadId)) : Promise.resolve();

  /** Ends a session without a file: records why (once), removes its parts, gives its room back. */
  const end = async (session: UploadStarted, reason: UploadAbortReason, meta: CommandMeta): Promise<Recorded | null> => {
    const handled = await onUpload(session.uploadId, { type: 'AbortUpload', uploadId: session.uploadId, actorId: session.ownerId, reason, now: ctx.clock().toISOString() }, meta);
    await blobs.abortMultipart(session.blobKey, session.storeUploadId)
      .catch((err: unknown) => logger.warn({ err, uploadId: session.uploadId }, 'could not remove the parts of an ended upload; the upload sweeper retries'));
    await releaseHold(session);
    return recordedBy(handled);
  };

  /** POST api-uploads: holds the room, opens the store's multipart upload, records the session. */
  const start = async (actorId: number, input: StartUpload, meta: CommandMeta) => {
    await ctx.author(actorId);
    if (input.size > settings.maxBytes) throw tooLarge(M.resumableTooLarge);
    const now = ctx.clock();
    const expiresAt = new Date(now.getTime() + settings.sessionTtlSeconds * 1000);
    const uploadId = randomUUID();
    if (limited) {
      // All or nothing, until the session's end: a second session that would not fit is refused now.
      const { held } = await ledger.reserve(actorId, uploadId, input.size, deps.quotaBytes, { until: expiresAt.getTime(), exact: true });
      if (held <= 0) throw quotaExceeded();
    }
    const hold = { ownerId: actorId, uploadId };
    let session: UploadStarted;
    try {
      const { category } = input.metadata;
      if (category.kind === 'existing' && !(await categories.categoryById(category.categoryId))) throw notFound(M.categoryNotFound);
      const fileId = await ctx.events.nextId('file');
      const blobKey = `f${fileId}-${uploadId}`;
      const storeUploadId = await blobs.createMultipart(blobKey, input.contentType);
      const { partSize, partCount } = layoutOf(input.size, settings.partBytes);
      const { title, description, tags, license, videoUrl } = input.metadata;
      session = {
        uploadId, ownerId: actorId, fileId, blobKey, storeUploadId, fileName: input.fileName, contentType: input.contentType,
        size: input.size, partSize, partCount, title, description, tags, license, category, videoUrl,
        startedAt: now.toISOString(), expiresAt: expiresAt.toISOString(),
      };
    } catch (error) {
      await releaseHold(hold);
      throw error;
    }
    let handled: Handled<UploadState>;
    try {
      handled = await onUpload(uploadId, { type: 'StartUpload', session }, meta);
    } catch (error) {
      // Known not recorded: nothing else will end it. Otherwise the ledger's repair asks the log.
      if (error instanceof DocshareError || error instanceof VersionConflict) {
        await releaseHold(hold);
        await blobs.abortMultipart(session.blobKey, session.storeUploadId).catch(() => undefined);
      }
      throw error;
    }
    return { session, parts: await linksFor(session, numbers(session.partCount)), recorded: recordedBy(handled) };
  };

  /** The session, its file's state and its phase now. */
  const phaseNow = async (state: Exclude<UploadState, { status: 'none' }>) => {
    const file = await ctx.loadFile(state.session.fileId);
    return { file, phase: phaseOf(state, file, ctx.clock()) };
  };
  const refuseUnlessPending = (phase: UploadPhase): void => {
    if (phase === 'aborted') throw conflict(M.uploadWasAborted);
    if (phase === 'expired') throw conflict(M.uploadExpired);
    if (phase === 'completed') throw conflict(M.uploadCompleted);
  };

  /** GET api-uploads/{id}: where the session stands, with fresh URLs for the parts still to send. */
  const status = async (actorId: number, uploadId: string): Promise<UploadView> => {
    const state = await load(uploadId);
    const session = sessionOf(state, actorId);
    const { phase } = await phaseNow(state as Exclude<UploadState, { status: 'none' }>);
    if (phase === 'completed') return { session, phase, received: [], parts: [], fileId: session.fileId };
    const received = (await blobs.listParts(session.blobKey, session.storeUploadId)) ?? [];
    const have = new Set(received.filter((part) => part.size === partSizeOf(session, part.partNumber)).map((part) => part.partNumber));
    const missing = numbers(session.partCount).filter((n) => !have.has(n));
    return { session, phase, received, parts: phase === 'pending' ? await linksFor(session, missing) : [] };
  };

  /**
   * PUT of one part through docshare's signed URL: the signature is the credential (no token), the
   * session must be pending, the body exactly the part's size; paced to the owner's byte budget.
   */
  const putPart = async (uploadId: string, partNumber: number, expires: unknown, signature: unknown, body: Readable, declared: number | undefined): Promise<string> => {
    const path = partPath(uploadId, partNumber);
    if (!isUploadId(uploadId) || !signer.verify(path, expires, signature, 0)) throw forbidden(M.badUploadLink);
    const state = await load(uploadId);
    if (state.status === 'none' || partNumber > state.session.partCount) throw notFound(M.uploadNotFound);
    const { session } = state;
    // A genuine link past its time says why when the session has ended (links last as long as it).
    refuseUnlessPending((await phaseNow(state)).phase);
    if (!signer.verify(path, expires, signature, Math.floor(ctx.clock().getTime() / 1000))) throw forbidden(M.badUploadLink);
    const expected = partSizeOf(session, partNumber);
    if (declared !== undefined && declared > expected) throw tooLarge(M.sizeMismatch);
    if (declared !== undefined && declared < expected) throw invalid(M.partSizeMismatch);
    // Counted on the way (a refusal says whether the body was too long or too short).
    let sent = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        sent += chunk.length;
        done(null, chunk);
      },
    });
    body.on('error', (error) => counter.destroy(error));
    counter.on('close', () => body.unpipe(counter));
    try {
      return await blobs.putPart(session.blobKey, session.storeUploadId, partNumber, throttle.pace(session.ownerId, body.pipe(counter)), expected);
    } catch (error) {
      if (error instanceof PartSizeMismatch) throw sent > expected ? tooLarge(M.sizeMismatch) : invalid(M.partSizeMismatch);
      if (error instanceof NoSuchUpload) {
        // Ended while the part came (aborted, expired and swept, or completed).
        refuseUnlessPending((await phaseNow(await load(uploadId) as Exclude<UploadState, { status: 'none' }>)).phase);
        throw conflict(M.uploadWasAborted);
      }
      throw error;
    }
  };

  /** The parts to assemble, checked against the layout: a wrong size is final (413), a missing part is not (409). */
  const partsToAssemble = (session: UploadStarted, received: PartInfo[], named: PartRef[] | undefined): PartRef[] | 'size_mismatch' => {
    if (received.some((part) => part.partNumber > session.partCount || part.size !== partSizeOf(session, part.partNumber))) return 'size_mismatch';
    const byNumber = new Map(received.map((part) => [part.partNumber, part]));
    const wanted = named ? new Map(named.map((part) => [part.partNumber, part.etag])) : undefined;
    if (wanted && [...wanted.keys()].some((n) => n > session.partCount)) throw invalid(M.invalidParts);
    return numbers(session.partCount).map((partNumber) => {
      const part = byNumber.get(partNumber);
      const etag = wanted ? wanted.get(partNumber) : part?.etag;
      if (!part || etag === undefined || bare(etag) !== bare(part.etag)) throw conflict(M.partsMissing);
      return { partNumber, etag: part.etag };
    });
  };

  /** Makes sure the session's room is held for `size` bytes (a hold the repair dropped is taken again if it fits). */
  const confirmRoom = async (session: UploadStarted, size: number): Promise<void> => {
    if (limited && !(await ledger.resize(session.ownerId, session.uploadId, size, deps.quotaBytes))) throw quotaExceeded();
  };

  /** The answer of a completed session: api-upload's success body, from the file's stream. */
  const completedAnswer = (file: Awaited<ReturnType<CommandContext['loadFile']>>, recorded: Recorded | null) => {
    if (file.status === 'none') throw new Error('completed session without a file');
    return { fileId: file.file.fileId, categoryId: file.file.categoryId, categoryName: file.file.categoryName, recorded };
  };

  /** The first bytes of the assembled blob (content sniffing). */
  const headOf = async (blobKey: string): Promise<Uint8Array> => {
    const blob = await blobs.get(blobKey, { start: 0, end: SNIFF_BYTES - 1 }).catch(() => null);
    if (!blob) return new Uint8Array();
    const chunks: Buffer[] = [];
    for await (const chunk of blob.body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  /**
   * POST api-uploads/{id}/complete: checks the parts, holds the room for their size, assembles them
   * and records the file. Once recorded, the same call answers the same file (from its stream).
   */
  const complete = (actorId: number, uploadId: string, named: PartRef[] | undefined, meta: CommandMeta) => serialized(uploadId, async () => {
    const state = await load(uploadId);
    const session = sessionOf(state, actorId);
    const { file, phase } = await phaseNow(state as Exclude<UploadState, { status: 'none' }>);
    if (completedBy(file, session)) return completedAnswer(file, null);
    refuseUnlessPending(phase);

    const received = await blobs.listParts(session.blobKey, session.storeUploadId);
    let size: number;
    if (received === null) {
      // The store's upload is gone: an earlier completion assembled the blob and stopped before recording it.
      const info = await blobs.stat(session.blobKey);
      if (!info) throw conflict(M.partsMissing);
      size = info.size;
      if (size === session.size) await confirmRoom(session, size);
    } else {
      const parts = partsToAssemble(session, received, named);
      if (parts === 'size_mismatch') {
        await end(session, 'size_mismatch', meta);
        throw tooLarge(M.sizeMismatch);
      }
      await confirmRoom(session, session.size);
      try {
        size = await blobs.completeMultipart(session.blobKey, session.storeUploadId, parts);
      } catch (error) {
        if (error instanceof InvalidPart || error instanceof NoSuchUpload) throw conflict(M.partsMissing);
        throw error;
      }
    }
    if (size !== session.size) {
      await blobs.remove(session.blobKey).catch(() => undefined);
      await end(session, 'size_mismatch', meta);
      throw tooLarge(M.sizeMismatch);
    }

    const owner = await ctx.author(actorId);
    let category: CategoryCreated | null;
    let created: Handled<unknown> | undefined;
    if (session.category.kind === 'existing') category = await categories.categoryById(session.category.categoryId);
    else ({ category, created } = await categories.categoryNamed(session.category, actorId, meta));
    if (!category) throw notFound(M.categoryNotFound);
    const contentType = contentTypeFor(session.contentType, await headOf(session.blobKey));

    // From here the room is the file's pending upload (the hold becomes it), settled once recorded.
    await ledger.pend(actorId, { kind: 'upload', fileId: session.fileId, bytes: size }, limited ? session.uploadId : undefined);
    const metadata: UploadMetadata = {
      title: session.title, description: session.description, tags: session.tags, license: session.license as UploadMetadata['license'],
      category: session.category, videoUrl: session.videoUrl,
    };
    return deps.uploads.record(actorId, owner, { fileId: session.fileId, blobKey: session.blobKey, size, fileName: session.fileName, contentType }, metadata, category, created, meta);
  });

  /** DELETE api-uploads/{id}: ends the session (again: nothing more); a completed one cannot be aborted. */
  const abort = (actorId: number, uploadId: string, meta: CommandMeta) => serialized(uploadId, async () => {
    const state = await load(uploadId);
    const session = sessionOf(state, actorId);
    const { phase } = await phaseNow(state as Exclude<UploadState, { status: 'none' }>);
    if (phase === 'completed') throw conflict(M.uploadCompleted);
    if (state.status === 'aborted') {
      // Already ended: its parts may still be there if the first removal failed.
      await blobs.abortMultipart(session.blobKey, session.storeUploadId).catch(() => undefined);
      return { recorded: null };
    }
    return { recorded: await end(session, phase === 'expired' ? 'expired' : 'aborted', meta) };
  });

  /**
   * One pass of the upload sweeper: every multipart upload in the store whose session has ended
   * (aborted, expired, completed) or never existed (a crash between the two, after a grace) is
   * removed; an expired session is recorded as such and its room given back.
   */
  const sweep = async (): Promise<{ examined: number; removed: number }> => {
    let examined = 0;
    let removed = 0;
    const now = ctx.clock();
    for await (const entry of blobs.listMultipart()) {
      const uploadId = uploadIdOfKey(entry.key);
      if (uploadId === null) continue;
      examined++;
      const state = await load(uploadId);
      if (state.status === 'none' || state.session.storeUploadId !== entry.uploadId) {
        if (now.getTime() - entry.initiated.getTime() < STRAY_GRACE_MS) continue;
        await blobs.abortMultipart(entry.key, entry.uploadId);
        removed++;
        continue;
      }
      const { phase } = await phaseNow(state);
      if (phase === 'pending') continue;
      if (phase === 'expired' && state.status === 'open') await end(state.session, 'expired', { requestId: `upload-sweeper-${randomUUID()}` });
      else await blobs.abortMultipart(entry.key, entry.uploadId);
      removed++;
      logger.info({ uploadId, phase }, 'parts of an ended upload removed');
    }
    return { examined, removed };
  };

  /** The user a session belongs to (what its part PUTs count against in the uploads-in-flight caps), if it exists. */
  const uploadOwner = async (uploadId: string): Promise<number | undefined> => {
    const state = await load(uploadId);
    return state.status === 'none' ? undefined : state.session.ownerId;
  };

  return { startUpload: start, uploadStatus: status, putPart, uploadOwner, completeUpload: complete, abortUpload: abort, sweepUploads: sweep };
};

export type ResumableUploads = ReturnType<typeof makeResumableUploads>;
