import { DocshareError, M, notFound, type FileChanges } from '@docshare/contracts';
import type { BlobStore } from '@docshare/blob-store';
import type { Logger } from '@docshare/http';
import { changeKey, type StorageLedger } from '@docshare/storage-ledger';
import type { CommandMeta, Handled } from './command-handler.ts';
import type { FileFacts, FileState } from './domain/file.ts';
import type { CommandContext } from './context.ts';
import type { makeStorageQuota } from './storage-quota.ts';
import { recordedBy, type Recorded, type StoredChange } from './recorded.ts';

export interface FileCommandsDeps {
  ctx: CommandContext;
  blobs: BlobStore;
  logger: Logger;
  quota: ReturnType<typeof makeStorageQuota>;
  ledger: StorageLedger;
  /** Told after each recorded deletion, with the file's size (metrics). */
  onStored?: (change: StoredChange) => void;
}

/** A recorded file: changed, deleted, commented on, its public page viewed. */
export const makeFileCommands = ({ ctx, blobs, logger, quota, ledger, onStored }: FileCommandsDeps) => {
  const update = async (actorId: number, fileId: number, changes: FileChanges, meta: CommandMeta) => {
    const result = await ctx.onFile(fileId, { type: 'UpdateFile', fileId, actorId, changes, now: ctx.clock().toISOString() }, meta);
    return { recorded: recordedBy(result) };
  };

  /**
   * Deletes a file. Its owner's ledger gives the bytes back: pending from before the event is
   * appended (they still count), settled once the file's stream says it is deleted, whoever
   * deleted it; a deletion refused is cancelled, one whose outcome is unknown left to the repair.
   */
  const remove = async (actorId: number, fileId: number, meta: CommandMeta) => {
    const before = await ctx.loadFile(fileId);
    const pending = before.status === 'active' && before.file.ownerId === actorId ? { kind: 'delete', fileId, bytes: before.file.size } as const : null;
    if (pending) await quota.pendDeletion(actorId, fileId, pending.bytes);
    let result: Handled<FileState>;
    try {
      result = await ctx.onFile(fileId, { type: 'DeleteFile', fileId, actorId, now: ctx.clock().toISOString() }, meta);
    } catch (error) {
      if (pending && error instanceof DocshareError) {
        const state = await ctx.loadFile(fileId);
        await (state.status === 'deleted' ? ledger.settle(actorId, pending) : ledger.cancel(actorId, changeKey(pending)));
      }
      throw error;
    }
    const file = result.state.status === 'deleted' ? result.state.file : null;
    if (pending && file) await ledger.settle(actorId, pending);
    if (file && result.position !== null) onStored?.({ kind: 'delete', bytes: file.size });
    if (file) {
      // The deletion is recorded; a blob left behind by a failure here is garbage, not data loss.
      await blobs.remove(file.blobKey).catch((err: unknown) => logger.warn({ err, fileId }, 'blob removal failed'));
    }
    return { recorded: recordedBy(result) };
  };

  const comment = async (actorId: number, fileId: number, text: string, meta: CommandMeta) => {
    await ctx.author(actorId);
    const commentId = await ctx.events.nextId('comment');
    const result = await ctx.onFile(fileId, { type: 'PostComment', fileId, actorId, commentId, comment: text, now: ctx.clock().toISOString() }, meta);
    return { commentId, recorded: recordedBy(result) };
  };

  /** The file a public page would show, without counting a view (HEAD requests). */
  const peek = async (fileId: number): Promise<FileFacts> => {
    const state = await ctx.loadFile(fileId);
    if (state.status !== 'active' || !state.file.enabled) throw notFound(M.fileNotFound);
    return state.file;
  };

  /** Counts a view of the public page and returns the file shown. */
  const view = async (fileId: number, meta: CommandMeta): Promise<{ file: FileFacts; recorded: Recorded | null }> => {
    const result = await ctx.onFile(fileId, { type: 'ViewFile', fileId, now: ctx.clock().toISOString() }, meta);
    if (result.state.status !== 'active') throw notFound(M.fileNotFound);
    return { file: result.state.file, recorded: recordedBy(result) };
  };

  return { update, remove, comment, peek, view };
};
