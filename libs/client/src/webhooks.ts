// `client.webhooks`: the endpoints a user registers to be told about their files (issue 23;
// /api/V1/users/api-webhooks...). Calls go through the client's `call` (token, Idempotency-Key on
// every POST, retries, DocshareApiError), as every other method does.
import type { WebhookEventType } from './webhook-payloads.ts';

/** An endpoint as the API shows it (its secret never: that is shown once, by create and rotateSecret). */
export interface Webhook {
  id: number;
  url: string;
  events: WebhookEventType[];
  description: string;
  enabled: boolean;
  /** Why docshare disabled it: it answered 410 Gone, or failed every delivery for days (null: it did not). */
  disabled_reason: null | 'gone' | 'failing';
  created_at: string;
}

export interface CreateWebhookInput {
  /** https (http only where the server allows it), not resolving to a private address. */
  url: string;
  /** At least one of the event types. */
  events: WebhookEventType[];
  /** Up to 500 characters. */
  description?: string;
}
export interface CreateWebhookResponse {
  status: 'success';
  message: string;
  webhook: Webhook;
  /** `whsec_…`: signs every delivery. Shown this once: keep it where the receiver reads it. */
  secret: string;
}
export interface WebhooksResponse { status: 'success'; webhooks: Webhook[] }
export interface WebhookResponse { status: 'success'; webhook: Webhook }
export interface UpdateWebhookInput { url?: string; events?: WebhookEventType[]; description?: string; enabled?: boolean }
export interface UpdateWebhookResponse { status: 'success'; message: string; webhook: Webhook }
export interface DeleteWebhookResponse { status: 'success'; message: string }
export interface RotateSecretResponse {
  status: 'success';
  message: string;
  /** The new secret (shown once). */
  secret: string;
  /** Until then deliveries carry a signature under the previous secret too. */
  previous_secret_expires_at: string;
}
export interface TestWebhookResponse { status: 'success'; message: string; message_id: string }

/** One delivery attempt. */
export interface WebhookDelivery {
  /** The `webhook-id` header (the same for every attempt and replay of a message). */
  message_id: string;
  event_id: string;
  event_type: string;
  /** 1-based, within its round (a replay starts a new round). */
  attempt: number;
  attempted_at: string;
  outcome: 'succeeded' | 'failed';
  http_status: number | null;
  latency_ms: number;
  error: string | null;
}
export interface DeliveriesResponse { status: 'success'; deliveries: WebhookDelivery[]; next_cursor: string | null }
export interface DeliveriesQuery {
  status?: 'failed' | 'succeeded';
  /** A previous page's `next_cursor`. */
  cursor?: string;
  /** 1-100 (default 50). */
  limit?: number;
}

/** A message whose retries were all spent: kept, and replayable. */
export interface DeadLetter {
  message_id: string;
  event_id: string;
  event_type: string;
  event_time: string;
  attempts: number;
  last_http_status: number | null;
  last_error: string | null;
  dead_at: string;
}
export interface DeadLettersResponse { status: 'success'; dead_letters: DeadLetter[]; next_cursor: string | null }
export interface DeadLettersQuery { cursor?: string; limit?: number }

/** What to deliver again: the events in [since, until) (until: now), or the messages named (at most 100). */
export type ReplayInput = { since: string | Date; until?: string | Date } | { messageIds: string[] };
export interface ReplayResponse { status: 'success'; message: string; replay_id: string }

type Id = string | number;
/** The client's call (client.ts), as far as this module needs it. */
export type WebhookCall = <T>(
  spec: { method: 'GET' | 'POST' | 'PATCH' | 'DELETE'; path: string; auth: true; write?: boolean; json?: unknown },
  opts?: { signal?: AbortSignal; idempotencyKey?: string; retries?: number },
) => Promise<T>;
type Opts = Parameters<WebhookCall>[1];

const BASE = '/api/V1/users/api-webhooks';
const one = (id: Id): string => `${BASE}/${encodeURIComponent(String(id))}`;
const iso = (t: string | Date): string => (t instanceof Date ? t.toISOString() : t);
const query = (params: Record<string, string | number | undefined>): string => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
};

/**
 * Walks pages through `next_cursor` until it is null. A cursor the server sent before ends the
 * walk with an error instead of looping for ever.
 */
