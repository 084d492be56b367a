import type { CloudEvent, DocshareEvent, StoredEvent } from '@docshare/contracts';
import { guarded, known, type ReadOp } from '@docshare/projection';
import type { GuardedUpdate, ReadStore } from '@docshare/read-store';

export const USERS = 'users';
export const FILES = 'files';
export const COMMENTS = 'comments';
export const CATEGORIES = 'categories';
/** A buyer's purchase of a file, `<fileId>-<buyerId>`: what api-purchases lists. */
export const PURCHASES = 'purchases';
/**
 * How many visible files (enabled, not deleted) one owner has in one category,
 * `<categoryId>-<ownerId>`, and whether that is more than none (`live`): api-categories lists a
 * category while some owner's count is. Per owner,
 * not per category, because a document is written from one bus partition only (the owner's, for
 * file events), and a category's files come from every owner's.
 */
export const CATEGORY_USE = 'category_use';

/**
 * What an erased person's name and comments read (@docshare/personal-data's REDACTED, which
 * opening a field of a destroyed key gives too): the erasure's redaction and a rebuild's agree.
 */
export const REDACTED = '[deleted]';

const purchaseId = (fileId: number, buyerId: number): string => `${fileId}-${buyerId}`;
const categoryUseId = (categoryId: number, ownerId: number): string => `${categoryId}-${ownerId}`;

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
            category_id: f.categoryId, enabled: true, for_sale: false, deleted: false,
          },
        },
      }, {
        collection: CATEGORY_USE, id: categoryUseId(f.categoryId, f.ownerId),
        update: { set: { category_id: f.categoryId, owner_id: f.ownerId, live: true }, inc: { files: 1 } },
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
    // A deleted file keeps no personal field (its title and description; the rest is ids, times
    // and flags): nothing can show it again, and an erasure deletes the files this way.
    case 'docs.file.deleted.v1':
      return [{ collection: FILES, id: String(event.data.fileId), update: { set: { deleted: true, title: '', description: '' } } }];
    // The user's comments are redacted by filesHandler (documents of other partitions, unguarded).
    case 'docs.user.erased.v1':
      return [{ collection: USERS, id: String(event.data.userId), update: { set: { name: REDACTED } } }];
    case 'docs.file.purchased.v1': {
      const p = event.data;
      return [{
        collection: PURCHASES, id: purchaseId(p.fileId, p.buyerId),
        update: {
          // The first sale stands (a stream recorded before "a buyer buys a file once" may repeat one).
          setOnInsert: { sale_id: p.saleId, purchased_at: p.purchasedAt },
          set: { file_id: p.fileId, buyer_id: p.buyerId, file_owner_id: p.ownerId, listed: true },
        },
      }];
    }
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
 * Comments on a file that is being deleted leave the received list, and forget the file's title
 * (the file owner's, copied at posting). The deletion event cannot name
 * them (a file's comments are unbounded), so they are found in the read model: every comment of a
 * file is in the file's stream before its deletion, so all of them are there when it arrives.
 * Each gets `file_deleted: true` under the deletion's own guard, which keeps it idempotent: a
 * redelivered deletion, or a replayed comment, is not newer than what the comment already reflects.
 * Paid once per deletion (O(comments of the file)), so a list read can page in the store.
 */
const hideCommentsOfDeletedFile = async (store: ReadStore, event: DocshareEvent): Promise<ReadOp[]> => {
  if (event.type !== 'docs.file.deleted.v1') return [];
  const comments = await store.find(COMMENTS, { file_id: event.data.fileId }, { fields: [] });
  return comments.map((c) => ({ collection: COMMENTS, id: c._id, update: { set: { file_deleted: true, file_title: '' } } }));
};

/**
 * An erased user's comments read REDACTED, wherever they are: each was written from its file's
 * partition, whose later events (a deletion of the file) may have moved its guard past the
 * erasure's position, so the redaction is unguarded (ReadStore.updateWhere) and idempotent. Sent
 * after every earlier update of the batch, so a comment of the same batch is redacted too; a
 * comment the projector meets after the erasure (another partition behind, a rebuild) was opened
 * with the user's key gone, so it reads REDACTED already.
 */
const redactCommentsOfErasedUser = async (store: ReadStore, event: DocshareEvent): Promise<void> => {
  if (event.type !== 'docs.user.erased.v1') return;
  await store.updateWhere(COMMENTS, { author_id: event.data.userId }, { comment: REDACTED });
};

/**
 * A file's buyers list it while it is enabled and not deleted: an enabling or disabling update and
 * a deletion set `listed` on each purchase of the file, found in the read model (every purchase of
 * the file is in its stream before), under the event's own guard, as for comments.
 */
const listPurchasesOfFile = async (store: ReadStore, event: DocshareEvent): Promise<ReadOp[]> => {
  const listed = event.type === 'docs.file.deleted.v1' ? false
    : event.type === 'docs.file.updated.v1' ? event.data.changes.enabled
    : undefined;
  if (listed === undefined || !('fileId' in event.data)) return [];
  const purchases = await store.find(PURCHASES, { file_id: event.data.fileId });
  return purchases.map((p) => ({ collection: PURCHASES, id: p._id, update: { set: { listed } } }));
};

/**
 * A file that stops being visible (disabled, or deleted while enabled) leaves its owner's count in
 * its category (the category recorded on the file at upload), and one enabled again comes back;
 * the category is `live` for that owner while the count is above none. An update's `enabled` is a
 * change (the decider records only what differs); a deletion takes away a file the read model has
 * enabled (a field the deletion does not touch, so a redelivered deletion reads the same). Read
 * before written, under the event's guard: a redelivered event is not newer than the count, and
 * an event whose file document a cut-off batch wrote while its count was not is counted then.
 */
const recountCategoryOfFile = async (store: ReadStore, event: DocshareEvent): Promise<ReadOp[]> => {
  if (event.type !== 'docs.file.deleted.v1' && event.type !== 'docs.file.updated.v1') return [];
  const change = event.type === 'docs.file.updated.v1' ? event.data.changes.enabled : false;
  if (change === undefined) return [];
  const file = await store.get(FILES, String(event.data.fileId));
  if (typeof file?.category_id !== 'number') return [];
  if (event.type === 'docs.file.deleted.v1' && file.enabled === false) return [];
  const by = change ? 1 : -1;
  const id = categoryUseId(file.category_id, event.data.ownerId);
  const use = await store.get(CATEGORY_USE, id);
  const files = (typeof use?.files === 'number' ? use.files : 0) + by;
  return [{ collection: CATEGORY_USE, id, update: { inc: { files: by }, set: { live: files > 0 } } }];
};

/** The events whose ops need documents the event cannot name, read (or written, for an erasure) in the store first. */
const readsFirst = (event: DocshareEvent): boolean =>
  event.type === 'docs.file.deleted.v1' || event.type === 'docs.user.erased.v1'
  || (event.type === 'docs.file.updated.v1' && event.data.changes.enabled !== undefined);

/**
 * Applies the files projection to a batch of events in bulk writes, each document guarded by the
 * position of the last event it applied: the pure projection's ops, plus what a deletion implies
 * for the file's comments, purchases and category count, an enabling or disabling update for
 * its purchases and category count, and an erasure for the user's comments (unguarded). Those look documents up in the store, so what the batch holds before them is
 * written first. The handler every runner of this read model uses (projector, embedded mode,
 * rebuild).
 */
export const filesHandler = (store: ReadStore) => async (records: readonly StoredEvent<CloudEvent>[]): Promise<void> => {
  let updates: GuardedUpdate[] = [];
  for (const record of records) {
    const event = known(record.event);
    if (!event) continue;
    if (readsFirst(event)) {
      await store.applyBatch(updates);
      updates = [];
      updates.push(...guarded(record, await hideCommentsOfDeletedFile(store, event)));
      updates.push(...guarded(record, await listPurchasesOfFile(store, event)));
      updates.push(...guarded(record, await recountCategoryOfFile(store, event)));
      await redactCommentsOfErasedUser(store, event);
    }
    updates.push(...guarded(record, filesProjection(event)));
  }
  await store.applyBatch(updates);
};
