import type { ReadStore } from '@docshare/read-store';
import { STATS } from './projection.ts';

export interface UserStats {
  total_comments: number;
  total_files: number;
  total_views: number;
  total_downloads: number;
  total_sales: number;
}

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

/** Statistics of one user from the stats read model (all zero for a user with no activity). */
export const makeStatsQueries = (store: ReadStore) => ({
  statsOf: async (userId: number): Promise<UserStats> => {
    const doc = await store.get(STATS, String(userId));
    return {
      total_comments: count(doc?.total_comments),
      total_files: count(doc?.total_files),
      total_views: count(doc?.total_views),
      total_downloads: count(doc?.total_downloads),
      total_sales: count(doc?.total_sales),
    };
  },
  /** Bytes of the user's files not deleted, as far as the read model has seen (the storage quota's count). */
  bytesStoredBy: async (userId: number): Promise<number> => count((await store.get(STATS, String(userId)))?.bytes_stored),
  /**
   * The same, with `through`: the position of the last of the user's uploads and deletions it
   * counts (every earlier one is counted too: they apply in log order).
   */
  storageOf: async (userId: number): Promise<{ bytes: number; through: number }> => {
    const doc = await store.get(STATS, String(userId));
    return { bytes: count(doc?.bytes_stored), through: count(doc?.bytes_at) };
  },
  /**
   * Bytes every user's files take, as far as the read model has seen: one pass over the users'
   * statistics (never on a request's path: docs-command's bytes-stored metric, every few minutes).
   */
  totalBytesStored: async (): Promise<number> => {
    let total = 0;
    for (const doc of await store.find(STATS, {})) total += Math.max(0, count(doc.bytes_stored));
    return total;
  },
});
