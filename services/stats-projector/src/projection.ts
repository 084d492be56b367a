import { userViewer, type CloudEvent, type DocshareEvent, type StoredEvent } from '@docshare/contracts';
import { DAILY_PRECISION, HOURLY_PRECISION, UniqueCounter, utcDay, utcHour } from '@docshare/analytics';
import { guarded, known, type ReadOp } from '@docshare/projection';
import type { GuardedUpdate, ReadStore } from '@docshare/read-store';

export const STATS = 'stats';
/**
 * Per file: its owner and size, kept from the upload so that its deletion knows what it frees;
 * and the facts api-top and api-trending show or filter by (`title`, `category_id`,
 * `category_name`, `enabled`, `deleted`), so those read no other read model.
 */
export const STORED_FILES = 'stored_files';
/**
 * Per file and buyer (`<fileId>-<buyerId>`): the position of the first sale (`first_at`). A buyer
 * buys a file once (the file decider), but a log recorded before that rule may repeat a sale:
 * `total_sales` counts the first only.
 */
export const SOLD = 'sold';
/**
 * Per file and UTC day (`<fileId>:<YYYY-MM-DD>`): `file_id, owner_id, date`, the counters
 * `views, downloads, sales, comments`, and the sketches `viewers`, `downloaders` (DAILY_PRECISION)
 * with their counts `unique_viewers`, `unique_downloaders`.
 */
export const DAILY_FILES = 'daily_files';
/**
 * Per owner and UTC day (`<ownerId>:<YYYY-MM-DD>`): the same over all the owner's files. Its own
 * sketches, not a sum of the files': a viewer of two of the owner's files is one unique viewer.
 */
export const DAILY_USERS = 'daily_users';
/** Per file and UTC hour (`<fileId>:<YYYY-MM-DDTHH>`): `views`, `viewers` (HOURLY_PRECISION), `unique_viewers`: trending. */
export const HOURLY_FILES = 'hourly_files';

/** The sketch fields of the time-bucketed collections and the count each keeps beside its sketch. */
const SKETCHES = { viewers: 'unique_viewers', downloaders: 'unique_downloaders' } as const;
type SketchField = keyof typeof SKETCHES;
const PRECISION: Record<string, 12 | 14> = { [DAILY_FILES]: DAILY_PRECISION, [DAILY_USERS]: DAILY_PRECISION, [HOURLY_FILES]: HOURLY_PRECISION };

const soldId = (fileId: number, buyerId: number): string => `${fileId}-${buyerId}`;
export const dailyFileId = (fileId: number, day: string): string => `${fileId}:${day}`;
export const dailyUserId = (ownerId: number, day: string): string => `${ownerId}:${day}`;
export const hourlyFileId = (fileId: number, hour: string): string => `${fileId}:${hour}`;

/** A byte count as an `inc` accepts it: a non-negative finite number, else 0. */
const bytes = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);

const bump = (userId: number, by: Record<string, number>): ReadOp =>
  ({ collection: STATS, id: String(userId), update: { inc: by } });

/**
 * Per-user statistics (decisions §8): activity on the user's files, counted once per event. Also
 * `bytes_stored`, the size of the user's files not deleted: what the storage quota counts (never
 * shown by api-stats). `freed` is the size of the file a deletion removes, which the deletion event
 * does not carry: statsHandler looks it up in STORED_FILES. Views and downloads count in both
 * versions (v1 from older logs, in the file's stream; v2 recorded outside it): `total_views` keeps
 * its meaning, the owner's own views included.
 */
