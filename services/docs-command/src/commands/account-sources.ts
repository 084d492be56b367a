import type { ConsistencyGate } from '@docshare/consistency';
import type { ReadStore } from '@docshare/read-store';
import type { makeFilesQueries } from '@docshare/files-projector';
import type { makeStatsQueries } from '@docshare/stats-projector';
import type { ErasureReadModel } from './accounts.ts';
import type { ExportSources } from './exports.ts';

type Page = { page: number; perPage: number };
const PAGE = 100;
const DAY_MS = 86_400_000;

/** Every page of a paged answer, in order (a user's files and purchases: what the export holds). */
const allPages = async <T>(pageOf: (page: Page) => Promise<{ items: T[]; total: number }>): Promise<T[]> => {
  const all: T[] = [];
  for (let page = 1; ; page += 1) {
    const { items, total } = await pageOf({ page, perPage: PAGE });
    all.push(...items);
    if (items.length < PAGE || all.length >= total) return all;
  }
};

/** Waits, as long as it takes, until each gate's read model has applied the log up to `position`. */
const reached = async (gates: readonly ConsistencyGate[], position: number): Promise<void> => {
  await Promise.all(gates.map(async (gate) => {
    while (!(await gate.wait(position, 30_000))) { /* a read model behind: wait again */ }
  }));
};

export interface AccountSourcesDeps {
  /** The files projector's store (read-only here) and its queries. */
  filesStore: ReadStore;
  filesQueries: ReturnType<typeof makeFilesQueries>;
  statsQueries: ReturnType<typeof makeStatsQueries>;
  /** The files projector's gate first, then the other read models' (an export waits for all). */
  gates: readonly [ConsistencyGate, ...ConsistencyGate[]];
  idempotency: { removeScope(prefix: string): Promise<number> };
  /** api-purchases' answer for a page (docs-command signs its links). */
  purchases(userId: number, page: Page): Promise<{ data: unknown[]; total: number }>;
  now?: () => Date;
}

/**
 * What the accounts process manager reads, from the read models as the API answers them, in both
 * modes (embedded: the in-memory stores; distributed: docs-command's read-only view of MongoDB).
 */
export const accountSources = (deps: AccountSourcesDeps): { readModel: ErasureReadModel; exportSources: ExportSources; idempotency: AccountSourcesDeps['idempotency'] } => {
  const { filesStore, filesQueries, statsQueries, gates } = deps;
  const now = deps.now ?? (() => new Date());
  const fileIds = async (userId: number): Promise<number[]> => {
    const ids: number[] = [];
    for (let after = 0; ;) {
      const page = await filesQueries.fileIdsOf(userId, after, 1_000);
      ids.push(...page);
      if (page.length < 1_000) return ids;
      after = page.at(-1)!;
    }
  };
  return {
    idempotency: deps.idempotency,
    readModel: {
      fileIdsOf: (ownerId, afterFileId, limit) => filesQueries.fileIdsOf(ownerId, afterFileId, limit),
      countDeletedFilesOf: (ownerId) => filesStore.count('files', { owner_id: ownerId, deleted: true }),
      deletedFileIdsOf: async (ownerId, afterFileId, limit) => (await filesStore.find('files', { owner_id: ownerId, deleted: true }, {
        sort: [['file_id', 1]], after: afterFileId, limit, fields: ['file_id'],
      })).map((doc) => Number(doc.file_id)),
      countCommentsBy: (authorId) => filesQueries.countCommentsBy(authorId),
      applied: (position) => reached([gates[0]], position),
    },
    exportSources: {
      files: (userId) => allPages(async (page) => {
        const answer = await filesQueries.filesOf(userId, userId, page).catch(() => null);
        return answer === null ? { items: [], total: 0 } : { items: answer.files, total: answer.total };
      }),
      commentsWritten: (userId) => filesQueries.commentsWrittenBy(userId),
      purchases: (userId) => allPages(async (page) => {
        const answer = await deps.purchases(userId, page);
        return { items: answer.data, total: answer.total };
      }),
      stats: (userId) => statsQueries.statsOf(userId),
      daily: async (userId) => {
        const to = now();
        const day = (d: Date): string => d.toISOString().slice(0, 10);
        const daily = await statsQueries.daily(userId, { from: day(new Date(to.getTime() - 365 * DAY_MS)), to: day(to) });
        const active = daily.days.filter((d) => Object.entries(d).some(([field, value]) => field !== 'date' && typeof value === 'number' && value > 0));
        return active.length === 0 ? null : active;
      },
      fileIds,
      applied: (position) => reached(gates, position),
    },
  };
};
