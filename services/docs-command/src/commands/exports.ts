import { PassThrough, Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { randomUUID } from 'node:crypto';
import { M, streamIds, unauthorized } from '@docshare/contracts';
import type { BlobStore } from '@docshare/blob-store';
import type { UrlSigner } from '@docshare/auth';
import type { Logger } from '@docshare/http';
import { writeAccountExport, type ExportOriginal } from '@docshare/account-export';
import type { CommandMeta } from './command-handler.ts';
import { registered, userDecider, type CommandContext } from './context.ts';
import { recordedBy } from './recorded.ts';
import { makeUserLinks, type LinkQuery } from './user-links.ts';
import type { UserState } from './domain/user.ts';

/** How long an export is kept and its link valid (issue 24). */
export const EXPORT_TTL_MS = 7 * 24 * 3_600_000;
/** A request sooner than this after the user's previous one answers that one (an export reads every original: not to be asked in a loop). */
export const EXPORT_INTERVAL_MS = 15 * 60_000;

/** What an export's ZIP is made of, as the API answers it for the user (wired from the read models). */
export interface ExportSources {
  /** Every file of the user as api-files answers its pages (the owner's view). */
  files(userId: number): Promise<unknown[]>;
  /** Every comment the user wrote. */
  commentsWritten(userId: number): Promise<unknown[]>;
  /** Every purchase of the user as api-purchases answers its pages. */
  purchases(userId: number): Promise<unknown[]>;
  stats(userId: number): Promise<unknown>;
  /** The last year of daily statistics, or null when there are none. */
  daily(userId: number): Promise<unknown[] | null>;
  /** The ids of the user's files (not deleted), whose originals go in. */
  fileIds(userId: number): Promise<number[]>;
  /** Resolves once every read model has applied the event log up to `position`. */
  applied(position: number): Promise<void>;
}

export interface ExportMeta { exportId: string; userId: number; sha256: string; bytes: number; createdAt: string; expiresAt: string }

export const exportZipKey = (userId: number, exportId: string): string => `x${userId}-${exportId}.zip`;
export const exportMetaKey = (userId: number, exportId: string): string => `x${userId}-${exportId}.json`;
const EXPORT_KEY = /^x(\d+)-([0-9a-f-]{36})\.json$/;

export interface ExportsDeps {
  ctx: CommandContext;
  blobs: BlobStore;
  signer: UrlSigner;
  publicBaseUrl: string;
  logger: Logger;
  sources?: ExportSources;
}

/**
 * Exports (issue 24, GDPR art. 20): a request is an event on the user's stream; the accounts
 * process manager builds the ZIP in the background (`build`), streamed into the blob store
 * (`x<userId>-<exportId>.zip`, then its `.json` facts: that it exists says it is ready); a signed
 * link serves it for 7 days, after which a periodic sweep removes it.
 */
export const makeExports = ({ ctx, blobs, signer, publicBaseUrl, logger, sources }: ExportsDeps) => {
  // The ZIP's link, signed until the export expires.
  const contentLinks = makeUserLinks({ signer, publicBaseUrl, clock: ctx.clock }, (exportId) => `/api/V1/users/api-export/${exportId}/content`);
  const loadUser = async (userId: number): Promise<UserState> =>
    (await ctx.handler.load(userDecider, streamIds.user(userId), registered)).state;

  const request = async (userId: number, meta: CommandMeta) => {
    const now = ctx.clock();
    const state = (await ctx.handler.load(userDecider, streamIds.user(userId))).state;
    if (state.status !== 'registered') throw unauthorized(M.invalidToken);
    const last = state.exports.at(-1);
    if (last && now.getTime() - Date.parse(last.requestedAt) < EXPORT_INTERVAL_MS) return { exportId: last.exportId, recorded: recordedBy(null) };
    const result = ctx.committed(await ctx.handler.handle(userDecider, streamIds.user(userId), {
      type: 'RequestExport', userId, exportId: randomUUID(), now: now.toISOString(),
    }, now.toISOString(), meta));
    const after = result.state;
    if (after.status !== 'registered' || after.exports.length === 0) throw new Error(`user ${userId}: export not recorded`);
    return { exportId: after.exports.at(-1)!.exportId, recorded: recordedBy(result) };
  };

  const metaOf = async (userId: number, exportId: string): Promise<ExportMeta | null> => {
    const blob = await blobs.get(exportMetaKey(userId, exportId));
    return blob ? JSON.parse(await text(blob.body)) as ExportMeta : null;
  };

  /** pending, ready (with its signed link), or null: not this user's, too old, or expired. */
  const status = async (userId: number, exportId: string) => {
    const state = await loadUser(userId);
    if (state.status !== 'registered') throw unauthorized(M.invalidToken);
    const requested = state.exports.find((e) => e.exportId === exportId);
    if (!requested || ctx.clock().getTime() - Date.parse(requested.requestedAt) > EXPORT_TTL_MS) return null;
    const meta = await metaOf(userId, exportId);
    if (!meta) return { state: 'pending' as const };
    const expiresAt = Date.parse(meta.expiresAt);
    if (expiresAt <= ctx.clock().getTime()) return null;
    return {
      state: 'ready' as const,
      download_url: contentLinks.url(userId, exportId, Math.floor(expiresAt / 1000)),
      sha256: meta.sha256, bytes: meta.bytes, expires_at: meta.expiresAt,
    };
  };

  /** The ZIP of a signed link, or null (bad link, gone). */
  const open = async (exportId: string, query: LinkQuery) => {
    const userId = contentLinks.verify(exportId, query);
    return userId === null ? null : blobs.get(exportZipKey(userId, exportId));
  };

  /** Builds one export (the accounts process manager): nothing when it exists, is too old, or the user is gone. */
  const build = async (userId: number, exportId: string, requestedAt: string, position: number): Promise<void> => {
    if (!sources) throw new Error('exports: no read models wired');
    const requested = Date.parse(requestedAt);
    if (ctx.clock().getTime() - requested > EXPORT_TTL_MS) return;
    if (await blobs.stat(exportMetaKey(userId, exportId))) return;
    await sources.applied(position);
    const state = (await ctx.handler.load(userDecider, streamIds.user(userId))).state;
    if (state.status !== 'registered') return;
    const [files, commentsWritten, purchases, stats, daily, fileIds] = await Promise.all([
      sources.files(userId), sources.commentsWritten(userId), sources.purchases(userId), sources.stats(userId), sources.daily(userId),
      sources.fileIds(userId),
    ]);
    async function* originals(): AsyncGenerator<ExportOriginal> {
      for (const fileId of fileIds) {
        const file = await ctx.loadFile(fileId);
        if (file.status !== 'active' || file.file.ownerId !== userId) continue;
        const { blobKey, originalFileName } = file.file;
        yield {
          fileId, fileName: originalFileName,
          open: async () => {
            const blob = await blobs.get(blobKey);
            if (!blob) throw new Error(`file ${fileId}: its blob ${blobKey} is missing`);
            return blob.body;
          },
        };
      }
    }
    const sink = new PassThrough();
    const stored = blobs.put(exportZipKey(userId, exportId), sink, undefined, 'application/zip');
    const [written] = await Promise.all([
      writeAccountExport({
        account: { user_id: userId, name: state.name, email: state.email },
        files, commentsWritten, purchases, stats, daily, originals: originals(),
      }, sink),
      stored,
    ]);
    const createdAt = ctx.clock();
    const meta: ExportMeta = {
      exportId, userId, sha256: written.sha256, bytes: written.bytes, createdAt: createdAt.toISOString(),
      expiresAt: new Date(requested + EXPORT_TTL_MS).toISOString(),
    };
    const json = JSON.stringify(meta);
    await blobs.put(exportMetaKey(userId, exportId), Readable.from([json]), Buffer.byteLength(json), 'application/json');
    logger.info({ userId, exportId, bytes: written.bytes, files: fileIds.length }, 'export ready');
  };

  /** Removes one export (an erasure). */
  const remove = async (userId: number, exportId: string): Promise<void> => {
    await blobs.remove(exportZipKey(userId, exportId));
    await blobs.remove(exportMetaKey(userId, exportId));
  };

  /** One pass of the export sweep: every export past its 7 days leaves the blob store. */
  const sweep = async (): Promise<{ removed: number }> => {
    const now = ctx.clock().getTime();
    let removed = 0;
    for await (const entry of blobs.list()) {
      const match = EXPORT_KEY.exec(entry.key);
      if (!match) continue;
      const userId = Number(match[1]);
      const exportId = match[2]!;
      const meta = await metaOf(userId, exportId).catch(() => null);
      if (meta && Date.parse(meta.expiresAt) <= now) {
        await remove(userId, exportId);
        removed += 1;
      }
    }
    return { removed };
  };

  return { request, status, open, build, remove, sweep };
};

export type Exports = ReturnType<typeof makeExports>;