export const statsProjection = (event: DocshareEvent, freed = 0): ReadOp[] => {
  switch (event.type) {
    case 'docs.file.uploaded.v1': {
      const { fileId, ownerId, size, title, categoryId, categoryName } = event.data;
      return [
        bump(ownerId, { total_files: 1, bytes_stored: bytes(size) }),
        {
          collection: STORED_FILES, id: String(fileId), update: {
            set: { owner_id: ownerId, size: bytes(size), title, category_id: categoryId, category_name: categoryName, enabled: true, deleted: false },
          },
        },
      ];
    }
    case 'docs.file.updated.v1': {
      const { fileId, changes } = event.data;
      const set: Record<string, unknown> = {};
      if (typeof changes.title === 'string') set.title = changes.title;
      if (typeof changes.enabled === 'boolean') set.enabled = changes.enabled;
      return Object.keys(set).length === 0 ? [] : [{ collection: STORED_FILES, id: String(fileId), update: { set } }];
    }
    case 'docs.file.deleted.v1': return [
      bump(event.data.ownerId, { total_files: -1, bytes_stored: -bytes(freed) }),
      // A deleted file's title (its owner's personal data) goes: api-top and api-trending leave it out.
      { collection: STORED_FILES, id: String(event.data.fileId), update: { set: { deleted: true, title: '' } } },
    ];
    case 'docs.file.viewed.v1':
    case 'docs.file.viewed.v2': return [bump(event.data.ownerId, { total_views: 1 })];
    case 'docs.file.downloaded.v1':
    case 'docs.file.downloaded.v2': return [bump(event.data.ownerId, { total_downloads: 1 })];
    case 'docs.file.purchased.v1': return [bump(event.data.ownerId, { total_sales: 1 })];
    case 'docs.comment.posted.v1': return [bump(event.data.fileOwnerId, { total_comments: 1 })];
    default: return [];
  }
};

/** A key to add to a document's sketch (the document's update comes from the same event). */
export interface SketchKey { collection: string; id: string; field: SketchField; key: string }

/** The time of an event's activity: its data's own time, or the envelope's when that one is not a date. */
const timeOf = (dataTime: string, event: DocshareEvent): string => (Number.isNaN(Date.parse(dataTime)) ? event.time : dataTime);

/**
 * The time-bucketed counters of one event (daily per file and per owner, hourly per file for
 * views) and the viewer or downloader keys their sketches gain. Every update also sets the
 * document's identity fields, so that each document's updates in a batch merge into one write.
 * The owner's own views and downloads count, but add no key (not a unique viewer/downloader); a
 * v1 view carries no viewer and adds none. A purchase's counts are the handler's to skip when it
 * repeats a sale (first sales only, as `total_sales`).
 */
export const timeProjection = (event: DocshareEvent): { ops: ReadOp[]; keys: SketchKey[] } => {
  const daily = (fileId: number, ownerId: number, time: string, inc: Record<string, number>): ReadOp[] => {
    const date = utcDay(time);
    return [
      { collection: DAILY_FILES, id: dailyFileId(fileId, date), update: { set: { file_id: fileId, owner_id: ownerId, date }, inc } },
      { collection: DAILY_USERS, id: dailyUserId(ownerId, date), update: { set: { owner_id: ownerId, date }, inc } },
    ];
  };
  const dailyKeys = (fileId: number, ownerId: number, time: string, field: SketchField, key: string): SketchKey[] => {
    const date = utcDay(time);
    return [
      { collection: DAILY_FILES, id: dailyFileId(fileId, date), field, key },
      { collection: DAILY_USERS, id: dailyUserId(ownerId, date), field, key },
    ];
  };
  switch (event.type) {
    case 'docs.file.viewed.v1':
    case 'docs.file.viewed.v2': {
      const { fileId, ownerId } = event.data;
      const time = timeOf(event.data.viewedAt, event);
      const hour = utcHour(time);
      const hourly = hourlyFileId(fileId, hour);
      const ops: ReadOp[] = [
        ...daily(fileId, ownerId, time, { views: 1 }),
        { collection: HOURLY_FILES, id: hourly, update: { set: { file_id: fileId, owner_id: ownerId, hour }, inc: { views: 1 } } },
      ];
      if (event.type === 'docs.file.viewed.v1' || event.data.viewer === userViewer(ownerId)) return { ops, keys: [] };
      const viewer = event.data.viewer;
      return { ops, keys: [...dailyKeys(fileId, ownerId, time, 'viewers', viewer), { collection: HOURLY_FILES, id: hourly, field: 'viewers', key: viewer }] };
    }
    case 'docs.file.downloaded.v1':
    case 'docs.file.downloaded.v2': {
      const { fileId, ownerId, downloadedBy } = event.data;
      const time = timeOf(event.data.downloadedAt, event);
      const ops = daily(fileId, ownerId, time, { downloads: 1 });
      return { ops, keys: downloadedBy === ownerId ? [] : dailyKeys(fileId, ownerId, time, 'downloaders', userViewer(downloadedBy)) };
    }
    case 'docs.file.purchased.v1':
      return { ops: daily(event.data.fileId, event.data.ownerId, timeOf(event.data.purchasedAt, event), { sales: 1 }), keys: [] };
    case 'docs.comment.posted.v1':
      return { ops: daily(event.data.fileId, event.data.fileOwnerId, timeOf(event.data.postedAt, event), { comments: 1 }), keys: [] };
    default: return { ops: [], keys: [] };
  }
};

