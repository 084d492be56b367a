import { M, notFound, viewUrl } from '@docshare/contracts';
import { daysFrom, HOURLY_PRECISION, lastDays, lastHours, UniqueCounter } from '@docshare/analytics';
import type { Doc, ReadStore } from '@docshare/read-store';
import { DAILY_FILES, DAILY_USERS, dailyFileId, dailyUserId, HOURLY_FILES, STATS, STORED_FILES } from './projection.ts';
import type { DailyParams, TopParams, TrendingParams } from './params.ts';

export interface UserStats {
  total_comments: number;
  total_files: number;
  total_views: number;
  total_downloads: number;
  total_sales: number;
}

/** One UTC day of activity (api-daily), and the totals over the range in the same shape. */
export interface DayStats {
  views: number;
  unique_viewers: number;
  downloads: number;
  unique_downloaders: number;
  sales: number;
  comments: number;
}

export interface DailyStats { timezone: 'UTC'; from: string; to: string; days: (DayStats & { date: string })[]; totals: DayStats }
export interface TopFile { id: string; title: string; link: string; value: number }
export interface TrendingFile { id: string; title: string; link: string; category: string; unique_viewers: number; views: number }

export interface StatsQueryOptions {
  /** The public base URL the files' view-page links start with (as search results give them). */
  publicBaseUrl?: string;
  /** The clock that says which days and hours are the last ones (tests inject theirs). */
  now?: () => Date;
}

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const DAY_FIELDS = ['views', 'unique_viewers', 'downloads', 'unique_downloaders', 'sales', 'comments'] as const;
/** What api-top and api-trending show or filter by of a file. */
const FILE_FIELDS = ['title', 'category_id', 'category_name', 'enabled', 'deleted'];

const dayOf = (doc: Doc | undefined): DayStats => ({
  views: count(doc?.views), unique_viewers: count(doc?.unique_viewers), downloads: count(doc?.downloads),
  unique_downloaders: count(doc?.unique_downloaders), sales: count(doc?.sales), comments: count(doc?.comments),
});

/** Highest value first, then the lower file id: a stable order whatever the store returns. */
const byValueThenId = <T extends { fileId: number }>(value: (item: T) => number[]) => (a: T, b: T): number => {
  const va = value(a);
  const vb = value(b);
  for (let i = 0; i < va.length; i++) if (va[i] !== vb[i]) return (vb[i] ?? 0) - (va[i] ?? 0);
  return a.fileId - b.fileId;
};

