import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DocshareError, M, notFound, type CategoryCreated, type License } from '@docshare/contracts';
import { VersionConflict } from '@docshare/event-store';
import type { BlobStore } from '@docshare/blob-store';
import type { Logger } from '@docshare/http';
import { changeKey, type StorageLedger } from '@docshare/storage-ledger';
import type { CommandMeta, Handled } from './command-handler.ts';
import type { FileState } from './domain/file.ts';
import type { CommandContext, RegisteredUser } from './context.ts';
import type { Categories } from './categories.ts';
import type { FileSink, ReceivedFile } from './file-sink.ts';
import type { makeStorageQuota, StorageReservation } from './storage-quota.ts';
import { recordedBy, type StoredChange } from './recorded.ts';

/** The category an upload names: an existing one by id, or one by name, created on first use. */
export type CategoryChoice =
  | { kind: 'existing'; categoryId: number }
  | { kind: 'new'; name: string; description: string; tags: string[] };

/** What an upload says about its file (parsed by http/validation.ts). */
export interface UploadMetadata {
  title: string;
  description: string;
  tags: string[];
  license: License;
  category: CategoryChoice;
  videoUrl: string | null;
}

/** Where an upload's bytes were stored, before the upload is recorded: the blob is named after the file id. */
export interface StoredUpload { fileId: number; blobKey: string; size: number }
/** An upload's file as received: stored, with the name and type the client gave. */
export type ReceivedUpload = ReceivedFile<StoredUpload>;

export interface UploadCommandsDeps {
  ctx: CommandContext;
  blobs: BlobStore;
  logger: Logger;
  quota: ReturnType<typeof makeStorageQuota>;
  ledger: StorageLedger;
  categories: Categories;
  /** Told after each recorded upload, with the file's size (metrics). */
  onStored?: (change: StoredChange) => void;
}

/** Uploads: room reserved in the quota, the bytes stored as they arrive, then the file recorded. */
export const makeUploadCommands = ({ ctx, blobs, logger, quota, ledger, categories, onStored }: UploadCommandsDeps) => {
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
        fileId = await ctx.events.nextId('file');
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
    const { fileId } = file;
    let owner: RegisteredUser;
    let category: CategoryCreated | null;
    let created: Handled<unknown> | undefined;
    try {
      owner = await ctx.author(actorId);
      storage ??= await quota.reserve(actorId, file.size);
      await storage.confirm(file.size);
      if (metadata.category.kind === 'existing') category = await categories.categoryById(metadata.category.categoryId);
      else ({ category, created } = await categories.categoryNamed(metadata.category, actorId, meta));
      if (!category) throw notFound(M.categoryNotFound);
      await storage.pend(fileId, file.size);
    } catch (error) {
      await storage?.release();
      await uploadSink.discard(file);
      throw error;
    }
    return record(actorId, owner, file, metadata, category, created, meta);
  };

  /**
   * Records a stored file already counted as the user's pending upload (`upload:<fileId>` in the
   * ledger) whose category is known: appends `docs.file.uploaded.v1`, then settles the ledger. The
   * blob is removed only when the append is known refused; after any other failure the event may
   * be stored, so its bytes and its pending entry stay (repaired from the file's stream later).
   * Shared by the form upload and a resumable upload's completion (resumable.ts).
   */
  const record = async (
    actorId: number, owner: RegisteredUser, file: ReceivedUpload, metadata: UploadMetadata, category: CategoryCreated,
    created: Handled<unknown> | undefined, meta: CommandMeta,
  ) => {
    const { fileId, blobKey } = file;
    const pending = { kind: 'upload', fileId } as const;
    const now = ctx.clock().toISOString();
    let recorded: Handled<FileState>;
    try {
      recorded = await ctx.onFile(fileId, {
        type: 'UploadFile',
        file: {
          fileId, ownerId: actorId, ownerName: owner.name, title: metadata.title, description: metadata.description,
          tags: metadata.tags, categoryId: category.categoryId, categoryName: category.name, license: metadata.license,
          videoUrl: metadata.videoUrl, originalFileName: file.fileName, contentType: file.contentType, size: file.size,
          blobKey, uploadedAt: now,
        },
      }, meta);
    } catch (error) {
      if (error instanceof DocshareError || error instanceof VersionConflict) {
        await ledger.cancel(actorId, changeKey(pending));
        await uploadSink.discard(file);
      }
      throw error;
    }
    await ledger.settle(actorId, pending);
    if (recorded.position !== null) onStored?.({ kind: 'upload', bytes: file.size });
    return { fileId, categoryId: category.categoryId, categoryName: category.name, recorded: recordedBy(created, recorded) };
  };

  return { reserveStorage, uploadSink, upload, record };
};
