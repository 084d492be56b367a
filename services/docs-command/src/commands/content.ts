import { forbidden, M, notFound, positiveId } from '@docshare/contracts';
import { RangeNotSatisfiable, type BlobStore, type BlobStream, type ByteRange } from '@docshare/blob-store';
import type { UrlSigner } from '@docshare/auth';
import type { CommandMeta } from './command-handler.ts';
import { decideDownload, saleById, type FileFacts } from './domain/file.ts';
import type { CommandContext } from './context.ts';
import { contentPath, saleResource, type ContentLinks } from './links.ts';

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
 * URL is new each time). Bytes served by docs-command itself: http/http-caching.ts.
 */
export const CONTENT_CACHE_CONTROL = 'private, no-store';

/** Content-Disposition of a file's bytes: a download under its original name (ASCII fallback, then UTF-8). */
export const contentDisposition = (fileName: string): string => {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName)}`;
};

export interface ContentCommandsDeps {
  ctx: CommandContext;
  blobs: BlobStore;
  signer: UrlSigner;
  links: ContentLinks;
}

/** A file's bytes: a download authorized (a signed link), and a signed link opened. */
export const makeContentCommands = ({ ctx, blobs, signer, links }: ContentCommandsDeps) => {
  const authorizeDownload = async (actorId: number, fileId: number, meta: CommandMeta) => {
    const now = ctx.clock();
    // Like a view (files.ts): the file's state brought up to date, the download recorded outside its stream.
    const { file, event } = decideDownload(await ctx.loadFile(fileId), actorId, now.toISOString());
    return {
      originalFileName: file.originalFileName,
      downloadUrl: links.downloadUrl(fileId, now),
      recorded: await ctx.recordActivity(event, meta),
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
    const nowSeconds = Math.floor(ctx.clock().getTime() / 1000);
    // A buyer's link names its sale (`sale=`), signed with it; any other link the path alone.
    const saleId = sale === undefined ? undefined : positiveId(sale);
    if (saleId === null) return null;
    const resource = saleId === undefined ? contentPath(fileId) : saleResource(fileId, saleId);
    if (!signer.verify(resource, expires, signature, nowSeconds)) return null;
    const state = await ctx.loadFile(fileId);
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
        // The type the file records (a resumable upload's is sniffed at completion, after its bytes were stored).
        contentType: state.file.contentType,
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

  return { authorizeDownload, openContent };
};
