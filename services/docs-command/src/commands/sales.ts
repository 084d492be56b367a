import { DocshareError, M, notFound } from '@docshare/contracts';
import type { makeFilesQueries, Page } from '@docshare/files-projector';
import type { CommandMeta, Handled } from './command-handler.ts';
import { purchaseOf, saleTo, type FileState } from './domain/file.ts';
import type { CommandContext } from './context.ts';
import type { ContentLinks } from './links.ts';
import { recordedBy } from './recorded.ts';

type FilesQueries = ReturnType<typeof makeFilesQueries>;

export interface SalesCommandsDeps {
  ctx: CommandContext;
  links: ContentLinks;
  /** The files a user bought, a page of them, from the files read model (read-only); absent: api-purchases answers 503. */
  purchasesOf?: FilesQueries['purchasesOf'];
}

/** Sales: a purchase (once per buyer and file), and a buyer's purchases, each with a fresh signed link. */
export const makeSalesCommands = ({ ctx, links, purchasesOf }: SalesCommandsDeps) => {
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
      return { saleId: sale.saleId, created: recorded !== null, purchasedAt: sale.purchasedAt, downloadUrl: links.purchaseUrl(fileId, sale.saleId), recorded };
    };
    const state = await ctx.loadFile(fileId);
    // Asked before a sale id is taken, so refusals and repeats take none; the decider decides
    // again on the stream, at its version, which is what settles two purchases at once.
    if (purchaseOf(state, actorId) === 'repeat') return answer(state);
    const saleId = await ctx.events.nextId('sale');
    const result = await ctx.onFile(fileId, { type: 'PurchaseFile', fileId, actorId, saleId, now: ctx.clock().toISOString() }, meta);
    return answer(result.state, result);
  };

  /** The files `buyerId` bought (enabled and not deleted), newest purchase first, each with a fresh signed link. */
  const purchases = async (buyerId: number, page: Page) => {
    if (!purchasesOf) throw new DocshareError('unavailable', M.unavailable);
    const { items, total } = await purchasesOf(buyerId, page);
    return {
      data: items.map((p) => ({
        id: p.fileId, title: p.title, sale_id: p.saleId, purchased_at: p.purchasedAt, download_url: links.purchaseUrl(p.fileId, p.saleId),
      })),
      total, page: page.page, per_page: page.perPage,
    };
  };

  return { purchase, purchases, purchaseUrl: links.purchaseUrl };
};
