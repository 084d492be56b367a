import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError, M, type SealedSecret } from '@docshare/contracts';
import {
  decideWebhooks, evolveWebhooks, initialWebhooksState, webhookOf,
  type WebhookCommand, type WebhookEventBody, type WebhooksState,
} from '../src/commands/domain/webhook.ts';

// A user's webhook endpoints (domain/webhook.ts): given past events, when a command, then the
// events it records or its refusal.

const OWNER = 4;
const NOW = '2026-11-29T10:00:00.000Z';
const LATER = '2026-11-29T11:00:00.000Z';
const sealed = (n: number): SealedSecret => ({ kid: 'k1', iv: `iv${n}`, ct: `ct${n}`, tag: `tag${n}` });

const registeredEvent = (webhookId: number, url = `https://example.com/hooks/${webhookId}`): WebhookEventBody => ({
  type: 'docs.webhook.registered.v1',
  data: { webhookId, ownerId: OWNER, url, events: ['file.uploaded'], description: '', secret: sealed(webhookId), createdAt: NOW },
});
const register = (webhookId: number, max = 10): WebhookCommand => ({
  type: 'RegisterWebhook', webhookId, ownerId: OWNER, url: `https://example.com/hooks/${webhookId}`, events: ['file.uploaded'],
  description: '', secret: sealed(webhookId), max, now: NOW,
});

const isError = (kind: DocshareError['kind'], message: string) => (e: unknown): boolean =>
  e instanceof DocshareError && e.kind === kind && e.message === message;

const given = (events: WebhookEventBody[]) => {
  const state = events.reduce(evolveWebhooks, initialWebhooksState());
  return {
    state,
    when: (command: WebhookCommand) => ({
      then: (expected: WebhookEventBody[]) => assert.deepEqual(decideWebhooks(command, state), expected),
      refused: (kind: DocshareError['kind'], message: string) => assert.throws(() => decideWebhooks(command, state), isError(kind, message)),
    }),
  };
};
const fold = (events: WebhookEventBody[]): WebhooksState => events.reduce(evolveWebhooks, initialWebhooksState());

describe('webhook decider: registration and the per-user limit', () => {
  it('registers an endpoint with its sealed secret', () => {
    given([]).when(register(1)).then([registeredEvent(1)]);
  });

  it('refuses the eleventh live endpoint, and takes one again once one is deleted', () => {
    const ten = Array.from({ length: 10 }, (_, i) => registeredEvent(i + 1));
    given(ten).when(register(11)).refused('conflict', M.webhookLimitReached);
    const deleted: WebhookEventBody = { type: 'docs.webhook.deleted.v1', data: { webhookId: 3, ownerId: OWNER, deletedAt: LATER } };
    given([...ten, deleted]).when(register(11)).then([registeredEvent(11)]);
  });

  it('records nothing for an id already registered (a retried append)', () => {
    given([registeredEvent(1)]).when(register(1)).then([]);
  });
});

describe('webhook decider: changes', () => {
  it('records only what changes; a PATCH repeating the current values records nothing', () => {
    const update = (changes: object): WebhookCommand => ({ type: 'UpdateWebhook', webhookId: 1, ownerId: OWNER, changes, now: LATER });
    given([registeredEvent(1)]).when(update({ url: 'https://example.com/hooks/1', events: ['file.uploaded'], description: '', enabled: true })).then([]);
    given([registeredEvent(1)]).when(update({ events: ['file.deleted'], enabled: false })).then([
      { type: 'docs.webhook.updated.v1', data: { webhookId: 1, ownerId: OWNER, changes: { events: ['file.deleted'], enabled: false }, updatedAt: LATER } },
    ]);
  });

  it('answers not found for an endpoint the user does not have, or has deleted', () => {
    const deleted: WebhookEventBody = { type: 'docs.webhook.deleted.v1', data: { webhookId: 1, ownerId: OWNER, deletedAt: LATER } };
    for (const command of [
      { type: 'DeleteWebhook', webhookId: 2, ownerId: OWNER, now: LATER },
      { type: 'RequestWebhookTest', webhookId: 1, ownerId: OWNER, now: LATER },
      { type: 'RotateWebhookSecret', webhookId: 1, ownerId: OWNER, secret: sealed(9), previousValidUntil: LATER, now: LATER },
    ] satisfies WebhookCommand[]) {
      given([registeredEvent(1), deleted]).when(command).refused('not_found', M.webhookNotFound);
    }
    given([registeredEvent(1)]).when({ type: 'DeleteWebhook', webhookId: 2, ownerId: OWNER, now: LATER }).refused('not_found', M.webhookNotFound);
  });

  it('a deleted endpoint leaves the list', () => {
    const state = fold([registeredEvent(1), registeredEvent(2), { type: 'docs.webhook.deleted.v1', data: { webhookId: 1, ownerId: OWNER, deletedAt: LATER } }]);
    assert.deepEqual(state.endpoints.map((entry) => entry.webhookId), [2]);
  });
});

