import {
  conflict, M, notFound,
  type SealedSecret, type WebhookChanges, type WebhookDeleted, type WebhookDisabled, type WebhookDisableReason,
  type WebhookEventType, type WebhookRegistered, type WebhookReplayRequested, type WebhookSecretRotated,
  type WebhookTestRequested, type WebhookUpdated,
} from '@docshare/contracts';

/*
 * A user's webhook endpoints (issue 23): all of them on one stream, `webhooks-<ownerId>`, so the
 * per-user limit is decided at the stream's version (two registrations at once cannot both take
 * the tenth place), and the events reach the dispatcher on the owner's bus partition, before the
 * file events that follow them. Secrets are in the events sealed only; the fold keeps none: after
 * its creation (or rotation) answer, a secret is never shown again.
 */

export type WebhookEventBody =
  | { type: 'docs.webhook.registered.v1'; data: WebhookRegistered }
  | { type: 'docs.webhook.updated.v1'; data: WebhookUpdated }
  | { type: 'docs.webhook.deleted.v1'; data: WebhookDeleted }
  | { type: 'docs.webhook.secret_rotated.v1'; data: WebhookSecretRotated }
  | { type: 'docs.webhook.disabled.v1'; data: WebhookDisabled }
  | { type: 'docs.webhook.test_requested.v1'; data: WebhookTestRequested }
  | { type: 'docs.webhook.replay_requested.v1'; data: WebhookReplayRequested };

/** One live endpoint as its owner sees it. */
export interface WebhookEntry {
  webhookId: number;
  ownerId: number;
  url: string;
  events: WebhookEventType[];
  description: string;
  enabled: boolean;
  /** Why docshare disabled it; null when it is enabled or its owner disabled it. */
  disabledReason: WebhookDisableReason | null;
  createdAt: string;
}

/** The owner's live endpoints, oldest first (deleted ones leave the list). */
export interface WebhooksState { endpoints: readonly WebhookEntry[] }

export type ReplaySelector = { since: string; until: string } | { messageIds: string[] };

export type WebhookCommand =
  | { type: 'RegisterWebhook'; webhookId: number; ownerId: number; url: string; events: WebhookEventType[]; description: string; secret: SealedSecret; max: number; now: string }
  | { type: 'UpdateWebhook'; webhookId: number; ownerId: number; changes: WebhookChanges; now: string }
  | { type: 'DeleteWebhook'; webhookId: number; ownerId: number; now: string }
  | { type: 'RotateWebhookSecret'; webhookId: number; ownerId: number; secret: SealedSecret; previousValidUntil: string; now: string }
  | { type: 'DisableWebhook'; webhookId: number; ownerId: number; reason: WebhookDisableReason; now: string }
  | { type: 'RequestWebhookTest'; webhookId: number; ownerId: number; now: string }
  | { type: 'RequestWebhookReplay'; webhookId: number; ownerId: number; selector: ReplaySelector; now: string };

export const initialWebhooksState = (): WebhooksState => ({ endpoints: [] });

const replace = (state: WebhooksState, webhookId: number, change: (entry: WebhookEntry) => WebhookEntry | null): WebhooksState => ({
  endpoints: state.endpoints.flatMap((entry) => {
    if (entry.webhookId !== webhookId) return [entry];
    const next = change(entry);
    return next === null ? [] : [next];
  }),
});

