import type { UrlSigner } from '@docshare/auth';

/*
 * Signed, expiring links to a file's bytes (`/files/:fileId/content`). The owner's kind of link
 * (AuthorizeDownload) signs the path alone; a buyer's signs the path and the sale, so a link
 * signed for one sale opens nothing else, and an owner's link cannot be turned into one.
 */

export const contentPath = (fileId: number): string => `/files/${fileId}/content`;

/** What a buyer's link signs: the content path and the sale. */
export const saleResource = (fileId: number, saleId: number): string => `${contentPath(fileId)}?sale=${saleId}`;

export interface ContentLinksDeps {
  signer: UrlSigner;
  publicBaseUrl: string;
  downloadUrlTtlSeconds: number;
  clock: () => Date;
}

export const makeContentLinks = ({ signer, publicBaseUrl, downloadUrlTtlSeconds, clock }: ContentLinksDeps) => {
  const expiresFrom = (now: Date): number => Math.floor(now.getTime() / 1000) + downloadUrlTtlSeconds;
  return {
    /** A signed, expiring link to a file's bytes, valid from `now` (the decision's time). */
    downloadUrl: (fileId: number, now: Date): string => {
      const path = contentPath(fileId);
      return `${publicBaseUrl}${path}?${signer.sign(path, expiresFrom(now))}`;
    },
    /** A signed, expiring link to the bytes a buyer bought (decisions §5's download_url, for sale `saleId`). */
    purchaseUrl: (fileId: number, saleId: number): string =>
      `${publicBaseUrl}${saleResource(fileId, saleId)}&${signer.sign(saleResource(fileId, saleId), expiresFrom(clock()))}`,
  };
};

export type ContentLinks = ReturnType<typeof makeContentLinks>;
