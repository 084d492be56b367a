import type { CloudEvent, DocshareEvent, StoredEvent } from '@docshare/contracts';
import { guarded, known, type ReadOp } from '@docshare/projection';
import type { GuardedUpdate, ReadStore } from '@docshare/read-store';

export const USERS = 'users';
export const FILES = 'files';
export const COMMENTS = 'comments';
export const CATEGORIES = 'categories';

/** Users, files, comments and categories as the list endpoints show them (decisions §9–§11). */
export const filesProjection = (event: DocshareEvent): ReadOp[] => {
  switch (event.type) {
    case 'docs.user.registered.v1':
      return [{ collection: USERS, id: String(event.data.userId), update: { set: { user_id: event.data.userId, name: event.data.name } } }];
    case 'docs.category.created.v1': {
      const c = event.data;
      return [{
        collection: CATEGORIES, id: String(c.categoryId),
        update: { set: { category_id: c.categoryId, name: c.name, description: c.description, tags: c.tags } },
      }];
    }
    case 'docs.file.uploaded.v1': {
      const f = event.data;
      return [{
        collection: FILES, id: String(f.fileId),
        update: {
          set: {
            file_id: f.fileId, owner_id: f.ownerId, title: f.title, description: f.description, uploaded_at: f.uploadedAt,
            enabled: true, for_sale: false, deleted: false,
          },
        },
      }];
    }
    case 'docs.file.updated.v1': {
      const { title, description, enabled, forSale } = event.data.changes;
      const set: Record<string, unknown> = {};
      if (title !== undefined) set.title = title;
      if (description !== undefined) set.description = description;
      if (enabled !== undefined) set.enabled = enabled;
      if (forSale !== undefined) set.for_sale = forSale;
      return Object.keys(set).length === 0 ? [] : [{ collection: FILES, id: String(event.data.fileId), update: { set } }];
    }
    case 'docs.file.deleted.v1':
      return [{ collection: FILES, id: String(event.data.fileId), update: { set: { deleted: true } } }];
    case 'docs.comment.posted.v1': {
      const c = event.data;
      return [{
        collection: COMMENTS, id: String(c.commentId),
        update: {
          set: {
            comment_id: c.commentId, file_id: c.fileId, file_owner_id: c.fileOwnerId, author_id: c.authorId,
            comment: c.comment, posted_at: c.postedAt, file_title: c.fileTitle,
          },
        },
      }];
    }
    default:
      return [];
  }
};

/**
 * Comments on a file that is being deleted leave the received list. The deletion event cannot name
 * them (a file's comments are unbounded), so they are found in the read model: every comment of a
 * file is in the file's stream before its deletion, so all of them are there when it arrives.
 * Each gets `file_deleted: true` under the deletion's own guard, which keeps it idempotent: a
 * redelivered deletion, or a replayed comment, is not newer than what the comment already reflects.
 * Paid once per deletion (O(comments of the file)), so a list read can page in the store.
 */
const hideCommentsOfDeletedFile = async (store: ReadStore, event: DocshareEvent): Promise<ReadOp[]> => {
  if (event.type !== 'docs.file.deleted.v1') return [];
  const comments = await store.find(COMMENTS, { file_id: event.data.fileId });
  return comments.map((c) => ({ collection: COMMENTS, id: c._id, update: { set: { file_deleted: true } } }));
};

/**
 * Applies the files projection to a batch of events in bulk writes, each document guarded by the
 * position of the last event it applied: the pure projection's ops, plus what a deletion implies
 * for the file's comments. A deletion looks its comments up in the store, so what the batch holds
 * before it is written first. The handler every runner of this read model uses (projector,
 * embedded mode, rebuild).
 */
export const filesHandler = (store: ReadStore) => async (records: readonly StoredEvent<CloudEvent>[]): Promise<void> => {
  let updates: GuardedUpdate[] = [];
  for (const record of records) {
    const event = known(record.event);
    if (!event) continue;
    if (event.type === 'docs.file.deleted.v1') {
      await store.applyBatch(updates);
      updates = [];
      updates.push(...guarded(record, await hideCommentsOfDeletedFile(store, event)));
    }
    updates.push(...guarded(record, filesProjection(event)));
  }
  await store.applyBatch(updates);
};