export const evolveWebhooks = (state: WebhooksState, event: WebhookEventBody): WebhooksState => {
  switch (event.type) {
    case 'docs.webhook.registered.v1': {
      const d = event.data;
      if (state.endpoints.some((entry) => entry.webhookId === d.webhookId)) return state;
      return {
        endpoints: [...state.endpoints, {
          webhookId: d.webhookId, ownerId: d.ownerId, url: d.url, events: d.events, description: d.description,
          enabled: true, disabledReason: null, createdAt: d.createdAt,
        }],
      };
    }
    case 'docs.webhook.updated.v1': {
      const c = event.data.changes;
      return replace(state, event.data.webhookId, (entry) => ({
        ...entry,
        ...(c.url === undefined ? {} : { url: c.url }),
        ...(c.events === undefined ? {} : { events: c.events }),
        ...(c.description === undefined ? {} : { description: c.description }),
        // Enabled again (or disabled) by its owner: docshare's reason no longer holds.
        ...(c.enabled === undefined ? {} : { enabled: c.enabled, disabledReason: null }),
      }));
    }
    case 'docs.webhook.deleted.v1':
      return replace(state, event.data.webhookId, () => null);
    case 'docs.webhook.disabled.v1':
      return replace(state, event.data.webhookId, (entry) => ({ ...entry, enabled: false, disabledReason: event.data.reason }));
    case 'docs.webhook.secret_rotated.v1':
    case 'docs.webhook.test_requested.v1':
    case 'docs.webhook.replay_requested.v1':
      return state;
  }
};

/** The endpoint, when it is the owner's and live: anyone else's (or a deleted one) is not found, with no hint it exists. */
export const webhookOf = (state: WebhooksState, webhookId: number): WebhookEntry => {
  const entry = state.endpoints.find((candidate) => candidate.webhookId === webhookId);
  if (!entry) throw notFound(M.webhookNotFound);
  return entry;
};

/** The changes that change something (a PATCH repeating the current values records nothing). */
const effective = (entry: WebhookEntry, changes: WebhookChanges): WebhookChanges => {
  const out: WebhookChanges = {};
  if (changes.url !== undefined && changes.url !== entry.url) out.url = changes.url;
  if (changes.events !== undefined && changes.events.join(',') !== entry.events.join(',')) out.events = changes.events;
  if (changes.description !== undefined && changes.description !== entry.description) out.description = changes.description;
  if (changes.enabled !== undefined && changes.enabled !== entry.enabled) out.enabled = changes.enabled;
  return out;
};

export const decideWebhooks = (command: WebhookCommand, state: WebhooksState): WebhookEventBody[] => {
  const { webhookId, ownerId, now } = command;
  switch (command.type) {
    case 'RegisterWebhook':
      if (state.endpoints.some((entry) => entry.webhookId === webhookId)) return [];
      if (state.endpoints.length >= command.max) throw conflict(M.webhookLimitReached);
      return [{
        type: 'docs.webhook.registered.v1',
        data: { webhookId, ownerId, url: command.url, events: command.events, description: command.description, secret: command.secret, createdAt: now },
      }];
    case 'UpdateWebhook': {
      const changes = effective(webhookOf(state, webhookId), command.changes);
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'docs.webhook.updated.v1', data: { webhookId, ownerId, changes, updatedAt: now } }];
    }
    case 'DeleteWebhook':
      webhookOf(state, webhookId);
      return [{ type: 'docs.webhook.deleted.v1', data: { webhookId, ownerId, deletedAt: now } }];
    case 'RotateWebhookSecret':
      webhookOf(state, webhookId);
      return [{
        type: 'docs.webhook.secret_rotated.v1',
        data: { webhookId, ownerId, secret: command.secret, previousValidUntil: command.previousValidUntil, rotatedAt: now },
      }];
    case 'DisableWebhook': {
      const entry = webhookOf(state, webhookId);
      // Already disabled (by docshare or its owner): nothing more to record.
      if (!entry.enabled) return [];
      return [{ type: 'docs.webhook.disabled.v1', data: { webhookId, ownerId, reason: command.reason, disabledAt: now } }];
    }
    case 'RequestWebhookTest':
      webhookOf(state, webhookId);
      return [{ type: 'docs.webhook.test_requested.v1', data: { webhookId, ownerId, requestedAt: now } }];
    case 'RequestWebhookReplay': {
      if (!webhookOf(state, webhookId).enabled) throw conflict(M.webhookDisabled);
      const selector = command.selector;
      return [{
        type: 'docs.webhook.replay_requested.v1',
        data: 'messageIds' in selector
          ? { webhookId, ownerId, requestedAt: now, messageIds: selector.messageIds }
          : { webhookId, ownerId, requestedAt: now, since: selector.since, until: selector.until },
      }];
    }
  }
};
