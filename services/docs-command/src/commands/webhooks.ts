import {
  M, conflict, invalid, notFound, streamIds, webhookMessageId, type SealedSecret, type WebhookDisableReason, type WebhookEventType,
} from '@docshare/contracts';
import { checkWebhookUrl, newWebhookSecret, type SecretSealer } from '@docshare/webhooks';
import type { DeliveryAttempt, DeliveryTask, WebhookStore } from '@docshare/webhooks/store';
import type { WebhookUrlPolicy } from '@docshare/runtime/config';
import type { CommandMeta, Decider, Handled } from './command-handler.ts';
import type { CommandContext } from './context.ts';
import {
  decideWebhooks, evolveWebhooks, initialWebhooksState, webhookOf,
  type ReplaySelector, type WebhookCommand, type WebhookEntry, type WebhookEventBody, type WebhooksState,
} from './domain/webhook.ts';
import { recordedBy } from './recorded.ts';

export const webhooksDecider: Decider<WebhookCommand, WebhooksState, WebhookEventBody> = {
  initialState: initialWebhooksState, evolve: evolveWebhooks, decide: decideWebhooks,
};

/** How long a rotated-out secret keeps signing beside the new one (issue 23). */
export const PREVIOUS_SECRET_MS = 24 * 60 * 60 * 1000;

export interface WebhookCommandSettings {
  /** Live endpoints per user (WEBHOOK_MAX_PER_USER). */
  maxPerUser: number;
  /** What registration accepts (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE_NETWORKS); the dispatcher checks again when it connects. */
  policy: WebhookUrlPolicy;
}

export interface WebhookCommandsDeps {
  ctx: CommandContext;
  settings: WebhookCommandSettings;
  /** Seals each secret into its event (WEBHOOK_SECRET_KEY). */
  sealer: SecretSealer;
  /** The dispatcher's delivery state: attempts and dead letters, read-only here. */
  store: WebhookStore;
  /** Where a URL's host resolves (tests); default: the system's resolver. */
  checkUrl?: typeof checkWebhookUrl;
}

/** What a registration or a change takes from the request, validated at the edge (http/validation.ts) but for the URL's resolution. */
export interface WebhookInput { url: string; events: WebhookEventType[]; description: string }

/** A webhook as the API shows it (never its secret). */
export const webhookView = (entry: WebhookEntry) => ({
  id: entry.webhookId,
  url: entry.url,
  events: entry.events,
  description: entry.description,
  enabled: entry.enabled,
  disabled_reason: entry.disabledReason,
  created_at: entry.createdAt,
});
export type WebhookView = ReturnType<typeof webhookView>;

const attemptView = (attempt: DeliveryAttempt) => ({
  message_id: attempt.messageId,
  event_id: attempt.eventId,
  event_type: attempt.eventType,
  attempt: attempt.attempt,
  attempted_at: new Date(attempt.at).toISOString(),
  outcome: attempt.outcome,
  http_status: attempt.status,
  latency_ms: attempt.latencyMs,
  error: attempt.error,
});

const deadLetterView = (task: DeliveryTask) => ({
  message_id: task.messageId,
  event_id: task.eventId,
  event_type: task.eventType,
  event_time: new Date(task.eventTime).toISOString(),
  attempts: task.attempts,
  last_http_status: task.lastStatus,
  last_error: task.lastError,
  dead_at: new Date(task.updatedAt).toISOString(),
});

/**
 * Webhooks (issue 23): a user's endpoints, decided on their one stream; deliveries are the
 * dispatcher's (services/webhook-dispatcher), which reads these events from the log. Test and
 * replay are recorded too, so they reach the dispatcher in order, durably, whichever replica runs it.
 */
