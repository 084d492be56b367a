import type { CloudEvent, DocshareEvent, StoredEvent } from '@docshare/contracts';
import { known, type ReadOp } from '@docshare/projection';
import type { ReadStore } from '@docshare/read-store';

export const STATS = 'stats';
/** Per file: its owner and size, kept from the upload so that its deletion knows what it frees. */
export const STORED_FILES = 'stored_files';

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
 * Applies the stats projection to the store, each op guarded by (subject, streamversion). A deletion
 * first reads the size its upload recorded: the upload is earlier in the same stream, so it is
 * there, and the user's counter applies the deletion once whatever the redeliveries (its guard).
 * The handler every runner of this read model uses (projector, embedded mode, rebuild).
 */
export const statsHandler = (store: ReadStore) => async (record: StoredEvent<CloudEvent>): Promise<void> => {
  const event = known(record.event);
  if (!event) return;
  const guard = { stream: event.subject, version: event.streamversion };
  const freed = event.type === 'docs.file.deleted.v1'
    ? bytes((await store.get(STORED_FILES, String(event.data.fileId)))?.size)
    : 0;
  for (const op of statsProjection(event, freed)) await store.apply(op.collection, op.id, op.update, guard);
};
