import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError, M } from '@docshare/contracts';
import {
  parseDeliveriesQuery, parseDisableReport, parseReplay, parseWebhookChanges, parseWebhookId, parseWebhookInput, REPLAY_MAX_MESSAGES,
  WEBHOOK_DESCRIPTION_MAX,
} from '../src/http/webhook-validation.ts';

// The webhooks API's input at the edge (http/webhook-validation.ts): each refusal's message, in the documented order.

const refused = (fn: () => unknown, kind: DocshareError['kind'], message: string): void =>
  assert.throws(fn, (e: unknown) => e instanceof DocshareError && e.kind === kind && e.message === message);

const MSG = `msg_${'ab'.repeat(16)}`;
const NOW = new Date('2026-11-29T12:00:00.000Z');

describe('webhook registration input', () => {
  it('keeps the url trimmed, each event type once in the catalogue\'s order, the description on one line', () => {
    assert.deepEqual(parseWebhookInput({ url: ' https://example.com/h ', events: ['file.deleted', 'file.uploaded', 'file.deleted'], description: 'a\nb' }), {
      url: 'https://example.com/h', events: ['file.uploaded', 'file.deleted'], description: 'a b',
    });
    assert.equal(parseWebhookInput({ url: 'https://example.com', events: ['sale.completed'] }).description, '');
  });

  it('refuses in order: url, events, description', () => {
    refused(() => parseWebhookInput({ events: 'nope', description: 5 }), 'invalid', M.webhookUrlRequired);
    refused(() => parseWebhookInput({ url: '  ', events: [] }), 'invalid', M.webhookUrlRequired);
    refused(() => parseWebhookInput({ url: 42, events: [] }), 'invalid', M.webhookUrlInvalid);
    refused(() => parseWebhookInput({ url: 'https://e.com', events: [], description: 5 }), 'invalid', M.webhookEventsRequired);
    refused(() => parseWebhookInput({ url: 'https://e.com', events: [1] }), 'invalid', M.webhookEventsRequired);
    refused(() => parseWebhookInput({ url: 'https://e.com', events: ['file.viewed'] }), 'invalid', M.webhookEventUnknown);
    refused(() => parseWebhookInput({ url: 'https://e.com', events: ['webhook.test'] }), 'invalid', M.webhookEventUnknown);
    refused(() => parseWebhookInput({ url: 'https://e.com', events: ['file.uploaded'], description: 5 }), 'invalid', M.webhookDescriptionInvalid);
    refused(() => parseWebhookInput({ url: 'https://e.com', events: ['file.uploaded'], description: 'x'.repeat(WEBHOOK_DESCRIPTION_MAX + 1) }), 'invalid', M.webhookDescriptionTooLong);
    refused(() => parseWebhookInput({ url: 'https://e.com', events: ['file.uploaded'], description: 'bell\u0007' }), 'invalid', M.webhookDescriptionInvalid);
  });
});

describe('webhook changes', () => {
  it('takes any of the four fields, and refuses none', () => {
    assert.deepEqual(parseWebhookChanges({ enabled: false }), { enabled: false });
    assert.deepEqual(parseWebhookChanges({ events: ['comment.received'], description: '' }), { events: ['comment.received'], description: '' });
    refused(() => parseWebhookChanges({}), 'invalid', M.webhookNothingToUpdate);
    refused(() => parseWebhookChanges({ enabled: 'yes' }), 'invalid', M.webhookEnabledInvalid);
  });
});

describe('webhook ids, replays, listings and the dispatcher\'s report', () => {
  it('answers not found for an id that is not a positive integer', () => {
    assert.equal(parseWebhookId('12'), 12);
    for (const bad of ['0', '-1', 'abc', '1.5', '9'.repeat(20)]) refused(() => parseWebhookId(bad), 'not_found', M.webhookNotFound);
  });

  it('takes a range (until defaults to now) or message ids, and refuses the rest', () => {
    assert.deepEqual(parseReplay({ since: '2026-11-29T10:00:00Z' }, NOW), { since: '2026-11-29T10:00:00.000Z', until: NOW.toISOString() });
    assert.deepEqual(parseReplay({ message_ids: [MSG, MSG] }, NOW), { messageIds: [MSG] });
    refused(() => parseReplay({}, NOW), 'invalid', M.replayRangeRequired);
    refused(() => parseReplay({ since: 'yesterday' }, NOW), 'invalid', M.replayTimeInvalid);
    refused(() => parseReplay({ since: '2026-11-29' }, NOW), 'invalid', M.replayTimeInvalid);
    refused(() => parseReplay({ since: '2026-11-29T12:00:00Z', until: '2026-11-29T11:00:00Z' }, NOW), 'invalid', M.replayRangeOrder);
    refused(() => parseReplay({ message_ids: [] }, NOW), 'invalid', M.replayMessageIdsInvalid);
    refused(() => parseReplay({ message_ids: ['msg_x'] }, NOW), 'invalid', M.replayMessageIdsInvalid);
    refused(() => parseReplay({ message_ids: Array.from({ length: REPLAY_MAX_MESSAGES + 1 }, () => MSG) }, NOW), 'invalid', M.replayMessageIdsInvalid);
  });

  it('reads the listing\'s status, cursor and limit', () => {
    assert.deepEqual(parseDeliveriesQuery({}, true), { limit: 50 });
    assert.deepEqual(parseDeliveriesQuery({ status: 'failed', cursor: 'abc', limit: '500' }, true), { outcome: 'failed', cursor: 'abc', limit: 100 });
    assert.deepEqual(parseDeliveriesQuery({ status: 'anything' }, false), { limit: 50 });
    refused(() => parseDeliveriesQuery({ status: 'dead' }, true), 'invalid', M.deliveriesStatusInvalid);
    refused(() => parseDeliveriesQuery({ cursor: ['a', 'b'] }, true), 'invalid', M.invalidCursor);
  });

  it('reads the dispatcher\'s report', () => {
    assert.deepEqual(parseDisableReport({ owner_id: 3, reason: 'gone' }), { ownerId: 3, reason: 'gone' });
    refused(() => parseDisableReport({ owner_id: 3, reason: 'bored' }), 'invalid', M.badRequest);
  });
});
