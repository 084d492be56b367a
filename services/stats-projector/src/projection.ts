import type { DocshareEvent } from '@docshare/contracts';
import type { ReadOp } from '@docshare/projection';

export const STATS = 'stats';

const bump = (userId: number, field: string, by = 1): ReadOp[] =>
  [{ collection: STATS, id: String(userId), update: { inc: { [field]: by } } }];

/** Per-user statistics (decisions §8): activity on the user's files, counted once per event. */
export const statsProjection = (event: DocshareEvent): ReadOp[] => {
  switch (event.type) {
    case 'docs.file.uploaded.v1': return bump(event.data.ownerId, 'total_files');
    case 'docs.file.deleted.v1': return bump(event.data.ownerId, 'total_files', -1);
    case 'docs.file.viewed.v1': return bump(event.data.ownerId, 'total_views');
    case 'docs.file.downloaded.v1': return bump(event.data.ownerId, 'total_downloads');
    case 'docs.file.purchased.v1': return bump(event.data.ownerId, 'total_sales');
    case 'docs.comment.posted.v1': return bump(event.data.fileOwnerId, 'total_comments');
    default: return [];
  }
};
