import { DocshareError, sleep, streamIds, type CloudEvent, type StoredEvent, type UserErasureRequested, type UserExportRequested } from '@docshare/contracts';
import type { Logger } from '@docshare/http';
import type { PersonalData } from '@docshare/personal-data';
import type { CommandMeta } from './command-handler.ts';
import { userDecider, type CommandContext } from './context.ts';
import type { Exports } from './exports.ts';
import type { makeUserCommands } from './users.ts';

/** What the erasure reads from the files read model (wired to the files projector's store and its consistency gate). */
export interface ErasureReadModel {
  /** Ids of the owner's files not deleted (enabled or not), ascending, after `afterFileId`, at most `limit`. */
  fileIdsOf(ownerId: number, afterFileId: number, limit: number): Promise<number[]>;
  /** How many of the owner's files the read model holds as deleted. */
  countDeletedFilesOf(ownerId: number): Promise<number>;
  /** Ids of the owner's deleted files, ascending, after `afterFileId`, at most `limit`. */
  deletedFileIdsOf(ownerId: number, afterFileId: number, limit: number): Promise<number[]>;
  /** How many comments the user wrote (on anyone's files). */
  countCommentsBy(authorId: number): Promise<number>;
  /** Resolves once the files read model has applied the event log up to `position`. */
  applied(position: number): Promise<void>;
}

export interface AccountsDeps {
  ctx: CommandContext;
  users: Pick<ReturnType<typeof makeUserCommands>, 'releaseAccount'>;
  removeFile: (actorId: number, fileId: number, meta: CommandMeta) => Promise<unknown>;
  webhooks?: {
    list(ownerId: number): Promise<Array<{ id: number }>>;
    remove(ownerId: number, webhookId: number, meta: CommandMeta): Promise<unknown>;
  };
  readModel: ErasureReadModel;
  /** Where a deleted file's bytes may still be (a deletion cut short after its event, before its blob removal). */
  blobs: { remove(key: string): Promise<void> };
  personalData: PersonalData;
  /** The user's stored idempotent answers (keys `<userId>/…`). */
  idempotency: { removeScope(prefix: string): Promise<number> };
  /** The dispatcher's delivery state of the user's endpoints (their payloads name files). */
  webhookStore?: { removeOwner(ownerId: number): Promise<unknown> };
  exports: Pick<Exports, 'build' | 'remove'>;
  logger: Logger;
  /** Deletions at once (default 8). */
  concurrency?: number;
}

/** The accounts process manager's consumer group (docs-command, both modes). */
export const ACCOUNTS_GROUP = 'docs-command-accounts';

const ignoreGone = (error: unknown): void => {
  if (error instanceof DocshareError && (error.kind === 'not_found' || error.kind === 'forbidden')) return;
  throw error;
};

/**
 * The accounts process manager (issue 24): a consumer of the event log that carries out what a
 * user asked of their account. Every step is idempotent and the batch is acknowledged only once
 * every step is done, so a crash at any point (kill -9 included) resumes where the log says: the
 * request is delivered again and the steps already done cost a check each.
 *
 * An erasure, in order: the user's endpoints (so their deletions notify nobody), every file
 * through the delete path (bytes, quota, read models, index), until the files read model lists
 * none (an upload racing the request is found on the next pass), their exports, stored answers,
 * delivery state and account claim; then the key is destroyed, every process's cache of it has
 * run out, and the files read model has applied everything written before; only then is
 * `docs.user.erased.v1` recorded, whose projection redacts the comments they wrote: a comment
 * projected after it can only have been opened without the key.
 */
export const makeAccountProcess = (deps: AccountsDeps) => {
  const { ctx, readModel, personalData, logger } = deps;
  const concurrency = deps.concurrency ?? 8;
  /** `work` on every id, `concurrency` at a time. */
  const eachOf = async (ids: readonly number[], work: (id: number) => Promise<unknown>): Promise<void> => {
    for (let i = 0; i < ids.length; i += concurrency) await Promise.all(ids.slice(i, i + concurrency).map(work));
  };

  const caughtUp = async (): Promise<void> => readModel.applied(await ctx.events.lastPosition());

  const deleteFiles = async (userId: number, meta: CommandMeta): Promise<void> => {
    for (;;) {
      await caughtUp();
      const ids = await readModel.fileIdsOf(userId, 0, 500);
      if (ids.length === 0) return;
      await eachOf(ids, (fileId) => deps.removeFile(userId, fileId, meta).catch(ignoreGone));
    }
  };

  /**
   * The bytes of every deleted file of the user leave the blob store: a deletion whose process died
   * after its event and before its blob removal (a kill -9 amid the erasure) left them for the
   * hourly sweeper, which an erasure does not wait for. Removing a blob already gone costs nothing.
   */
  const removeLeftBytes = async (userId: number): Promise<void> => {
    for (let after = 0; ;) {
      const ids = await readModel.deletedFileIdsOf(userId, after, 500);
      await eachOf(ids, async (fileId) => {
        const file = await ctx.loadFile(fileId);
        if (file.status === 'deleted' && file.file.ownerId === userId) await deps.blobs.remove(file.file.blobKey);
      });
      if (ids.length < 500) return;
      after = ids.at(-1)!;
    }
  };

  const erase = async (request: UserErasureRequested, cause: CloudEvent): Promise<void> => {
    const { userId, erasureId } = request;
    const meta: CommandMeta = { requestId: cause.id, correlationId: cause.correlationid };
    const state = (await ctx.handler.load(userDecider, streamIds.user(userId))).state;
    if (state.status === 'erased') {
      await personalData.destroy(userId);
      return;
    }
    if (state.status !== 'erasing' || state.erasureId !== erasureId) return;
    const started = performance.now();
    for (const webhook of await deps.webhooks?.list(userId) ?? []) await deps.webhooks?.remove(userId, webhook.id, meta).catch(ignoreGone);
    await deleteFiles(userId, meta);
    await removeLeftBytes(userId);
    for (const { exportId } of state.exports) await deps.exports.remove(userId, exportId);
    await deps.idempotency.removeScope(`${userId}/`);
    await deps.webhookStore?.removeOwner(userId);
    await deps.users.releaseAccount(state.email);
    const [filesDeleted, commentsRedacted] = await Promise.all([readModel.countDeletedFilesOf(userId), readModel.countCommentsBy(userId)]);
    await personalData.destroy(userId);
    // Every other process forgets the key within cacheMs; then everything written before is projected
    // (opened with the key or not), so the redaction the erased event makes finds it all.
    await sleep(personalData.cacheMs);
    await caughtUp();
    const now = ctx.clock().toISOString();
    ctx.committed(await ctx.handler.handle(userDecider, streamIds.user(userId), {
      type: 'CompleteErasure', userId, erasureId, filesDeleted, commentsRedacted, now,
    }, now, meta));
    logger.info({ userId, erasureId, filesDeleted, commentsRedacted, ms: Math.round(performance.now() - started) }, 'account erased');
  };

  const handle = async (records: readonly StoredEvent<CloudEvent>[]): Promise<void> => {
    for (const { event, position } of records) {
      if (event.type === 'docs.user.erasure_requested.v1') await erase(event.data as UserErasureRequested, event);
      else if (event.type === 'docs.user.export_requested.v1') {
        const request = event.data as UserExportRequested;
        await deps.exports.build(request.userId, request.exportId, request.requestedAt, position);
      }
    }
  };

  return { handle, erase };
};
