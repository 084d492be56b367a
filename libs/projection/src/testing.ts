import type { DocshareEvent, EventDataByType, EventType, StoredEvent } from '@docshare/contracts';

/**
 * Builds a realistic history for projection tests: events get envelopes, per-stream versions and
 * global positions as the event store would give them.
 */
export const makeHistory = () => {
  const versions = new Map<string, number>();
  const records: StoredEvent[] = [];
  let minute = 0;
  const record = <T extends EventType>(type: T, subject: string, data: EventDataByType[T]): StoredEvent => {
    const version = (versions.get(subject) ?? 0) + 1;
    versions.set(subject, version);
    const event = {
      specversion: '1.0', id: `evt-${records.length + 1}`, source: '/docshare/test', type,
      time: new Date(Date.UTC(2026, 10, 20, 10, minute++)).toISOString(), subject, datacontenttype: 'application/json',
      data, correlationid: 'req-1', causationid: 'req-1', streamversion: version,
    } as DocshareEvent;
    const stored = { position: records.length + 1, event };
    records.push(stored);
    return stored;
  };
  const at = (m: number): string => new Date(Date.UTC(2026, 10, 20, 10, m)).toISOString();
  const user = (userId: number, name: string) =>
    record('docs.user.registered.v1', `user-${userId}`, { userId, name, email: `${name.toLowerCase()}@example.com`, registeredAt: at(0) });
  const category = (categoryId: number, name: string) =>
    record('docs.category.created.v1', `category-${categoryId}`, { categoryId, name, description: `${name} things`, tags: ['a', 'b'], createdBy: 1, createdAt: at(0) });
  const upload = (fileId: number, ownerId: number, title: string, extra: Partial<EventDataByType['docs.file.uploaded.v1']> = {}) =>
    record('docs.file.uploaded.v1', `file-${fileId}`, {
      fileId, ownerId, ownerName: `user${ownerId}`, title, description: `About ${title}`, tags: ['tag'], categoryId: 1,
      categoryName: 'General', license: 'CC BY', videoUrl: null, originalFileName: `${title}.txt`, contentType: 'text/plain',
      size: 3, blobKey: `f${fileId}`, uploadedAt: at(fileId), ...extra,
    });
  const update = (fileId: number, ownerId: number, changes: EventDataByType['docs.file.updated.v1']['changes']) =>
    record('docs.file.updated.v1', `file-${fileId}`, { fileId, ownerId, changes, updatedAt: at(30) });
  const remove = (fileId: number, ownerId: number) =>
    record('docs.file.deleted.v1', `file-${fileId}`, { fileId, ownerId, blobKey: `f${fileId}`, deletedAt: at(40) });
  const view = (fileId: number, ownerId: number) =>
    record('docs.file.viewed.v1', `file-${fileId}`, { fileId, ownerId, viewedAt: at(31) });
  const download = (fileId: number, ownerId: number, by: number) =>
    record('docs.file.downloaded.v1', `file-${fileId}`, { fileId, ownerId, downloadedBy: by, downloadedAt: at(32) });
  const purchase = (fileId: number, ownerId: number, saleId: number, buyerId: number) =>
    record('docs.file.purchased.v1', `file-${fileId}`, { fileId, ownerId, saleId, buyerId, price: 2, purchasedAt: at(33) });
  const comment = (commentId: number, fileId: number, fileOwnerId: number, authorId: number, text: string, title = 'T') =>
    record('docs.comment.posted.v1', `file-${fileId}`, {
      commentId, fileId, fileOwnerId, fileTitle: title, authorId, comment: text, postedAt: at(34 + commentId),
    });
  const extracted = (fileId: number, ownerId: number, text: string) =>
    record('docs.file.content-extracted.v1', `file-${fileId}`, {
      fileId, ownerId, blobKey: `f${fileId}`, format: 'text', extractor: 'test@1', characters: text.length, truncated: false,
      language: null, text, durationMs: 1, extractedAt: at(35),
    });
  const extractionFailed = (fileId: number, ownerId: number) =>
    record('docs.file.content-extraction-failed.v1', `file-${fileId}`, {
      fileId, ownerId, blobKey: `f${fileId}`, format: 'pdf', reason: 'encrypted', detail: 'password required', durationMs: 1, failedAt: at(35),
    });
  const erased = (userId: number, counts: { filesDeleted?: number; commentsRedacted?: number } = {}) =>
    record('docs.user.erased.v1', `user-${userId}`, {
      userId, erasureId: `erasure-${userId}`, filesDeleted: counts.filesDeleted ?? 0, commentsRedacted: counts.commentsRedacted ?? 0, erasedAt: at(50),
    });
  return { records, user, category, upload, update, remove, view, download, purchase, comment, extracted, extractionFailed, erased };
};

/** Every record twice in a row (a redelivery after each), then the whole history again (a replay). */
export const deliveredTwice = (records: readonly StoredEvent[]): StoredEvent[] =>
  [...records.flatMap((r) => [r, r]), ...records];

/** `records` cut into consecutive batches of `size` (the last may be shorter). */
export const inBatches = <T>(records: readonly T[], size: number): T[][] => {
  const batches: T[][] = [];
  for (let i = 0; i < records.length; i += size) batches.push(records.slice(i, i + size));
  return batches;
};

/**
 * Batches of `size` as a redelivering bus hands them over: each batch comes again, whole, after
 * the next one began (a crash between applying a batch and committing it), so every batch is
 * applied twice and some documents see it half-applied already.
 */
export const redeliveredBatches = <T>(records: readonly T[], size: number): T[][] => {
  const batches = inBatches(records, size);
  return batches.flatMap((batch, i) => (i === 0 ? [batch] : [[...batches[i - 1]!.slice(Math.floor(size / 2)), ...batch], batch]));
};