/** Statistics of one user from the stats read model (all zero for a user with no activity). */
export const makeStatsQueries = (store: ReadStore, options: StatsQueryOptions = {}) => {
  const publicBaseUrl = options.publicBaseUrl ?? '';
  const now = options.now ?? (() => new Date());
  /** The stored facts of `fileIds`, by id (one `find` by `_id`). */
  const filesById = async (fileIds: readonly number[]): Promise<Map<number, Doc>> => new Map(fileIds.length === 0 ? []
    : (await store.find(STORED_FILES, { _id: { in: fileIds.map(String) } }, { fields: FILE_FIELDS })).map((doc) => [Number(doc._id), doc]));
  return {
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
    /**
     * api-daily: every UTC day of `from..to` (at most 366: params.ts), zeros included, for all the
     * user's files or one of them (the user's own, not deleted: else File not found), and the
     * totals. One `find` of the days' documents by `_id`. Unique counts are summed over the days:
     * an anonymous viewer's key changes every day, so nobody can be followed across days.
     */
    daily: async (userId: number, { from, to, fileId }: DailyParams): Promise<DailyStats> => {
      if (fileId !== undefined) {
        const file = await store.get(STORED_FILES, String(fileId));
        if (file === null || file.owner_id !== userId || file.deleted === true) throw notFound(M.fileNotFound);
      }
      const dates = daysFrom(from, to);
      const ids = dates.map((date) => (fileId === undefined ? dailyUserId(userId, date) : dailyFileId(fileId, date)));
      // The counters only: a popular day's sketches are kilobytes each, and the counts sit beside them.
      const docs = new Map((await store.find(fileId === undefined ? DAILY_USERS : DAILY_FILES, { _id: { in: ids } }, { fields: DAY_FIELDS })).map((d) => [d._id, d]));
      const days = dates.map((date, i) => ({ date, ...dayOf(docs.get(ids[i] ?? '')) }));
      const totals = dayOf(undefined);
      for (const day of days) for (const field of DAY_FIELDS) totals[field] += day[field];
      return { timezone: 'UTC', from, to, days, totals };
    },
    /**
     * api-top: the user's files not deleted with `metric` > 0 over the last `days` UTC days (today
     * included), highest first, then by id. One `find` of the user's days (index owner_id, date),
     * one of the files' facts by `_id`.
     */
    top: async (userId: number, { metric, days, limit }: TopParams): Promise<TopFile[]> => {
      const totals = new Map<number, number>();
      for (const doc of await store.find(DAILY_FILES, { owner_id: userId, date: { in: lastDays(now(), days) } }, { fields: ['file_id', metric] })) {
        const fileId = count(doc.file_id);
        totals.set(fileId, (totals.get(fileId) ?? 0) + count(doc[metric]));
      }
      const candidates = [...totals].filter(([, value]) => value > 0).map(([fileId, value]) => ({ fileId, value }));
      const files = await filesById(candidates.map((c) => c.fileId));
      return candidates
        .filter((c) => { const file = files.get(c.fileId); return file !== undefined && file.deleted !== true; })
        .sort(byValueThenId((c) => [c.value]))
        .slice(0, limit)
        .map((c) => ({ id: String(c.fileId), title: text(files.get(c.fileId)?.title), link: viewUrl(publicBaseUrl, c.fileId), value: c.value }));
    },
    /**
     * api-trending: every user's enabled, not-deleted files viewed in the last `hours` UTC hours
     * (the current one included), optionally of one category, by unique viewers over the window
     * (the union of the hours' sketches), then views, then id. One `find` of the window's hours'
     * counts (index hour), one of the files' facts by `_id`, and one of the sketches of the files
     * that can still rank (by `_id`): the bytes read follow the window's activity, and the sketches
     * only that of the files near the top.
     */
    trending: async ({ hours, categoryId, limit }: TrendingParams): Promise<TrendingFile[]> => {
      // First the hours' counts without their sketches: each file's views, and bounds of its
      // unique viewers over the window (at least its busiest hour's, at most the hours' sum).
      const perFile = new Map<number, { views: number; low: number; high: number; hours: string[] }>();
      for (const doc of await store.find(HOURLY_FILES, { hour: { in: lastHours(now(), hours) } }, { fields: ['file_id', 'views', 'unique_viewers'] })) {
        const fileId = count(doc.file_id);
        let entry = perFile.get(fileId);
        if (!entry) perFile.set(fileId, entry = { views: 0, low: 0, high: 0, hours: [] });
        const unique = count(doc.unique_viewers);
        entry.views += count(doc.views);
        entry.low = Math.max(entry.low, unique);
        entry.high += unique;
        entry.hours.push(doc._id);
      }
      const files = await filesById([...perFile.keys()]);
      const visible = (fileId: number): boolean => {
        const file = files.get(fileId);
        return file !== undefined && file.enabled === true && file.deleted !== true
          && (categoryId === undefined || file.category_id === categoryId);
      };
      const shown = [...perFile].filter(([fileId, entry]) => entry.views > 0 && visible(fileId));
      // Only a file that may rank among the first `limit` needs its hours' sketches merged: one
      // whose most possible unique viewers reach the `limit`-th best least possible.
      const lows = shown.map(([, entry]) => entry.low).sort((a, b) => b - a);
      const bar = lows.length < limit ? 0 : (lows[limit - 1] ?? 0);
      const contenders = shown.filter(([, entry]) => entry.high >= bar);
      const merging = contenders.filter(([, entry]) => entry.hours.length > 1);
      const sketches = new Map<number, UniqueCounter>();
      if (merging.length > 0) {
        const ids = merging.flatMap(([, entry]) => entry.hours);
        for (const doc of await store.find(HOURLY_FILES, { _id: { in: ids } }, { fields: ['file_id', 'viewers'] })) {
          const fileId = count(doc.file_id);
          let union = sketches.get(fileId);
          if (!union) sketches.set(fileId, union = UniqueCounter.empty(HOURLY_PRECISION));
          union.merge(UniqueCounter.decode(doc.viewers, HOURLY_PRECISION));
        }
      }
      // One hour's count is stored beside its sketch; several hours' is their sketches' union.
      const ranked = contenders.map(([fileId, entry]) => ({ fileId, views: entry.views, unique: sketches.get(fileId)?.count() ?? entry.low }));
      return ranked.sort(byValueThenId((r) => [r.unique, r.views])).slice(0, limit).map((r) => {
        const file = files.get(r.fileId);
        return {
          id: String(r.fileId), title: text(file?.title), link: viewUrl(publicBaseUrl, r.fileId),
          category: text(file?.category_name), unique_viewers: r.unique, views: r.views,
        };
      });
    },
  };
};