const docKey = (collection: string, id: string): string => `${collection}\u0000${id}`;

/**
 * Adds the batch's sketch keys to the sketches of their documents: one `find` per collection (by
 * `_id`), each document's stored sketch decoded, the batch's keys added, and, when that changed
 * it, the encoded sketch and its count set on the document's LAST update of the batch (so the
 * document's updates still merge into one write, and the sketch is recorded at the position of
 * the last event that touched it). A sketch is a set: a key added twice, by a redelivery or a
 * replay, changes nothing, so the sketch is exact under any batching.
 */
const addSketches = async (store: ReadStore, updates: GuardedUpdate[], keys: readonly SketchKey[]): Promise<void> => {
  if (keys.length === 0) return;
  const byCollection = new Map<string, Set<string>>();
  for (const { collection, id } of keys) {
    let ids = byCollection.get(collection);
    if (!ids) byCollection.set(collection, ids = new Set());
    ids.add(id);
  }
  const stored = new Map<string, Record<string, unknown>>();
  await Promise.all([...byCollection].map(async ([collection, ids]) => {
    for (const doc of await store.find(collection, { _id: { in: [...ids] } })) stored.set(docKey(collection, doc._id), doc);
  }));
  const counters = new Map<string, { counter: UniqueCounter; changed: boolean }>();
  for (const { collection, id, field, key } of keys) {
    const name = `${docKey(collection, id)}\u0000${field}`;
    let entry = counters.get(name);
    if (!entry) counters.set(name, entry = { counter: UniqueCounter.decode(stored.get(docKey(collection, id))?.[field], PRECISION[collection] ?? DAILY_PRECISION), changed: false });
    if (entry.counter.add(key)) entry.changed = true;
  }
  const last = new Map<string, GuardedUpdate>();
  for (const update of updates) last.set(docKey(update.collection, update.id), update);
  for (const { collection, id, field } of keys) {
    const entry = counters.get(`${docKey(collection, id)}\u0000${field}`);
    const update = last.get(docKey(collection, id));
    if (!entry?.changed || !update) continue;
    entry.changed = false;
    update.update = { ...update.update, set: { ...update.update.set, [field]: entry.counter.encode(), [SKETCHES[field]]: entry.counter.count() } };
  }
};

/**
 * Applies the stats projection to a batch of events in one bulk write, each document guarded by
 * the position of the last event it applied. A deletion needs the size its upload recorded: from
 * this batch when the upload is in it, else from the store (the upload is earlier in the same
 * partition, so applied already). The handler every runner of this read model uses (projector,
 * embedded mode, rebuild). `bytes_at`, the position of the last upload or deletion that changed
 * a user's `bytes_stored`, tells the storage quota which uploads the count already holds.
 *
 * Views and downloads: counters are guarded `inc`s as every other; a batch of a thousand views of
 * one file is a thousand updates of four documents, which the store merges into four writes.
 * Sketches cost one `find` per sketch collection per batch (addSketches).
 */
export const statsHandler = (store: ReadStore) => async (records: readonly StoredEvent<CloudEvent>[]): Promise<void> => {
  const updates: GuardedUpdate[] = [];
  const keys: SketchKey[] = [];
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
    const timed = timeProjection(event);
    if (event.type === 'docs.file.purchased.v1') {
      const id = soldId(event.data.fileId, event.data.buyerId);
      const first = firstSale.get(id) ?? record.position;
      firstSale.set(id, first);
      if (first < record.position) continue;
      updates.push(...guarded(record, [...statsProjection(event), { collection: SOLD, id, update: { set: { first_at: first } } }, ...timed.ops]));
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
    updates.push(...guarded(record, [...ops, ...timed.ops]));
    keys.push(...timed.keys);
  }
  await addSketches(store, updates, keys);
  await store.applyBatch(updates);
};