async function* walk<P extends { next_cursor: string | null }, T>(
  page: (cursor: string | undefined) => Promise<P>, items: (p: P) => T[],
): AsyncGenerator<T> {
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (;;) {
    const p = await page(cursor);
    yield* items(p);
    if (p.next_cursor === null || p.next_cursor === undefined || items(p).length === 0) return;
    if (seen.has(p.next_cursor)) throw new Error(`the server sent cursor ${JSON.stringify(p.next_cursor.slice(0, 40))} twice`);
    seen.add(p.next_cursor);
    cursor = p.next_cursor;
  }
}

/** The `webhooks` namespace of a client. */
export function webhooksApi(call: WebhookCall) {
  const deliveries = async (id: Id, q: DeliveriesQuery = {}, opts?: Opts): Promise<DeliveriesResponse> =>
    await call({ method: 'GET', path: `${one(id)}/deliveries${query({ status: q.status, cursor: q.cursor, limit: q.limit })}`, auth: true }, opts);
  const deadLetters = async (id: Id, q: DeadLettersQuery = {}, opts?: Opts): Promise<DeadLettersResponse> =>
    await call({ method: 'GET', path: `${one(id)}/dead-letters${query({ cursor: q.cursor, limit: q.limit })}`, auth: true }, opts);
  return {
    /** Registers an endpoint: the webhook and its secret (`whsec_…`, shown this once). At most 10 per user (the server's limit). */
    async create(input: CreateWebhookInput, opts?: Opts): Promise<CreateWebhookResponse> {
      return await call({ method: 'POST', path: BASE, auth: true, write: true, json: input }, opts);
    },
    /** Your endpoints, oldest first. */
    async list(opts?: Opts): Promise<WebhooksResponse> {
      return await call({ method: 'GET', path: BASE, auth: true }, opts);
    },
    async get(id: Id, opts?: Opts): Promise<WebhookResponse> {
      return await call({ method: 'GET', path: one(id), auth: true }, opts);
    },
    /** Changes an endpoint: url, events, description, enabled (re-enabling one docshare disabled). */
    async update(id: Id, changes: UpdateWebhookInput, opts?: Opts): Promise<UpdateWebhookResponse> {
      return await call({ method: 'PATCH', path: one(id), auth: true, write: true, json: changes }, opts);
    },
    /** Deletes an endpoint: nothing is delivered to it any more. */
    async remove(id: Id, opts?: Opts): Promise<DeleteWebhookResponse> {
      return await call({ method: 'DELETE', path: one(id), auth: true, write: true }, opts);
    },
    /** A new secret (shown once); the previous one keeps signing beside it for 24 hours. */
    async rotateSecret(id: Id, opts?: Opts): Promise<RotateSecretResponse> {
      return await call({ method: 'POST', path: `${one(id)}/rotate-secret`, auth: true, write: true }, opts);
    },
    /** Queues a `webhook.test` delivery to the endpoint now (even a disabled one); its message id. */
    async test(id: Id, opts?: Opts): Promise<TestWebhookResponse> {
      return await call({ method: 'POST', path: `${one(id)}/test`, auth: true, write: true }, opts);
    },
    /** One page of delivery attempts, newest first. */
    deliveries,
    /** Every delivery attempt (newest first), page after page. */
    async *allDeliveries(id: Id, q: Omit<DeliveriesQuery, 'cursor'> = {}, opts?: Opts): AsyncGenerator<WebhookDelivery> {
      yield* walk(async (cursor) => await deliveries(id, { ...q, ...(cursor !== undefined ? { cursor } : {}) }, opts), (p) => p.deliveries);
    },
    /** One page of dead letters (messages whose retries were spent), newest first. */
    deadLetters,
    /** Every dead letter, page after page. */
    async *allDeadLetters(id: Id, q: Omit<DeadLettersQuery, 'cursor'> = {}, opts?: Opts): AsyncGenerator<DeadLetter> {
      yield* walk(async (cursor) => await deadLetters(id, { ...q, ...(cursor !== undefined ? { cursor } : {}) }, opts), (p) => p.dead_letters);
    },
    /**
     * Delivers again, from the event log: the events in [since, until) (until: now), or the
     * messages named. Each keeps its `webhook-id`, so a receiver that deduplicates sees no double.
     */
    async replay(id: Id, input: ReplayInput, opts?: Opts): Promise<ReplayResponse> {
      const json = 'messageIds' in input ? { message_ids: input.messageIds }
        : { since: iso(input.since), ...(input.until !== undefined ? { until: iso(input.until) } : {}) };
      return await call({ method: 'POST', path: `${one(id)}/replay`, auth: true, write: true, json }, opts);
    },
  };
}

export type WebhooksApi = ReturnType<typeof webhooksApi>;
