import { notFound, joinTags, M, utcDate, viewUrl } from '@docshare/contracts';
import type { Doc, Filter, ReadStore } from '@docshare/read-store';
import { CATEGORIES, CATEGORY_USE, COMMENTS, FILES, PURCHASES, USERS } from './projection.ts';

export interface Page { page: number; perPage: number }

/** A file a user bought, as the read model keeps it (docs-command adds the signed link). */
export interface PurchaseListed { fileId: number; title: string; saleId: number; purchasedAt: string }

/** Comments read per page by commentsWrittenBy. */
const WRITTEN_PAGE = 500;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

/**
 * A page's `total`, consistent with the page: the count and the page are two reads, and the
 * projector may add a document between them. A page that is not full ends the list, so the list
 * holds exactly what comes before it plus the page; a full page means at least as many.
 */
export const totalOf = (counted: number, page: Page, returned: number): number => {
  const before = (page.page - 1) * page.perPage;
  if (returned === page.perPage) return Math.max(counted, before + returned);
  if (returned > 0 || before === 0) return before + returned;
  return Math.min(counted, before); // past the end: fewer than the pages before it hold
};

/** File lists, received comments and categories, from the read model only. */
export const makeFilesQueries = (store: ReadStore, publicBaseUrl: string) => {
  const userOf = async (userId: number): Promise<Doc> => {
    const user = await store.get(USERS, String(userId));
    if (!user) throw notFound(M.userNotFound);
    return user;
  };

  /** Files of `userId` as `viewerId` may see them: owners see all of theirs, others only enabled ones. Newest first. */
  const filesOf = async (userId: number, viewerId: number, page: Page) => {
    const user = await userOf(userId);
    const filter: Filter = { owner_id: userId, deleted: false };
    if (userId !== viewerId) filter.enabled = true;
    const [total, docs] = await Promise.all([
      store.count(FILES, filter),
      store.find(FILES, filter, {
        sort: [['uploaded_at', -1], ['file_id', -1]], skip: (page.page - 1) * page.perPage, limit: page.perPage,
      }),
    ]);
    return {
      user: { id: num(user.user_id), name: str(user.name) },
      files: docs.map((f) => ({
        file_id: num(f.file_id),
        upload_date: utcDate(str(f.uploaded_at)),
        title: str(f.title),
        description: str(f.description),
        file_url: viewUrl(publicBaseUrl, num(f.file_id)),
      })),
      total: totalOf(total, page, docs.length), page: page.page, per_page: page.perPage,
    };
  };

  /**
   * Comments received on the user's files that still exist, newest first, one page of them, titled
   * with the file's current title. Paged in the store (comments on deleted files carry
   * `file_deleted: true`, see filesHandler), so a read costs the page, not the user's whole list.
   */
  const commentsReceivedBy = async (userId: number, page: Page) => {
    await userOf(userId);
    // `in: [false, null]` rather than `null` alone: the same documents, and an equality the
    // received_live index can bound (docs/mongodb.md, "Read paths and their plans").
    const filter: Filter = { file_owner_id: userId, file_deleted: { in: [false, null] } };
    const [total, comments] = await Promise.all([
      store.count(COMMENTS, filter),
      store.find(COMMENTS, filter, {
        sort: [['posted_at', -1], ['comment_id', -1]], skip: (page.page - 1) * page.perPage, limit: page.perPage,
      }),
    ]);
    const fileIds = [...new Set(comments.map((c) => num(c.file_id)))];
    const files = fileIds.length === 0 ? [] : await store.find(FILES, { file_id: { in: fileIds } });
    const titles = new Map(files.map((f) => [num(f.file_id), str(f.title)]));
    return {
      data: comments.map((c) => ({
        comment_id: num(c.comment_id),
        submission_date: utcDate(str(c.posted_at)),
        title: titles.get(num(c.file_id)) || str(c.file_title),
        comment: str(c.comment),
        link: viewUrl(publicBaseUrl, num(c.file_id)),
      })),
      total: totalOf(total, page, comments.length), page: page.page, per_page: page.perPage,
    };
  };

  /**
   * Categories in use, by id, one page of them: a category is listed while at least one file that
   * anyone may see (enabled, not deleted) is in it, so categories emptied by deletions or by
   * disabling, or created by an upload that was then refused, leave the list (and come back with
   * their next visible file). Costs the
   * distinct categories of the live (category, owner) counts (on MongoDB a DISTINCT_SCAN of the
   * `live` index, in memory a pass over the live counts without copying them), then the page's
   * categories by id: the ids are paged here, so no filter grows with the list. A category in use
   * whose own document the projector has not written yet (another partition) is left out of the
   * page and of `total` alike.
   */
  const categories = async (page: Page) => {
    const ids = (await store.distinct(CATEGORY_USE, 'category_id', { live: true })).map(num);
    const skip = (page.page - 1) * page.perPage;
    const wanted = ids.slice(skip, skip + page.perPage);
    const docs = wanted.length === 0 ? [] : await store.find(CATEGORIES, { category_id: { in: wanted } }, { sort: [['category_id', 1]] });
    const total = ids.length - (wanted.length - docs.length);
    return {
      data: docs.map((c) => ({
        id: num(c.category_id), name: str(c.name), description: str(c.description),
        tags: joinTags(Array.isArray(c.tags) ? c.tags.map(String) : []),
      })),
      total: totalOf(total, page, docs.length), page: page.page, per_page: page.perPage,
    };
  };

  /**
   * Files `buyerId` bought, newest purchase first, one page of them, titled with the file's current
   * title: only files still enabled and not deleted (`listed`, see filesHandler).
   */
  const purchasesOf = async (buyerId: number, page: Page): Promise<{ items: PurchaseListed[]; total: number }> => {
    const filter: Filter = { buyer_id: buyerId, listed: true };
    const [total, purchases] = await Promise.all([
      store.count(PURCHASES, filter),
      store.find(PURCHASES, filter, {
        sort: [['purchased_at', -1], ['file_id', -1]], skip: (page.page - 1) * page.perPage, limit: page.perPage,
      }),
    ]);
    const fileIds = purchases.map((p) => num(p.file_id));
    const files = fileIds.length === 0 ? [] : await store.find(FILES, { file_id: { in: fileIds } });
    const titles = new Map(files.map((f) => [num(f.file_id), str(f.title)]));
    return {
      items: purchases.map((p) => ({
        fileId: num(p.file_id), title: titles.get(num(p.file_id)) ?? '', saleId: num(p.sale_id), purchasedAt: str(p.purchased_at),
      })),
      total: totalOf(total, page, purchases.length),
    };
  };

  /**
   * Ids of `ownerId`'s files not deleted, enabled or not, ascending, at most `limit` of them after
   * `afterFileId` (0: from the start): what an erasure deletes, a page at a time. Keyset paging on
   * the `owner_files` index, so a page costs itself, however many the owner has or the erasure
   * has deleted meanwhile.
   */
  const fileIdsOf = async (ownerId: number, afterFileId: number, limit: number): Promise<number[]> => {
    const docs = await store.find(FILES, { owner_id: ownerId, deleted: false }, {
      sort: [['file_id', 1]], after: afterFileId, limit, fields: ['file_id'],
    });
    return docs.map((f) => num(f.file_id));
  };

  /**
   * Every comment `authorId` wrote, on anyone's file, deleted or not, newest first (by id: ids are
   * handed out as comments are posted), as the comments list answers them (titled with the file's
   * current title; a deleted file keeps none): the account export's comments_written. Read a page
   * of the `author` index at a time (keyset: a page costs itself) with the titles of the page's
   * files, so a prolific author costs pages, not one unbounded read.
   */
  const commentsWrittenBy = async (authorId: number) => {
    const written: Array<{ comment_id: number; submission_date: string; title: string; comment: string; link: string }> = [];
    let last: number | undefined;
    for (;;) {
      const comments = await store.find(COMMENTS, { author_id: authorId }, {
        sort: [['comment_id', -1]], limit: WRITTEN_PAGE, ...(last === undefined ? {} : { after: last }),
      });
      const fileIds = [...new Set(comments.map((c) => num(c.file_id)))];
      const files = fileIds.length === 0 ? [] : await store.find(FILES, { file_id: { in: fileIds } }, { fields: ['file_id', 'title'] });
      const titles = new Map(files.map((f) => [num(f.file_id), str(f.title)]));
      for (const c of comments) {
        written.push({
          comment_id: num(c.comment_id),
          submission_date: utcDate(str(c.posted_at)),
          title: titles.get(num(c.file_id)) ?? str(c.file_title),
          comment: str(c.comment),
          link: viewUrl(publicBaseUrl, num(c.file_id)),
        });
      }
      if (comments.length < WRITTEN_PAGE) return written;
      last = num(comments[comments.length - 1]!.comment_id);
    }
  };

  /** How many comments `authorId` wrote (all, on live files or not): what an erasure redacts. Counted on the `author` index. */
  const countCommentsBy = (authorId: number): Promise<number> => store.count(COMMENTS, { author_id: authorId });

  return { filesOf, commentsReceivedBy, categories, purchasesOf, fileIdsOf, commentsWrittenBy, countCommentsBy };
};
