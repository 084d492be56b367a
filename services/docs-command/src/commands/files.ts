import { DocshareError, M, notFound, type FileChanges } from '@docshare/contracts';
import type { ViewerKeys, ViewerRequest } from '@docshare/analytics';
import type { BlobStore } from '@docshare/blob-store';
import type { Logger } from '@docshare/http';
import { changeKey, type StorageLedger } from '@docshare/storage-ledger';
import type { CommandMeta, Handled } from './command-handler.ts';
import { decideView, type FileFacts, type FileState } from './domain/file.ts';
import type { CommandContext } from './context.ts';
import type { makeStorageQuota } from './storage-quota.ts';
import { recordedBy, type Recorded, type StoredChange } from './recorded.ts';

export interface FileCommandsDeps {
  ctx: CommandContext;
  blobs: BlobStore;
  logger: Logger;
  quota: ReturnType<typeof makeStorageQuota>;
  ledger: StorageLedger;
  /** Who is viewing (libs/analytics: the user, or an anonymous key of the day). */
  viewerKeys: ViewerKeys;
  /** Told after each recorded deletion, with the file's size (metrics). */
  onStored?: (change: StoredChange) => void;
}

/** A recorded file: changed, deleted, commented on, its public page viewed. */
export const makeFileCommands = ({ ctx, blobs, logger, quota, ledger, viewerKeys, onStored }: FileCommandsDeps) => {
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

  /**
   * Counts a view of the public page by `viewer` and returns the file shown. The file's state is
   * its cached fold brought up to date (concurrent views of one file share one read of its
   * stream), and the view is recorded outside the stream: a popular file queues nothing.
   */
  const view = async (fileId: number, viewer: ViewerRequest, meta: CommandMeta): Promise<{ file: FileFacts; recorded: Recorded }> => {
    const now = ctx.clock();
    const state = await ctx.loadFile(fileId);
    const { file, event } = decideView(state, await viewerKeys.keyOf(viewer), now.toISOString());
    return { file, recorded: await ctx.recordActivity(event, meta) };
  };

  return { update, remove, comment, peek, view };
};
