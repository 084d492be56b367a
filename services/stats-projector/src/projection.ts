import type { CloudEvent, DocshareEvent, StoredEvent } from '@docshare/contracts';
import { guarded, known, type ReadOp } from '@docshare/projection';
import type { GuardedUpdate, ReadStore } from '@docshare/read-store';

export const STATS = 'stats';
/** Per file: its owner and size, kept from the upload so that its deletion knows what it frees. */
export const STORED_FILES = 'stored_files';
/**
 * Per file and buyer (`<fileId>-<buyerId>`): the position of the first sale (`first_at`). A buyer
 * buys a file once (the file decider), but a log recorded before that rule may repeat a sale:
 * `total_sales` counts the first only.
 */
export const SOLD = 'sold';

const soldId = (fileId: number, buyerId: number): string => `${fileId}-${buyerId}`;

/** A byte count as an `inc` accepts it: a non-negative finite number, else 0. */
const bytes = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);

const bump = (userId: number, by: Record<string, number>): ReadOp =>
  ({ collection: STATS, id: String(userId), update: { inc: by } });

/**
 * Per-user statistics (decisions §8): activity on the user's files, counted once per event. Also
 * `bytes_stored`, the size of the user's files not deleted: what the storage quota counts (never
 * shown by api-stats). `freed` is the size of the file a deletion removes, which the deletion event
 * does not carry: statsHandler looks it up in STORED_FILES.
 */
export const statsProjection = (event: DocshareEvent, freed = 0): ReadOp[] => {
  switch (event.type) {
    case 'docs.file.uploaded.v1': {
      const { fileId, ownerId, size } = event.data;
      return [
        bump(ownerId, { total_files: 1, bytes_stored: bytes(size) }),
        { collection: STORED_FILES, id: String(fileId), update: { set: { owner_id: ownerId, size: bytes(size) } } },
      ];
    }
    case 'docs.file.deleted.v1': return [bump(event.data.ownerId, { total_files: -1, bytes_stored: -bytes(freed) })];
    case 'docs.file.viewed.v1': return [bump(event.data.ownerId, { total_views: 1 })];
    case 'docs.file.downloaded.v1': return [bump(event.data.ownerId, { total_downloads: 1 })];
    case 'docs.file.purchased.v1': return [bump(event.data.ownerId, { total_sales: 1 })];
    case 'docs.comment.posted.v1': return [bump(event.data.fileOwnerId, { total_comments: 1 })];
    default: return [];
  }
};

/**
 * Applies the stats projection to a batch of events in one bulk write, each document guarded by
 * the position of the last event it applied. A deletion needs the size its upload recorded: from
 * this batch when the upload is in it, else from the store (the upload is earlier in the same
 * partition, so applied already). The handler every runner of this read model uses (projector,
 * embedded mode, rebuild). `bytes_at`, the position of the last upload or deletion that changed
 * a user's `bytes_stored`, tells the storage quota which uploads the count already holds.
 */
export const statsHandler = (store: ReadStore) => async (records: readonly StoredEvent<CloudEvent>[]): Promise<void> => {
  const updates: GuardedUpdate[] = [];
  const sizes = new Map<string, number>();
  // The first sale of each (file, buyer) the batch sells: from earlier batches (one read for the
  // batch), else the first in this one. A sale after it is a repeat and counts nothing; the first
  // one, redelivered, counts under its guard as any event does.
  const sold = new Set<string>();
  for (const record of records) {
    const event = known(record.event);
    if (event?.type === 'docs.file.purchased.v1') sold.add(soldId(event.data.fileId, event.data.buyerId));
  }
  const firstSale = new Map((sold.size === 0 ? [] : await store.find(SOLD, { _id: { in: [...sold] } }))
    .map((d) => [d._id, typeof d.first_at === 'number' ? d.first_at : 0]));
  for (const record of records) {
    const event = known(record.event);
    if (!event) continue;
    if (event.type === 'docs.file.purchased.v1') {
      const id = soldId(event.data.fileId, event.data.buyerId);
      const first = firstSale.get(id) ?? record.position;
      firstSale.set(id, first);
      if (first < record.position) continue;
      updates.push(...guarded(record, [...statsProjection(event), { collection: SOLD, id, update: { set: { first_at: first } } }]));
      continue;
    }
    let freed = 0;
    if (event.type === 'docs.file.uploaded.v1') sizes.set(String(event.data.fileId), bytes(event.data.size));
    if (event.type === 'docs.file.deleted.v1') {
      const id = String(event.data.fileId);
      freed = sizes.get(id) ?? bytes((await store.get(STORED_FILES, id))?.size);
    }
    const ops = statsProjection(event, freed);
    if (event.type === 'docs.file.uploaded.v1' || event.type === 'docs.file.deleted.v1') {
      // Which of the user's uploads and deletions `bytes_stored` counts: the quota's exact view of it.
      for (const op of ops) if (op.collection === STATS) op.update = { ...op.update, set: { bytes_at: record.position } };
    }
    updates.push(...guarded(record, ops));
  }
  await store.applyBatch(updates);
};
