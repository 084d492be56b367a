import { notFound, joinTags, M, utcDate, viewUrl } from '@docshare/contracts';
import type { Doc, Filter, ReadStore } from '@docshare/read-store';
import { CATEGORIES, COMMENTS, FILES, USERS } from './projection.ts';

export interface Page { page: number; perPage: number }

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

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
      total, page: page.page, per_page: page.perPage,
    };
  };

  /** Comments received on the user's files that still exist, newest first, titled with the file's current title. */
  const commentsReceivedBy = async (userId: number) => {
    await userOf(userId);
    const comments = await store.find(COMMENTS, { file_owner_id: userId }, { sort: [['posted_at', -1], ['comment_id', -1]] });
    const fileIds = [...new Set(comments.map((c) => num(c.file_id)))];
    const files = fileIds.length === 0 ? [] : await store.find(FILES, { file_id: { in: fileIds } });
    const live = new Map(files.filter((f) => f.deleted !== true).map((f) => [num(f.file_id), f]));
    return comments.flatMap((c) => {
      const file = live.get(num(c.file_id));
      if (!file) return [];
      return [{
        comment_id: num(c.comment_id),
        submission_date: utcDate(str(c.posted_at)),
        title: str(file.title) || str(c.file_title),
        comment: str(c.comment),
        link: viewUrl(publicBaseUrl, num(c.file_id)),
      }];
    });
  };

  const categories = async () => {
    const docs = await store.find(CATEGORIES, {}, { sort: [['category_id', 1]] });
    return docs.map((c) => ({
      id: num(c.category_id), name: str(c.name), description: str(c.description),
      tags: joinTags(Array.isArray(c.tags) ? c.tags.map(String) : []),
    }));
  };

  return { filesOf, commentsReceivedBy, categories };
};