export const makeWebhookCommands = ({ ctx, settings, sealer, store, checkUrl = checkWebhookUrl }: WebhookCommandsDeps) => {
  const on = async (ownerId: number, command: WebhookCommand, meta: CommandMeta): Promise<Handled<WebhooksState>> =>
    ctx.committed(await ctx.handler.handle(webhooksDecider, streamIds.webhooks(ownerId), command, command.now, meta));
  const load = async (ownerId: number): Promise<WebhooksState> => (await ctx.handler.load(webhooksDecider, streamIds.webhooks(ownerId))).state;
  const now = (): string => ctx.clock().toISOString();

  /** The URL as registered, or the refusal (scheme, credentials, a private or special address, a host that does not resolve). */
  const acceptedUrl = async (url: string): Promise<string> => {
    const checked = await checkUrl(url, settings.policy);
    if (!checked.ok) throw invalid(checked.message);
    return checked.url.href;
  };

  const register = async (ownerId: number, input: WebhookInput, meta: CommandMeta) => {
    await ctx.author(ownerId);
    const url = await acceptedUrl(input.url);
    // Refused before an id is taken when the limit is already reached; the decider decides again at the stream's version.
    if ((await load(ownerId)).endpoints.length >= settings.maxPerUser) throw conflict(M.webhookLimitReached);
    const webhookId = await ctx.events.nextId('webhook');
    const secret = newWebhookSecret();
    const result = await on(ownerId, {
      type: 'RegisterWebhook', webhookId, ownerId, url, events: input.events, description: input.description,
      secret: sealer.seal(secret, webhookId), max: settings.maxPerUser, now: now(),
    }, meta);
    return { webhook: webhookView(webhookOf(result.state, webhookId)), secret, recorded: recordedBy(result) };
  };

  const list = async (ownerId: number) => (await load(ownerId)).endpoints.map(webhookView);

  const get = async (ownerId: number, webhookId: number) => webhookView(webhookOf(await load(ownerId), webhookId));

  const update = async (ownerId: number, webhookId: number, changes: Partial<WebhookInput> & { enabled?: boolean }, meta: CommandMeta) => {
    webhookOf(await load(ownerId), webhookId);
    const url = changes.url === undefined ? undefined : await acceptedUrl(changes.url);
    const result = await on(ownerId, {
      type: 'UpdateWebhook', webhookId, ownerId, now: now(),
      changes: {
        ...(url === undefined ? {} : { url }),
        ...(changes.events === undefined ? {} : { events: changes.events }),
        ...(changes.description === undefined ? {} : { description: changes.description }),
        ...(changes.enabled === undefined ? {} : { enabled: changes.enabled }),
      },
    }, meta);
    return { webhook: webhookView(webhookOf(result.state, webhookId)), recorded: recordedBy(result) };
  };

  const remove = async (ownerId: number, webhookId: number, meta: CommandMeta) =>
    ({ recorded: recordedBy(await on(ownerId, { type: 'DeleteWebhook', webhookId, ownerId, now: now() }, meta)) });

  const rotateSecret = async (ownerId: number, webhookId: number, meta: CommandMeta) => {
    webhookOf(await load(ownerId), webhookId);
    const at = ctx.clock();
    const previousValidUntil = new Date(at.getTime() + PREVIOUS_SECRET_MS).toISOString();
    const secret = newWebhookSecret();
    const result = await on(ownerId, {
      type: 'RotateWebhookSecret', webhookId, ownerId, secret: sealer.seal(secret, webhookId), previousValidUntil, now: at.toISOString(),
    }, meta);
    return { secret, previousValidUntil, recorded: recordedBy(result) };
  };

  /** Records the request; the dispatcher sends `webhook.test`, whose id derives from the recorded event's. */
  const test = async (ownerId: number, webhookId: number, meta: CommandMeta) => {
    const result = await on(ownerId, { type: 'RequestWebhookTest', webhookId, ownerId, now: now() }, meta);
    const event = result.events.find((recorded) => recorded.type === 'docs.webhook.test_requested.v1');
    if (!event) throw new Error('the webhook decider recorded no test request');
    return { messageId: webhookMessageId(event.id), recorded: recordedBy(result) };
  };

  const replay = async (ownerId: number, webhookId: number, selector: ReplaySelector, meta: CommandMeta) => {
    const result = await on(ownerId, { type: 'RequestWebhookReplay', webhookId, ownerId, selector, now: now() }, meta);
    const event = result.events.find((recorded) => recorded.type === 'docs.webhook.replay_requested.v1');
    if (!event) throw new Error('the webhook decider recorded no replay request');
    return { replayId: event.id, recorded: recordedBy(result) };
  };

  const deliveries = async (ownerId: number, webhookId: number, options: { outcome?: 'succeeded' | 'failed'; cursor?: string; limit: number }) => {
    webhookOf(await load(ownerId), webhookId);
    const page = await store.attempts(webhookId, options);
    return { deliveries: page.items.map(attemptView), next_cursor: page.next };
  };

  const deadLetters = async (ownerId: number, webhookId: number, options: { cursor?: string; limit: number }) => {
    webhookOf(await load(ownerId), webhookId);
    const page = await store.deadLetters(webhookId, options);
    return { dead_letters: page.items.map(deadLetterView), next_cursor: page.next };
  };

  /**
   * The endpoint's current secret, opened from its newest sealed copy in the stream: what an
   * idempotent replay of a registration or rotation answers (its stored answer keeps no secret).
   */
  const currentSecret = async (ownerId: number, webhookId: number): Promise<string> => {
    webhookOf(await load(ownerId), webhookId);
    let sealed: SealedSecret | undefined;
    for (const { event } of await ctx.events.readStream(streamIds.webhooks(ownerId))) {
      const data = event.data as { webhookId?: number; secret?: SealedSecret };
      if (data.webhookId === webhookId && data.secret !== undefined) sealed = data.secret;
    }
    if (sealed === undefined) throw notFound(M.webhookNotFound);
    return sealer.open(sealed, webhookId);
  };

  /** The dispatcher's report (410 Gone, or failing for WEBHOOK_DISABLE_AFTER): idempotent. */
  const disable = async (ownerId: number, webhookId: number, reason: WebhookDisableReason, meta: CommandMeta) =>
    ({ recorded: recordedBy(await on(ownerId, { type: 'DisableWebhook', webhookId, ownerId, reason, now: now() }, meta)) });

  return { register, list, get, update, remove, rotateSecret, test, replay, deliveries, deadLetters, disable, currentSecret };
};

export type WebhookCommands = ReturnType<typeof makeWebhookCommands>;
