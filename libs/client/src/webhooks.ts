// `client.webhooks`: the endpoints a user registers to be told about their files (issue 23;
// /api/V1/users/api-webhooks...). Calls go through the client's `call` (token, Idempotency-Key on
// every POST, retries, DocshareApiError), as every other method does.
import type { components } from './openapi.ts';
import type { JsonRequest, QueryOf, SuccessBody } from './types.ts';

/** An endpoint as the API shows it (its secret never: create and rotateSecret show that once). */
export type Webhook = components['schemas']['Webhook'];
/** `url` (https unless the server allows http; no private address), `events` (at least one), `description` (up to 500 characters). */
export type CreateWebhookInput = JsonRequest<'createWebhook'>;
/** The webhook and its `secret` (`whsec_…`), which signs every delivery: shown this once. */
export type CreateWebhookResponse = SuccessBody<'createWebhook'>;
export type WebhooksResponse = SuccessBody<'listWebhooks'>;
export type WebhookResponse = SuccessBody<'getWebhook'>;
export type UpdateWebhookInput = JsonRequest<'updateWebhook'>;
export type UpdateWebhookResponse = SuccessBody<'updateWebhook'>;
export type DeleteWebhookResponse = SuccessBody<'deleteWebhook'>;
/** The new `secret` (shown once); until `previous_secret_expires_at` deliveries carry a signature under the previous one too. */
export type RotateSecretResponse = SuccessBody<'rotateWebhookSecret'>;
export type TestWebhookResponse = SuccessBody<'testWebhook'>;
/** One page of delivery attempts (`next_cursor` null at the end). */
export type DeliveriesResponse = SuccessBody<'listWebhookDeliveries'>;
/** One attempt: its message (the `webhook-id`), outcome, HTTP status, latency, error. */
export type WebhookDelivery = DeliveriesResponse['deliveries'][number];
/** `status` (failed or succeeded), `cursor` (a previous page's `next_cursor`), `limit` (1-100, default 50). */
export type DeliveriesQuery = QueryOf<'listWebhookDeliveries'>;
export type DeadLettersResponse = SuccessBody<'listWebhookDeadLetters'>;
/** A message whose retries were all spent: kept, and replayable. */
export type DeadLetter = DeadLettersResponse['dead_letters'][number];
export type DeadLettersQuery = QueryOf<'listWebhookDeadLetters'>;
export type ReplayResponse = SuccessBody<'replayWebhook'>;

/** What to deliver again: the events in [since, until) (until: now), or the messages named (at most 100). */
export type ReplayInput = { since: string | Date; until?: string | Date } | { messageIds: string[] };

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
