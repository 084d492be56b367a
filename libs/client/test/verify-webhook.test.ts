// verifyWebhook against the `standardwebhooks` library receivers use: what it signs, ours verifies;
// what must not be trusted (another body, an old or future timestamp, another secret, a missing
// header) is refused; during a rotation either secret verifies. The SDK's copy of the payload
// catalogue is checked against @docshare/contracts'.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { WEBHOOK_EVENT_TYPES as CONTRACT_EVENT_TYPES, type WebhookPayload as ContractPayload } from '@docshare/contracts';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WEBHOOK_EVENT_TYPES, WebhookVerificationError, type WebhookPayload } from '../src/index.ts';

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
const NOW = Date.parse('2025-11-22T10:00:00Z');
const nowSeconds = Math.floor(NOW / 1000);
const payload: WebhookPayload = {
  type: 'comment.received', timestamp: '2025-11-22T09:59:59.000Z',
  data: { comment_id: 5, file_id: 12, owner_id: 3, author_id: 4, comment: 'Thanks — très utile', posted_at: '2025-11-22T09:59:59.000Z' },
};
const body = JSON.stringify(payload);
const msgId = 'msg_0123456789abcdef0123456789abcdef';

/** The headers the library's signature makes for `body` at `seconds` under each secret (space-separated, as during a rotation). */
const signed = (secrets: string[], seconds = nowSeconds, text = body): Record<string, string> => ({
  'webhook-id': msgId,
  'webhook-timestamp': String(seconds),
  'webhook-signature': secrets.map((s) => new Webhook(s).sign(msgId, new Date(seconds * 1000), text)).join(' '),
});

const refused = (fn: () => unknown, message: RegExp): void => {
  assert.throws(fn, (e: unknown) => e instanceof WebhookVerificationError && message.test(e.message));
};

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

describe('verifyWebhook', () => {
  it('verifies what standardwebhooks signs and returns the parsed payload (string, Buffer, Headers, any header case)', () => {
    const secret = newSecret();
    const headers = signed([secret]);
    const now = (): number => NOW;
    assert.deepEqual(verifyWebhook(secret, headers, body, { now }), payload);
    assert.deepEqual(verifyWebhook(secret, new Headers(headers), Buffer.from(body), { now }), payload);
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    assert.deepEqual(verifyWebhook([secret], upper, new TextEncoder().encode(body), { now }), payload);
  });

  it('agrees with standardwebhooks the other way: what the library verifies, ours verifies, on the library\'s own clock', () => {
    const secret = newSecret();
    const headers = signed([secret], Math.floor(Date.now() / 1000));
    assert.deepEqual(new Webhook(secret).verify(body, headers), payload);
    assert.deepEqual(verifyWebhook(secret, headers, body), payload);
  });

  it('refuses a tampered body, another secret, a signature of another version', () => {
    const secret = newSecret();
    const headers = signed([secret]);
    const now = (): number => NOW;
    refused(() => verifyWebhook(secret, headers, body.replace('12', '13'), { now }), /No matching signature/);
    refused(() => verifyWebhook(newSecret(), headers, body, { now }), /No matching signature/);
    const v2 = { ...headers, 'webhook-signature': headers['webhook-signature']!.replace('v1,', 'v2,') };
    refused(() => verifyWebhook(secret, v2, body, { now }), /No matching signature/);
    const otherId = { ...headers, 'webhook-id': 'msg_ffffffffffffffffffffffffffffffff' };
    refused(() => verifyWebhook(secret, otherId, body, { now }), /No matching signature/);
  });

  it('refuses a timestamp beyond the tolerance either way, takes one within it, and a wider tolerance when asked', () => {
    const secret = newSecret();
    const now = (): number => NOW;
    refused(() => verifyWebhook(secret, signed([secret], nowSeconds - 301), body, { now }), /too old/);
    refused(() => verifyWebhook(secret, signed([secret], nowSeconds + 301), body, { now }), /too new/);
    assert.deepEqual(verifyWebhook(secret, signed([secret], nowSeconds - 300), body, { now }), payload);
    assert.deepEqual(verifyWebhook(secret, signed([secret], nowSeconds - 3600), body, { now, toleranceSeconds: 3600 }), payload);
    refused(() => verifyWebhook(secret, { ...signed([secret]), 'webhook-timestamp': '1e9' }, body, { now }), /Invalid webhook-timestamp/);
  });

  it('refuses a delivery missing a header, and a signed body that is not a payload', () => {
    const secret = newSecret();
    const now = (): number => NOW;
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const headers: Record<string, string | undefined> = { ...signed([secret]), [name]: undefined };
      refused(() => verifyWebhook(secret, headers, body, { now }), /Missing required headers/);
    }
    refused(() => verifyWebhook(secret, signed([secret], nowSeconds, 'not json'), 'not json', { now }), /not JSON/);
    refused(() => verifyWebhook(secret, signed([secret], nowSeconds, '{"type":1}'), '{"type":1}', { now }), /not a webhook payload/);
  });

  it('during a rotation: both signatures sent, either secret verifies, a third does not', () => {
    const [current, previous] = [newSecret(), newSecret()];
    const headers = signed([current, previous]);
    const now = (): number => NOW;
    assert.deepEqual(verifyWebhook(previous, headers, body, { now }), payload);
    assert.deepEqual(verifyWebhook(current, headers, body, { now }), payload);
    assert.deepEqual(verifyWebhook([newSecret(), current], headers, body, { now }), payload);
    refused(() => verifyWebhook([newSecret(), newSecret()], headers, body, { now }), /No matching signature/);
  });

  it('refuses to run without a usable secret (a programming error, not a bad delivery)', () => {
    assert.throws(() => verifyWebhook([], signed([newSecret()]), body), TypeError);
    assert.throws(() => verifyWebhook('whsec_', signed([newSecret()]), body), TypeError);
  });

  it('its payload catalogue is the contracts one', () => {
    assert.deepEqual([...WEBHOOK_EVENT_TYPES], [...CONTRACT_EVENT_TYPES]);
    const same: Same<WebhookPayload, ContractPayload> = true;
    assert.equal(same, true);
  });
});
