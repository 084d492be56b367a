import { randomUUID } from 'node:crypto';
import type { CloudEvent, EventDataByType, EventType, SealedSecret, StoredEvent, WebhookEventType } from '@docshare/contracts';

/** Event times start here, one second apart. */
export const T0 = Date.UTC(2026, 10, 20, 10, 0, 0);

/**
 * A log for the dispatcher's tests: events with envelopes, UUID ids (as the write side gives
 * them: the webhook-id derives from them) and global positions.
 */
export const makeLog = () => {
  const records: StoredEvent<CloudEvent>[] = [];
  const at = (): string => new Date(T0 + records.length * 1_000).toISOString();
  const record = <T extends EventType>(type: T, subject: string, data: EventDataByType[T]): StoredEvent<CloudEvent> => {
    const stored = {
      position: records.length + 1,
      event: {
        specversion: '1.0', id: randomUUID(), source: '/docshare/test', type, time: at(), subject,
        datacontenttype: 'application/json', data, correlationid: 'req-1', causationid: 'req-1', streamversion: 1,
      } as CloudEvent,
    };
    records.push(stored);
    return stored;
  };
  const sealed = (name: string): SealedSecret => ({ kid: 'k1', iv: name, ct: name, tag: name });
  return {
    records,
    sealed,
    register: (webhookId: number, ownerId: number, events: WebhookEventType[] = ['file.uploaded'], url = `https://hooks.example/${webhookId}`) =>
      record('docs.webhook.registered.v1', `webhooks-${ownerId}`, {
        webhookId, ownerId, url, events, description: '', secret: sealed(`s${webhookId}`), createdAt: at(),
      }),
    update: (webhookId: number, ownerId: number, changes: EventDataByType['docs.webhook.updated.v1']['changes']) =>
      record('docs.webhook.updated.v1', `webhooks-${ownerId}`, { webhookId, ownerId, changes, updatedAt: at() }),
    remove: (webhookId: number, ownerId: number) =>
      record('docs.webhook.deleted.v1', `webhooks-${ownerId}`, { webhookId, ownerId, deletedAt: at() }),
    rotate: (webhookId: number, ownerId: number, secret: string, previousValidUntil: number) =>
      record('docs.webhook.secret_rotated.v1', `webhooks-${ownerId}`, {
        webhookId, ownerId, secret: sealed(secret), previousValidUntil: new Date(previousValidUntil).toISOString(), rotatedAt: at(),
      }),
    disable: (webhookId: number, ownerId: number, reason: 'gone' | 'failing' = 'gone') =>
      record('docs.webhook.disabled.v1', `webhooks-${ownerId}`, { webhookId, ownerId, reason, disabledAt: at() }),
    test: (webhookId: number, ownerId: number) =>
      record('docs.webhook.test_requested.v1', `webhooks-${ownerId}`, { webhookId, ownerId, requestedAt: at() }),
    replaySince: (webhookId: number, ownerId: number, since: number, until: number) =>
      record('docs.webhook.replay_requested.v1', `webhooks-${ownerId}`, {
        webhookId, ownerId, requestedAt: at(), since: new Date(since).toISOString(), until: new Date(until).toISOString(),
      }),
    upload: (fileId: number, ownerId: number) =>
      record('docs.file.uploaded.v1', `file-${fileId}`, {
        fileId, ownerId, ownerName: `user${ownerId}`, title: `t${fileId}`, description: '', tags: [], categoryId: 1,
        categoryName: 'General', license: 'CC BY', videoUrl: null, originalFileName: `f${fileId}.txt`, contentType: 'text/plain',
        size: 3, blobKey: `f${fileId}`, uploadedAt: at(),
      }),
    view: (fileId: number, ownerId: number) =>
      record('docs.file.viewed.v1', `file-${fileId}`, { fileId, ownerId, viewedAt: at() }),
    fileDeleted: (fileId: number, ownerId: number) =>
      record('docs.file.deleted.v1', `file-${fileId}`, { fileId, ownerId, blobKey: `f${fileId}`, deletedAt: at() }),
  };
};
