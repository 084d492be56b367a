import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  partitionKeyOf, conflict, DocshareError, forbidden, notFound, positiveId, unauthorized, M, streamIds, type CategoryCreated, type ExtractionReport, type FileChanges,
} from '@docshare/contracts';
import { VersionConflict, type EventStore } from '@docshare/event-store';
import { RangeNotSatisfiable, type BlobStore, type BlobStream, type ByteRange } from '@docshare/blob-store';
import type { ClaimStore } from '@docshare/claim-store';
import { hashPassword, verifyDecoy, verifyPassword, type Tokens, type UrlSigner } from '@docshare/auth';
import type { Logger } from '@docshare/http';
import type { makeFilesQueries, Page } from '@docshare/files-projector';
import { makeCommandHandler, type CommandMeta, type Decider, type Handled } from './command-handler.ts';
import {
  decideFile, evolveFile, initialFileState, purchaseOf, saleById, saleTo, type FileCommand, type FileEventBody, type FileFacts, type FileState,
} from './domain/file.ts';
import { decideUser, evolveUser, initialUserState, type UserCommand, type UserEventBody, type UserState } from './domain/user.ts';
import {
  decideCategory, evolveCategory, initialCategoryState, type CategoryCommand, type CategoryEventBody, type CategoryState,
} from './domain/category.ts';
import type { Registration, UploadMetadata } from './validation.ts';
import type { FileSink, ReceivedFile } from './upload-form.ts';
import { makeStorageQuota, resolvedBy, type StorageReservation } from './storage-quota.ts';
import { changeKey, makeMemoryStorageLedger, type StorageLedger } from '@docshare/storage-ledger';
import { fileStateFrom } from './blob-sweeper.ts';

/**
 * A signed content link opened: the bytes to stream, the blob store's own URL to redirect to, or
 * neither (`rangeFor` answered `headers`: a 304, a HEAD) when only the file's facts are needed.
 */
export type OpenedContent =
  | { file: FileFacts; blob: BlobStream; redirect?: never }
  | { file: FileFacts; redirect: string; blob?: never }
  | { file: FileFacts; blob?: never; redirect?: never };

/**
 * Cache-Control of a redirect to the blob store and of the store's answer: never kept (a presigned
 * URL is new each time). Bytes served by docs-command itself: http-caching.ts.
 */
export const CONTENT_CACHE_CONTROL = 'private, no-store';

