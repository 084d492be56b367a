import {
  invalid, M, WEBHOOK_DISABLE_REASONS, type WebhookDisableReason, notFound, oneLine, positiveId, storableText, WEBHOOK_EVENT_TYPES, WEBHOOK_MESSAGE_ID, type WebhookEventType,
} from '@docshare/contracts';
import type { WebhookInput } from '../commands/webhooks.ts';
import type { ReplaySelector } from '../commands/domain/webhook.ts';

/*
 * The webhooks API's input (docs/api-decisions.md, "Webhooks"), checked at the edge in the order
 * the messages are documented: url, events, description. Whether the URL's host is a public one is
 * the use case's (it resolves it).
 */

/** A webhook description's most characters. */
export const WEBHOOK_DESCRIPTION_MAX = 500;
/** Most message ids in one replay. */
export const REPLAY_MAX_MESSAGES = 100;

const urlOf = (value: unknown): string => {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) throw invalid(M.webhookUrlRequired);
  if (typeof value !== 'string') throw invalid(M.webhookUrlInvalid);
  return value.trim();
};

const KNOWN_TYPES: ReadonlySet<string> = new Set(WEBHOOK_EVENT_TYPES);

/** The subscribed types, each once, in the catalogue's order. */
const eventsOf = (value: unknown): WebhookEventType[] => {
  if (!Array.isArray(value) || value.length === 0 || value.length > 100) throw invalid(M.webhookEventsRequired);
  for (const type of value) {
    if (typeof type !== 'string') throw invalid(M.webhookEventsRequired);
    if (!KNOWN_TYPES.has(type)) throw invalid(M.webhookEventUnknown);
  }
  return WEBHOOK_EVENT_TYPES.filter((type) => value.includes(type));
};

const descriptionOf = (value: unknown): string => {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw invalid(M.webhookDescriptionInvalid);
  const kept = oneLine(value).trim();
  if (kept.length > WEBHOOK_DESCRIPTION_MAX) throw invalid(M.webhookDescriptionTooLong);
  if (!storableText(kept)) throw invalid(M.webhookDescriptionInvalid);
  return kept;
};

/** POST api-webhooks: `{url, events, description?}`. */
export const parseWebhookInput = (body: Record<string, unknown>): WebhookInput => ({
  url: urlOf(body.url), events: eventsOf(body.events), description: descriptionOf(body.description),
});

/** PATCH api-webhooks/{id}: any of url, events, description, enabled; at least one. */
export const parseWebhookChanges = (body: Record<string, unknown>): Partial<WebhookInput> & { enabled?: boolean } => {
  const changes: Partial<WebhookInput> & { enabled?: boolean } = {};
  if (body.url !== undefined) changes.url = urlOf(body.url);
  if (body.events !== undefined) changes.events = eventsOf(body.events);
  if (body.description !== undefined) changes.description = descriptionOf(body.description);
  if (body.enabled !== undefined) {
    if (typeof body.enabled !== 'boolean') throw invalid(M.webhookEnabledInvalid);
    changes.enabled = body.enabled;
  }
  if (Object.keys(changes).length === 0) throw invalid(M.webhookNothingToUpdate);
  return changes;
};

/** A webhook id in a path: anything but a positive integer is an endpoint that does not exist. */
export const parseWebhookId = (value: unknown): number => {
  const id = positiveId(value);
  if (id === null) throw notFound(M.webhookNotFound);
  return id;
};

/** An ISO 8601 time with a date and a time (what `new Date().toISOString()` writes, or with an offset). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const timeOf = (value: unknown): number => {
  if (typeof value !== 'string' || !ISO_TIME.test(value)) throw invalid(M.replayTimeInvalid);
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw invalid(M.replayTimeInvalid);
  return ms;
};

/** POST api-webhooks/{id}/replay: `{since, until?}` (until: now) or `{message_ids}`. */
export const parseReplay = (body: Record<string, unknown>, now: Date): ReplaySelector => {
  if (body.message_ids !== undefined) {
    const ids = body.message_ids;
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > REPLAY_MAX_MESSAGES
      || !ids.every((id) => typeof id === 'string' && WEBHOOK_MESSAGE_ID.test(id))) throw invalid(M.replayMessageIdsInvalid);
    return { messageIds: [...new Set(ids as string[])] };
  }
  if (body.since === undefined) throw invalid(M.replayRangeRequired);
  const since = timeOf(body.since);
  const until = body.until === undefined ? now.getTime() : timeOf(body.until);
  if (until <= since) throw invalid(M.replayRangeOrder);
  return { since: new Date(since).toISOString(), until: new Date(until).toISOString() };
};

/** GET api-webhooks/{id}/deliveries and dead-letters: status (deliveries only), cursor, limit (1–100, 50). */
export const parseDeliveriesQuery = (query: Record<string, unknown>, withStatus: boolean): { outcome?: 'succeeded' | 'failed'; cursor?: string; limit: number } => {
  const out: { outcome?: 'succeeded' | 'failed'; cursor?: string; limit: number } = { limit: 50 };
  if (withStatus && query.status !== undefined) {
    if (query.status !== 'failed' && query.status !== 'succeeded') throw invalid(M.deliveriesStatusInvalid);
    out.outcome = query.status;
  }
  if (query.cursor !== undefined) {
    if (typeof query.cursor !== 'string' || query.cursor === '' || query.cursor.length > 512) throw invalid(M.invalidCursor);
    out.cursor = query.cursor;
  }
  if (query.limit !== undefined) {
    const limit = typeof query.limit === 'string' && /^\d{1,3}$/.test(query.limit) ? Number(query.limit) : Number.NaN;
    out.limit = Number.isInteger(limit) && limit >= 1 ? Math.min(limit, 100) : 50;
  }
  return out;
};

/** The dispatcher's report (internal route): `{owner_id, reason}`. */
export const parseDisableReport = (body: Record<string, unknown>): { ownerId: number; reason: WebhookDisableReason } => {
  const ownerId = positiveId(body.owner_id);
  const reason = WEBHOOK_DISABLE_REASONS.find((known) => known === body.reason);
  if (ownerId === null || reason === undefined) throw invalid(M.badRequest);
  return { ownerId, reason };
};
