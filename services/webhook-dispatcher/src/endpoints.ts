import type {
  CloudEvent, StoredEvent, WebhookRegistered, WebhookSecretRotated, WebhookUpdated,
} from '@docshare/contracts';
import type { EndpointRecord } from '@docshare/webhooks/store';

/**
 * The dispatcher's read model of the webhook events: one EndpointRecord per endpoint, folded from
 * `docs.webhook.*` (what the dispatcher needs to deliver: where, which types, whether enabled, the
 * sealed secrets). Pure, so a redelivered batch folds to the same records: an event at or before
 * the record's `position` changes nothing (the store guards the same way, applyEndpoints).
 */

/** The event types that change an endpoint's record (test and replay requests do not). */
export const ENDPOINT_EVENT_TYPES: ReadonlySet<string> = new Set([
  'docs.webhook.registered.v1', 'docs.webhook.updated.v1', 'docs.webhook.deleted.v1', 'docs.webhook.secret_rotated.v1',
  'docs.webhook.disabled.v1',
]);

/** The endpoint an endpoint event is about, or null for any other event. */
export const endpointEventOf = (event: CloudEvent): { webhookId: number; ownerId: number } | null => {
  if (!ENDPOINT_EVENT_TYPES.has(event.type)) return null;
  const data = event.data as { webhookId?: unknown; ownerId?: unknown } | null;
  return typeof data?.webhookId === 'number' && typeof data.ownerId === 'number' ? { webhookId: data.webhookId, ownerId: data.ownerId } : null;
};

/**
 * `current` (null: none yet) after one endpoint event; `current` itself when the event is older
 * than the record or is not an endpoint event, null when there is no record to change (an update
 * of an endpoint registered before the log the dispatcher reads: nothing to deliver to).
 */
export const foldEndpoint = (current: EndpointRecord | null, stored: StoredEvent<CloudEvent>): EndpointRecord | null => {
  const { event, position } = stored;
  if (current !== null && position <= current.position) return current;
  switch (event.type) {
    case 'docs.webhook.registered.v1': {
      const e = event.data as WebhookRegistered;
      return {
        webhookId: e.webhookId, ownerId: e.ownerId, url: e.url, events: [...e.events], enabled: true, deleted: false,
        secrets: [{ sealed: e.secret, validUntil: null }], position,
      };
    }
    case 'docs.webhook.updated.v1': {
      if (current === null) return null;
      const { changes } = event.data as WebhookUpdated;
      return {
        ...current,
        ...(changes.url === undefined ? {} : { url: changes.url }),
        ...(changes.events === undefined ? {} : { events: [...changes.events] }),
        ...(changes.enabled === undefined ? {} : { enabled: changes.enabled }),
        position,
      };
    }
    case 'docs.webhook.deleted.v1': {
      if (current === null) return null;
      // Nothing is delivered to a deleted endpoint: its record forgets the URL (personal data, issue 24:
      // an erasure deletes the user's endpoints first) and its sealed secrets.
      return { ...current, deleted: true, url: '', secrets: [], position };
    }
    case 'docs.webhook.secret_rotated.v1': {
      if (current === null) return null;
      const e = event.data as WebhookSecretRotated;
      // The new secret signs first; the one it replaces beside it until previousValidUntil. An
      // older rotated-out secret is dropped: a rotation ends the previous one's overlap.
      const previous = current.secrets[0];
      return {
        ...current,
        secrets: [
          { sealed: e.secret, validUntil: null },
          ...(previous === undefined ? [] : [{ sealed: previous.sealed, validUntil: Date.parse(e.previousValidUntil) }]),
        ],
        position,
      };
    }
    case 'docs.webhook.disabled.v1': {
      if (current === null) return null;
      return { ...current, enabled: false, position };
    }
    default:
      return current;
  }
};

/** The secrets that sign a delivery at `now`: the current one, and a rotated-out one while its overlap lasts. */
export const signingSecrets = (record: EndpointRecord, now: number): EndpointRecord['secrets'] =>
  record.secrets.filter((secret) => secret.validUntil === null || secret.validUntil > now);

/** Whether the endpoint takes messages of `type` (a test message goes to the endpoint it names, whatever it subscribes to). */
export const subscribes = (record: EndpointRecord, type: string): boolean =>
  !record.deleted && (record.events as readonly string[]).includes(type);
