import { randomBytes, randomUUID } from 'node:crypto';
import { hashPassword } from '@docshare/auth';
import type { ClaimStore } from '@docshare/claim-store';
import { EVENT_SOURCE, streamIds, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import type { EventStore } from '@docshare/event-store';

/*
 * What docshare 0.2.0 wrote, for the migration's tests (infra/test/migrate*.test.ts): plain events
 * (personal fields in clear, no `personaldata`) through the raw event store, and account claims
 * keyed by the plain e-mail with the name in clear. Every personal value holds `marker`, so a test
 * can look for it in every byte the stores keep.
 */

export interface V020Data {
  /** In every personal value written: none of it may be found in clear after the migration. */
  marker: string;
  email: string;
  userId: number;
  /** Every event as the store gave it back, copied. */
  events: StoredEvent<CloudEvent>[];
}

const AT = '2026-01-02T03:04:05.000Z';

const event = (type: string, subject: string, streamversion: number, data: unknown): CloudEvent => ({
  specversion: '1.0', id: randomUUID(), source: EVENT_SOURCE, type, time: AT, subject, datacontenttype: 'application/json', data,
  correlationid: 'req-1', causationid: 'req-1', streamversion,
});

/**
 * Two users (one with the marker), a file of the first with an update, a view (unversioned), a
 * comment of the second on it and its extracted text; ids reserved through `nextId` as 0.2.0 did.
 */
export async function writeV020Data(store: EventStore, claims: ClaimStore, password: string): Promise<V020Data> {
  const marker = `zqmarker${randomBytes(5).toString('hex')}`;
  const email = `${marker}@example.com`;
  const userId = await store.nextId('user');
  const other = await store.nextId('user');
  const fileId = await store.nextId('file');
  const user = streamIds.user(userId);
  const file = streamIds.file(fileId);
  await store.append(user, 0, [event('docs.user.registered.v1', user, 1, { userId, name: `Ann ${marker}`, email, registeredAt: AT })]);
  await store.append(streamIds.user(other), 0, [event('docs.user.registered.v1', streamIds.user(other), 1, {
    userId: other, name: 'Bob', email: 'bob@example.com', registeredAt: AT,
  })]);
  await store.append(file, 0, [
    event('docs.file.uploaded.v1', file, 1, {
      fileId, ownerId: userId, ownerName: `Ann ${marker}`, title: `Title ${marker}`, description: `About ${marker}`, tags: [marker, 'x'],
      categoryId: 1, categoryName: 'Science', license: 'cc-by', videoUrl: `https://v.example/${marker}`, originalFileName: `${marker}.pdf`,
      contentType: 'application/pdf', size: 1234, blobKey: 'blobs/1', uploadedAt: AT,
    }),
    event('docs.file.updated.v1', file, 2, { fileId, ownerId: userId, changes: { title: `New ${marker}`, price: 5 }, updatedAt: AT }),
  ]);
  await store.appendUnversioned([event('docs.file.viewed.v2', file, 0, { fileId, ownerId: userId, viewer: `u:${other}`, viewedAt: AT })]);
  await store.append(file, 2, [
    event('docs.comment.posted.v1', file, 3, {
      commentId: 1, fileId, fileOwnerId: userId, fileTitle: `New ${marker}`, authorId: other, comment: `Bob on ${marker}`, postedAt: AT,
    }),
    event('docs.file.content-extracted.v1', file, 4, {
      fileId, ownerId: userId, blobKey: 'blobs/1', format: 'pdf', extractor: 'pdfjs-dist@1', text: `The text ${marker} inside`, chars: 20, extractedAt: AT,
    }),
  ]);
  const events = await store.readAll(0, 1_000);
  await claims.claim('account', email, { userId, name: `Ann ${marker}`, passwordHash: await hashPassword(password, 4) });
  await claims.claim('account', 'bob@example.com', { userId: other, name: 'Bob', passwordHash: await hashPassword(password, 4) });
  return { marker, email, userId, events: events.map((record) => ({ position: record.position, event: structuredClone(record.event) })) };
}