/** Content-Disposition of a file's bytes: a download under its original name (ASCII fallback, then UTF-8). */
export const contentDisposition = (fileName: string): string => {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName)}`;
};

const fileDecider: Decider<FileCommand, FileState, FileEventBody> = {
  initialState: initialFileState, evolve: evolveFile, decide: decideFile,
};
const userDecider: Decider<UserCommand, UserState, UserEventBody> = {
  initialState: initialUserState, evolve: evolveUser, decide: decideUser,
};
const categoryDecider: Decider<CategoryCommand, CategoryState, CategoryEventBody> = {
  initialState: initialCategoryState, evolve: evolveCategory, decide: decideCategory,
};

type FilesQueries = ReturnType<typeof makeFilesQueries>;

/** What the command side keeps about an account, outside the event log (never in an event). */
interface Account { userId: number; name: string; passwordHash: string }
/** Where an upload's bytes were stored, before the upload is recorded: the blob is named after the file id. */
export interface StoredUpload { fileId: number; blobKey: string; size: number }
/** An upload's file as received: stored, with the name and type the client gave. */
export type ReceivedUpload = ReceivedFile<StoredUpload>;

/** The last event an append recorded: where it is in the store and in its stream (afterCommit). */
export interface Committed { position: number; subject: string; version: number }

/**
 * What a use case recorded, returned with its answer: the position of its newest event (the
 * consistency token the answer carries) and the users whose read models its events change (for
 * the gateway); null when it recorded nothing.
 */
export interface Recorded { position: number; users: number[] }

/** What several appends recorded, as one (the newest position, every user). */
export const recordedBy = (...results: (Handled<unknown> | null | undefined)[]): Recorded | null => {
  let position = 0;
  const users = new Set<number>();
  for (const result of results) {
    if (!result || result.position === null) continue;
    position = Math.max(position, result.position);
    for (const key of result.events.map(partitionKeyOf)) if (key.startsWith('user-')) users.add(Number(key.slice(5)));
  }
  return position > 0 ? { position, users: [...users] } : null;
};

/** Bytes a recorded command added to the blob store (an upload) or gave back (a deletion). */
export interface StoredChange { kind: 'upload' | 'delete'; bytes: number }

interface CategoryClaim { categoryId: number; name: string; description: string; tags: string[]; createdBy: number }

export interface DocsCommandsDeps {
  events: EventStore;
  claims: ClaimStore;
  blobs: BlobStore;
  tokens: Tokens;
  signer: UrlSigner;
  logger: Logger;
  publicBaseUrl: string;
  downloadUrlTtlSeconds: number;
  /** Told after each recorded append (wakes the outbox relay); never waited on by the answer. */
  afterCommit?: (committed: Committed) => void;
  /** Told after each recorded upload and deletion, with the file's size (metrics: upload sizes, bytes stored). */
  onStored?: (change: StoredChange) => void;
  now?: () => Date;
  passwordCost?: number;
  /** Bytes each user may store (STORAGE_QUOTA_BYTES); 0 or absent means unlimited. */
  storageQuotaBytes?: number;
  /** Bytes each user's files take (libs/storage-ledger), moved by uploads and deletions; default: in memory. */
  ledger?: StorageLedger;
  /** The files a user bought, a page of them, from the files read model (read-only); absent: api-purchases answers 503. */
  purchasesOf?: FilesQueries['purchasesOf'];
}

/** The write side's use cases: each validates against the entity's folded state and records events. */
export const makeDocsCommands = (deps: DocsCommandsDeps) => {
  const { events, claims, blobs, tokens, signer, logger } = deps;
  const clock = deps.now ?? (() => new Date());
  const handler = makeCommandHandler(events);
  /** A registered user stays registered: a cached fold that says so needs no read (command-handler load). */
  const registered = (state: UserState): boolean => state.status === 'registered';
  const ledger = deps.ledger ?? makeMemoryStorageLedger({ resolve: resolvedBy(fileStateFrom(events)) });
  const quota = makeStorageQuota({ quotaBytes: deps.storageQuotaBytes ?? 0, ledger });
  /** After an append: afterCommit is told (the outbox relay wakes); the result goes on to the use case. */
  const committed = <R extends Handled<unknown> | null>(result: R): R => {
    const last = result?.events.at(-1);
    if (result && result.position !== null && last) deps.afterCommit?.({ position: result.position, subject: last.subject, version: last.streamversion });
    return result;
  };

  /** Makes sure the user's stream exists (repairs a registration cut off between its two writes). */
  const ensureUser = async (account: Account, email: string, meta: CommandMeta): Promise<Handled<unknown> | null> => {
    const { state } = await handler.load(userDecider, streamIds.user(account.userId), registered);
    if (state.status === 'registered') return null;
    try {
      const now = clock().toISOString();
      return committed(await handler.handle(userDecider, streamIds.user(account.userId), {
        type: 'RegisterUser', user: { userId: account.userId, name: account.name, email, registeredAt: now },
      }, now, meta));
    } catch (error) {
      // Registered meanwhile (the only conflict the user decider refuses with).
      if (error instanceof DocshareError && error.kind === 'conflict') return null;
      throw error;
    }
  };

  const register = async (input: Registration, meta: CommandMeta) => {
    if (await claims.get<Account>('account', input.email)) throw conflict(M.emailTaken);
    const userId = await events.nextId('user');
    const account: Account = { userId, name: input.name, passwordHash: await hashPassword(input.password, deps.passwordCost) };
    const claimed = await claims.claim('account', input.email, account);
    if (!claimed.created) throw conflict(M.emailTaken);
    const recorded = recordedBy(await ensureUser(account, input.email, meta));
    return { userId, token: tokens.issue(userId), recorded };
  };

  const login = async (email: string, password: string, meta: CommandMeta) => {
    const account = await claims.get<Account>('account', email);
    if (!account) {
      await verifyDecoy(password);
      throw unauthorized(M.badCredentials);
    }
    if (!(await verifyPassword(password, account.passwordHash))) throw unauthorized(M.badCredentials);
    const recorded = recordedBy(await ensureUser(account, email, meta));
    return { userId: account.userId, token: tokens.issue(account.userId), recorded };
  };

  const categoryById = async (categoryId: number): Promise<CategoryCreated | null> => {
    const { state } = await handler.load(categoryDecider, streamIds.category(categoryId), (s) => s.status === 'created');
    return state.status === 'created' ? state.category : null;
  };

  /**
   * Category-name claims seen by this process: a claim is never changed or removed (first claim
   * wins, for good), so an upload naming a known category needs no lookup. Bounded, oldest out.
   */
  const categoryClaims = new Map<string, CategoryClaim>();
  const rememberCategoryClaim = (key: string, claim: CategoryClaim): void => {
    categoryClaims.delete(key);
    categoryClaims.set(key, claim);
    if (categoryClaims.size > 10_000) categoryClaims.delete(categoryClaims.keys().next().value!);
  };

  /**
   * The category named (ignoring case), created on first use (`created`: what that recorded); the
   * name claim makes creation race-free.
   */
  const categoryNamed = async (
    choice: { name: string; description: string; tags: string[] }, actorId: number, meta: CommandMeta,
  ): Promise<{ category: CategoryCreated; created?: Handled<unknown> }> => {
    const key = choice.name.toLowerCase();
    let claim = categoryClaims.get(key) ?? await claims.get<CategoryClaim>('category-name', key);
    if (!claim) {
      const categoryId = await events.nextId('category');
      claim = (await claims.claim<CategoryClaim>('category-name', key, {
        categoryId, name: choice.name, description: choice.description, tags: choice.tags, createdBy: actorId,
      })).value;
    }
    rememberCategoryClaim(key, claim);
    const existing = await categoryById(claim.categoryId);
    if (existing) return { category: existing };
    const now = clock().toISOString();
    const category: CategoryCreated = { ...claim, createdAt: now };
    try {
      return { category, created: committed(await handler.handle(categoryDecider, streamIds.category(claim.categoryId), { type: 'CreateCategory', category }, now, meta)) };
    } catch (error) {
      const raced = await categoryById(claim.categoryId);
      if (raced) return { category: raced };
      throw error;
    }
  };

  /**
   * Reserves room in the user's storage quota for an upload whose body declares `declared` bytes,
   * before the body is read; refuses (`Storage quota exceeded`) a user already at or over it. The
   * caller releases the reservation once `upload` has answered, whatever the outcome (a hold
   * the upload turned into its pending file is the ledger's by then: the release does nothing).
   */
  const reserveStorage = (actorId: number, declared: number | undefined): Promise<StorageReservation> =>
    quota.reserve(actorId, declared);

  /**
   * Where an upload's file part goes while the form is read: straight into the blob store, under
   * a key made before the first byte arrives (`f<fileId>-<uuid>`: the file id is taken now, so a
   * blob a crash leaves behind names the file the sweeper checks). The size is known only at the
   * end; `maxBytes` (the upload limit, or the user's free space) cuts the body off past it.
   */
  const uploadSink: FileSink<StoredUpload> = {
    async store(body: Readable, contentType: string, maxBytes: number): Promise<StoredUpload> {
      let fileId: number;
      try {
        fileId = await events.nextId('file');
      } catch (error) {
        body.destroy();
        throw error;
      }
      const blobKey = `f${fileId}-${randomUUID()}`;
      const size = await blobs.put(blobKey, body, undefined, contentType, { maxBytes });
      return { fileId, blobKey, size };
    },
    async discard({ fileId, blobKey }: StoredUpload): Promise<void> {
      // Known not to be recorded: a blob that cannot be removed now is garbage the sweeper collects.
      await blobs.remove(blobKey).catch((err: unknown) => logger.warn({ err, fileId, blobKey }, 'could not remove the blob of an upload not recorded'));
    },
  };

  /**
   * Records an upload whose bytes `uploadSink` stored; their real size must fit the quota first
   * (`storage`: the route's reservation, made before the body was read; else one made now). From
   * the call on, the blob is this function's: it removes it when the upload is known not to be
   * recorded. The ledger counts the file as pending from before its event is appended, and as
   * settled after (storage-quota.ts).
   */
  const upload = async (actorId: number, file: ReceivedUpload, metadata: UploadMetadata, meta: CommandMeta, storage?: StorageReservation) => {
    const { fileId, blobKey } = file;
    let owner: Extract<UserState, { status: 'registered' }>;
    let category: CategoryCreated | null;
    let created: Handled<unknown> | undefined;
    try {
      const { state } = await handler.load(userDecider, streamIds.user(actorId), registered);
      if (state.status !== 'registered') throw unauthorized(M.invalidToken);
      owner = state;
      storage ??= await quota.reserve(actorId, file.size);
      await storage.confirm(file.size);
      if (metadata.category.kind === 'existing') category = await categoryById(metadata.category.categoryId);
      else ({ category, created } = await categoryNamed(metadata.category, actorId, meta));
      if (!category) throw notFound(M.categoryNotFound);
      await storage.pend(fileId, file.size);
    } catch (error) {
      await storage?.release();
      await uploadSink.discard(file);
      throw error;
    }
    const pending = { kind: 'upload', fileId } as const;

    const now = clock().toISOString();
    let recorded: Handled<FileState>;
    try {
      recorded = await onFile(fileId, {
        type: 'UploadFile',
        file: {
          fileId, ownerId: actorId, ownerName: owner.name, title: metadata.title, description: metadata.description,
          tags: metadata.tags, categoryId: category.categoryId, categoryName: category.name, license: metadata.license,
          videoUrl: metadata.videoUrl, originalFileName: file.fileName, contentType: file.contentType, size: file.size,
          blobKey, uploadedAt: now,
        },
      }, meta);
    } catch (error) {
      // Only a refused append is known not to have recorded the file; after any other failure the
      // event may be stored, and its bytes must stay (an unreferenced blob is garbage, not loss),
      // and so does its pending entry in the ledger (repaired from the file's stream later).
      if (error instanceof DocshareError || error instanceof VersionConflict) {
        await ledger.cancel(actorId, changeKey(pending));
        await uploadSink.discard(file);
      }
      throw error;
    }
    await ledger.settle(actorId, pending);
    if (recorded.position !== null) deps.onStored?.({ kind: 'upload', bytes: file.size });
    return { fileId, categoryId: category.categoryId, categoryName: category.name, recorded: recordedBy(created, recorded) };
  };

  const onFile = async (fileId: number, command: FileCommand, meta: CommandMeta): Promise<Handled<FileState>> => {
    const now = command.type === 'UploadFile' ? command.file.uploadedAt : command.now;
    return committed(await handler.handle(fileDecider, streamIds.file(fileId), command, now, meta));
  };

  /**
   * Deletes a file. Its owner's ledger gives the bytes back: pending from before the event is
   * appended (they still count), settled once the file's stream says it is deleted, whoever
   * deleted it; a deletion refused is cancelled, one whose outcome is unknown left to the repair.
   */
  const remove = async (actorId: number, fileId: number, meta: CommandMeta) => {
    const { state: before } = await handler.load(fileDecider, streamIds.file(fileId));
    const pending = before.status === 'active' && before.file.ownerId === actorId ? { kind: 'delete', fileId, bytes: before.file.size } as const : null;
    if (pending) await quota.pendDeletion(actorId, fileId, pending.bytes);
    let result: Handled<FileState>;
    try {
      result = await onFile(fileId, { type: 'DeleteFile', fileId, actorId, now: clock().toISOString() }, meta);
    } catch (error) {
      if (pending && error instanceof DocshareError) {
        const { state } = await handler.load(fileDecider, streamIds.file(fileId));
        await (state.status === 'deleted' ? ledger.settle(actorId, pending) : ledger.cancel(actorId, changeKey(pending)));
      }
      throw error;
    }
    const file = result.state.status === 'deleted' ? result.state.file : null;
    if (pending && file) await ledger.settle(actorId, pending);
    if (file && result.position !== null) deps.onStored?.({ kind: 'delete', bytes: file.size });
    if (file) {
      // The deletion is recorded; a blob left behind by a failure here is garbage, not data loss.
      await blobs.remove(file.blobKey).catch((err: unknown) => logger.warn({ err, fileId }, 'blob removal failed'));
    }
    return { recorded: recordedBy(result) };
  };

  const contentPath = (fileId: number): string => `/files/${fileId}/content`;
  /**
   * What a buyer's link signs: the content path and the sale. A link signed for one sale opens
   * nothing else, and the owner's kind of link (the path alone) cannot be turned into one.
   */
  const saleResource = (fileId: number, saleId: number): string => `${contentPath(fileId)}?sale=${saleId}`;

  /** A signed, expiring link to the bytes a buyer bought (decisions §5's download_url, for sale `saleId`). */
  const purchaseUrl = (fileId: number, saleId: number): string => {
    const expiresAt = Math.floor(clock().getTime() / 1000) + deps.downloadUrlTtlSeconds;
    return `${deps.publicBaseUrl}${saleResource(fileId, saleId)}&${signer.sign(saleResource(fileId, saleId), expiresAt)}`;
  };

  const authorizeDownload = async (actorId: number, fileId: number, meta: CommandMeta) => {
    const now = clock();
    const result = await onFile(fileId, { type: 'AuthorizeDownload', fileId, actorId, now: now.toISOString() }, meta);
    // The decider refused anything but an active file, so the state is active here.
    if (result.state.status !== 'active') throw notFound(M.fileNotFound);
    const expiresAt = Math.floor(now.getTime() / 1000) + deps.downloadUrlTtlSeconds;
    const path = contentPath(fileId);
    return {
      originalFileName: result.state.file.originalFileName,
      downloadUrl: `${deps.publicBaseUrl}${path}?${signer.sign(path, expiresAt)}`,
      recorded: recordedBy(result),
    };
  };

  // Redirects need a store clients can reach: one offers presignGet only then (MinIO with BLOB_PUBLIC_URL).
  const presignGet = blobs.presignGet?.bind(blobs);

  /**
   * The bytes behind a signed link; null when the link is bad or expired (checked before anything
   * about the file is looked at). With a blob store clients can reach, a `redirect` instead: a URL
   * of the store itself, signed for what remains of the link's validity, that serves the file
   * under its name (Range included) without passing through here. Otherwise the `blob`:
   * `rangeFor` picks the range from the file's size (and its facts: the validators of a
   * conditional request); a range past the end throws RangeNotSatisfiable; `headers` opens no
   * blob (a 304, a HEAD).
   */
  const openContent = async (
    fileId: number, expires: unknown, signature: unknown,
    rangeFor: (size: number, file: FileFacts) => ByteRange | 'unsatisfiable' | 'headers' | undefined,
    sale?: unknown,
  ): Promise<OpenedContent | null> => {
    const nowSeconds = Math.floor(clock().getTime() / 1000);
    // A buyer's link names its sale (`sale=`), signed with it; any other link the path alone.
    const saleId = sale === undefined ? undefined : positiveId(sale);
    if (saleId === null) return null;
    const resource = saleId === undefined ? contentPath(fileId) : saleResource(fileId, saleId);
    if (!signer.verify(resource, expires, signature, nowSeconds)) return null;
    const { state } = await handler.load(fileDecider, streamIds.file(fileId));
    // A deleted file is gone for everyone, its buyers included.
    if (state.status !== 'active') throw notFound(M.fileNotFound);
    // A link outlives the decision that signed it: the download rule holds when the bytes are
    // fetched. A buyer's link is exempt from the sale (that is what was bought, whatever the price
    // is now), not from the owner disabling the file.
    if (saleId !== undefined && !saleById(state.file, saleId)) return null;
    if ((saleId === undefined && state.file.forSale) || !state.file.enabled) throw forbidden(M.notDownloadable);
    if (presignGet) {
      const redirect = await presignGet(state.file.blobKey, {
        // The store's URL expires with the link it stands for (verified: expires ≥ now).
        expiresInSeconds: Math.max(1, Math.floor(Number(expires)) - nowSeconds),
        contentDisposition: contentDisposition(state.file.originalFileName),
        cacheControl: CONTENT_CACHE_CONTROL,
      });
      return { file: state.file, redirect };
    }
    const range = rangeFor(state.file.size, state.file);
    if (range === 'unsatisfiable') throw new RangeNotSatisfiable(state.file.size);
    if (range === 'headers') return { file: state.file };
    const blob = await blobs.get(state.file.blobKey, range);
    if (!blob) throw notFound(M.fileNotFound);
    return { file: state.file, blob };
  };

  const comment = async (actorId: number, fileId: number, text: string, meta: CommandMeta) => {
    const { state: author } = await handler.load(userDecider, streamIds.user(actorId), registered);
    if (author.status !== 'registered') throw unauthorized(M.invalidToken);
    const commentId = await events.nextId('comment');
    const result = await onFile(fileId, { type: 'PostComment', fileId, actorId, commentId, comment: text, now: clock().toISOString() }, meta);
    return { commentId, recorded: recordedBy(result) };
  };

  const update = async (actorId: number, fileId: number, changes: FileChanges, meta: CommandMeta) => {
    const result = await onFile(fileId, { type: 'UpdateFile', fileId, actorId, changes, now: clock().toISOString() }, meta);
    return { recorded: recordedBy(result) };
  };

  /**
   * Records a purchase, or finds the buyer's earlier one (a buyer buys a file once): `created`
   * tells which. Either way the answer carries the sale and a fresh link to the bytes.
   */
  const purchase = async (actorId: number, fileId: number, meta: CommandMeta) => {
    const answer = (state: FileState, result?: Handled<FileState>) => {
      const sale = state.status === 'active' ? saleTo(state.file, actorId) : undefined;
      // The decider recorded or found the sale on an active file; anything else is a file gone meanwhile.
      if (!sale) throw notFound(M.fileNotFound);
      const recorded = recordedBy(result);
      return { saleId: sale.saleId, created: recorded !== null, purchasedAt: sale.purchasedAt, downloadUrl: purchaseUrl(fileId, sale.saleId), recorded };
    };
    const { state } = await handler.load(fileDecider, streamIds.file(fileId));
    // Asked before a sale id is taken, so refusals and repeats take none; the decider decides
    // again on the stream, at its version, which is what settles two purchases at once.
    if (purchaseOf(state, actorId) === 'repeat') return answer(state);
    const saleId = await events.nextId('sale');
    const result = await onFile(fileId, { type: 'PurchaseFile', fileId, actorId, saleId, now: clock().toISOString() }, meta);
    return answer(result.state, result);
  };

  /** The files `buyerId` bought (enabled and not deleted), newest purchase first, each with a fresh signed link. */
  const purchases = async (buyerId: number, page: Page) => {
    if (!deps.purchasesOf) throw new DocshareError('unavailable', M.unavailable);
    const { items, total } = await deps.purchasesOf(buyerId, page);
    return {
      data: items.map((p) => ({
        id: p.fileId, title: p.title, sale_id: p.saleId, purchased_at: p.purchasedAt, download_url: purchaseUrl(p.fileId, p.saleId),
      })),
      total, page: page.page, per_page: page.perPage,
    };
  };

  /** The file a public page would show, without counting a view (HEAD requests). */
  const peek = async (fileId: number): Promise<FileFacts> => {
    const { state } = await handler.load(fileDecider, streamIds.file(fileId));
    if (state.status !== 'active' || !state.file.enabled) throw notFound(M.fileNotFound);
    return state.file;
  };

  /** Counts a view of the public page and returns the file shown. */
  const view = async (fileId: number, meta: CommandMeta): Promise<{ file: FileFacts; recorded: Recorded | null }> => {
    const result = await onFile(fileId, { type: 'ViewFile', fileId, now: clock().toISOString() }, meta);
    if (result.state.status !== 'active') throw notFound(M.fileNotFound);
    return { file: result.state.file, recorded: recordedBy(result) };
  };

  /**
   * Where the text extractor stands on a file: `pending` (nothing recorded yet), `done` (text or
   * a failure recorded), `gone` (deleted, or never uploaded): only `pending` is worth extracting.
   */
  const extractionStatus = async (fileId: number): Promise<'pending' | 'done' | 'gone'> => {
    const { state } = await handler.load(fileDecider, streamIds.file(fileId));
    if (state.status !== 'active') return 'gone';
    return state.file.extraction ? 'done' : 'pending';
  };

  /** Records what the text extractor found in the file's bytes `blobKey`; null when nothing was recorded. */
  const recordExtraction = async (fileId: number, blobKey: string, report: ExtractionReport, meta: CommandMeta): Promise<Recorded | null> =>
    recordedBy(await onFile(fileId, { type: 'RecordExtraction', fileId, blobKey, report, now: clock().toISOString() }, meta));

  /** A fresh token for a registered user (an idempotent replay of a registration answers with one). */
  const issueToken = (userId: number): string => tokens.issue(userId);

  return {
    register, login, issueToken, reserveStorage, uploadSink, upload, remove, authorizeDownload, openContent, comment, update, purchase, purchaseUrl, purchases, view, peek,
    extractionStatus, recordExtraction, ledger,
  };
};

export type DocsCommands = ReturnType<typeof makeDocsCommands>;