describe('webhook decider: disabling and enabling', () => {
  const disable: WebhookCommand = { type: 'DisableWebhook', webhookId: 1, ownerId: OWNER, reason: 'gone', now: LATER };
  const disabled: WebhookEventBody = { type: 'docs.webhook.disabled.v1', data: { webhookId: 1, ownerId: OWNER, reason: 'gone', disabledAt: LATER } };

  it('records the dispatcher\'s report once: a second one records nothing', () => {
    given([registeredEvent(1)]).when(disable).then([disabled]);
    given([registeredEvent(1), disabled]).when(disable).then([]);
    assert.deepEqual(
      { enabled: webhookOf(fold([registeredEvent(1), disabled]), 1).enabled, reason: webhookOf(fold([registeredEvent(1), disabled]), 1).disabledReason },
      { enabled: false, reason: 'gone' },
    );
  });

  it('enabling it again by PATCH clears docshare\'s reason', () => {
    const enabled: WebhookEventBody = { type: 'docs.webhook.updated.v1', data: { webhookId: 1, ownerId: OWNER, changes: { enabled: true }, updatedAt: LATER } };
    const entry = webhookOf(fold([registeredEvent(1), disabled, enabled]), 1);
    assert.deepEqual({ enabled: entry.enabled, reason: entry.disabledReason }, { enabled: true, reason: null });
  });

  it('refuses a replay to a disabled endpoint, but still takes a test', () => {
    given([registeredEvent(1), disabled])
      .when({ type: 'RequestWebhookReplay', webhookId: 1, ownerId: OWNER, selector: { messageIds: ['msg_1'] }, now: LATER })
      .refused('conflict', M.webhookDisabled);
    given([registeredEvent(1), disabled]).when({ type: 'RequestWebhookTest', webhookId: 1, ownerId: OWNER, now: LATER })
      .then([{ type: 'docs.webhook.test_requested.v1', data: { webhookId: 1, ownerId: OWNER, requestedAt: LATER } }]);
  });
});

describe('webhook decider: rotation, tests and replays are recorded as asked', () => {
  it('records a rotation with the previous secret\'s end', () => {
    given([registeredEvent(1)])
      .when({ type: 'RotateWebhookSecret', webhookId: 1, ownerId: OWNER, secret: sealed(2), previousValidUntil: LATER, now: NOW })
      .then([{ type: 'docs.webhook.secret_rotated.v1', data: { webhookId: 1, ownerId: OWNER, secret: sealed(2), previousValidUntil: LATER, rotatedAt: NOW } }]);
  });

  it('records a replay by range or by message ids', () => {
    given([registeredEvent(1)])
      .when({ type: 'RequestWebhookReplay', webhookId: 1, ownerId: OWNER, selector: { since: NOW, until: LATER }, now: LATER })
      .then([{ type: 'docs.webhook.replay_requested.v1', data: { webhookId: 1, ownerId: OWNER, requestedAt: LATER, since: NOW, until: LATER } }]);
    given([registeredEvent(1)])
      .when({ type: 'RequestWebhookReplay', webhookId: 1, ownerId: OWNER, selector: { messageIds: ['msg_a'] }, now: LATER })
      .then([{ type: 'docs.webhook.replay_requested.v1', data: { webhookId: 1, ownerId: OWNER, requestedAt: LATER, messageIds: ['msg_a'] } }]);
  });

  it('folds every event twice to the same state as once (a fold is not a projection, but a repeated event must not duplicate an endpoint)', () => {
    const events = [registeredEvent(1), registeredEvent(2)];
    assert.deepEqual(fold([...events, ...events]).endpoints.length, 2);
  });
});
