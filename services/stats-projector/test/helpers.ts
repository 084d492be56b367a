import type { DocshareEvent, EventDataByType, StoredEvent } from '@docshare/contracts';
import { makeMemoryReadStore, type ReadStore } from '@docshare/read-store';
import { makeHistory } from '@docshare/projection/testing';
import { DAILY_FILES, DAILY_USERS, HOURLY_FILES, SOLD, STATS, STORED_FILES, statsHandler } from '../src/projection.ts';

/**
 * makeHistory plus the events recorded outside a file's stream (views and downloads v2): subject
 * `file-<id>`, streamversion 0, at the next global position, as appendUnversioned records them.
 */
export const makeAnalyticsHistory = () => {
  const h = makeHistory();
  const unversioned = <T extends 'docs.file.viewed.v2' | 'docs.file.downloaded.v2'>(type: T, fileId: number, data: EventDataByType[T], time: string): StoredEvent => {
    const event = {
      specversion: '1.0', id: `evt-${h.records.length + 1}`, source: '/docshare/test', type, time, subject: `file-${fileId}`,
      datacontenttype: 'application/json', data, correlationid: 'req-1', causationid: 'req-1', streamversion: 0,
    } as DocshareEvent;
    const stored = { position: h.records.length + 1, event };
    h.records.push(stored);
    return stored;
  };
  const viewV2 = (fileId: number, ownerId: number, viewer: string, viewedAt = '2026-11-20T10:31:00.000Z') =>
    unversioned('docs.file.viewed.v2', fileId, { fileId, ownerId, viewer, viewedAt }, viewedAt);
  const downloadV2 = (fileId: number, ownerId: number, downloadedBy: number, downloadedAt = '2026-11-20T10:32:00.000Z') =>
    unversioned('docs.file.downloaded.v2', fileId, { fileId, ownerId, downloadedBy, downloadedAt }, downloadedAt);
  return { ...h, viewV2, downloadV2 };
};

export const COLLECTIONS = [STATS, STORED_FILES, SOLD, DAILY_FILES, DAILY_USERS, HOURLY_FILES];

/** Projects `records` one at a time, or as the given batches, into a fresh memory store. */
export const projected = async (records: readonly StoredEvent[], batches: readonly (readonly StoredEvent[])[] = records.map((r) => [r])): Promise<ReadStore> => {
  const store = makeMemoryReadStore();
  const handle = statsHandler(store);
  for (const batch of batches) await handle(batch);
  return store;
};

/** Every document of the stats read model, by collection: what two projections must agree on. */
export const snapshot = async (store: ReadStore): Promise<Record<string, unknown[]>> =>
  Object.fromEntries(await Promise.all(COLLECTIONS.map(async (c) => [c, await store.find(c, {})] as const)));
