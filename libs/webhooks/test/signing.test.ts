import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from '../src/secrets.ts';
import { signatureHeader, signWebhook, verifyWebhookSignature } from '../src/signing.ts';

const ID = 'msg_0123456789abcdef0123456789abcdef';
const BODY = JSON.stringify({ type: 'file.uploaded', timestamp: '2026-01-02T03:04:05.000Z', data: { file_id: 1, owner_id: 2 } });
const now = (): number => Math.floor(Date.now() / 1000);

/** The headers a receiver gets. */
const headersOf = (secrets: string[], ts: number, body = BODY): Record<string, string> => ({
  'webhook-id': ID, 'webhook-timestamp': String(ts), 'webhook-signature': signatureHeader(secrets, ID, ts, body),
});

describe('signatureHeader, checked by the standardwebhooks library receivers use', () => {
  it('one secret: the library verifies it and parses the body', () => {
    const secret = newWebhookSecret();
    const ts = now();
    assert.deepEqual(new Webhook(secret).verify(BODY, headersOf([secret], ts)), JSON.parse(BODY));
  });
  it('two secrets (a rotation): each verifies on its own', () => {
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    const headers = headersOf([current, previous], now());
    assert.equal(headers['webhook-signature']?.split(' ').length, 2);
    assert.doesNotThrow(() => new Webhook(current).verify(BODY, headers));
    assert.doesNotThrow(() => new Webhook(previous).verify(BODY, headers));
    assert.throws(() => new Webhook(newWebhookSecret()).verify(BODY, headers), /No matching signature/);
  });
  it('a tampered body, id or timestamp is rejected', () => {
    const secret = newWebhookSecret();
    const ts = now();
    const headers = headersOf([secret], ts);
    assert.throws(() => new Webhook(secret).verify(BODY.replace('"file_id":1', '"file_id":2'), headers), /No matching signature/);
    assert.throws(() => new Webhook(secret).verify(BODY, { ...headers, 'webhook-id': 'msg_other' }), /No matching signature/);
    assert.throws(() => new Webhook(secret).verify(BODY, { ...headers, 'webhook-timestamp': String(ts - 1) }), /No matching signature/);
  });
  it('signs what the library signs, byte for byte', () => {
    const secret = newWebhookSecret();
    const ts = now();
    assert.equal(signWebhook(secret, ID, ts, BODY), new Webhook(secret).sign(ID, new Date(ts * 1000), BODY));
  });
  it('the header puts the current secret first', () => {
    const [a, b] = [newWebhookSecret(), newWebhookSecret()];
    assert.equal(signatureHeader([a, b], ID, 1, BODY), `${signWebhook(a, ID, 1, BODY)} ${signWebhook(b, ID, 1, BODY)}`);
  });
});

describe('verifyWebhookSignature', () => {
  const secret = newWebhookSecret();
  const ts = 1_800_000_000;
  const headers = (signature: string, timestamp = String(ts)) => ({ id: ID, timestamp, signature });
  it('accepts its own signature and the library\'s, alone or beside others', () => {
    const library = new Webhook(secret).sign(ID, new Date(ts * 1000), BODY);
    assert.equal(verifyWebhookSignature(secret, headers(library), BODY, ts), true);
    assert.equal(verifyWebhookSignature(secret, headers(signatureHeader([newWebhookSecret(), secret], ID, ts, BODY)), BODY, ts), true);
    assert.equal(verifyWebhookSignature(secret, headers(`v2,abc ${library}`), BODY, ts), true);
  });
  it('rejects another body, another secret, another version, garbage', () => {
    const good = signWebhook(secret, ID, ts, BODY);
    assert.equal(verifyWebhookSignature(secret, headers(good), `${BODY} `, ts), false);
    assert.equal(verifyWebhookSignature(newWebhookSecret(), headers(good), BODY, ts), false);
    assert.equal(verifyWebhookSignature(secret, headers(good.replace('v1,', 'v2,')), BODY, ts), false);
    assert.equal(verifyWebhookSignature(secret, headers('v1,'), BODY, ts), false);
    assert.equal(verifyWebhookSignature(secret, headers('nonsense'), BODY, ts), false);
  });
  it('rejects a timestamp outside the tolerance, or not a number', () => {
    const good = signWebhook(secret, ID, ts, BODY);
    assert.equal(verifyWebhookSignature(secret, headers(good), BODY, ts + 300), true);
    assert.equal(verifyWebhookSignature(secret, headers(good), BODY, ts + 301), false);
    assert.equal(verifyWebhookSignature(secret, headers(good), BODY, ts - 301), false);
    assert.equal(verifyWebhookSignature(secret, headers(good, 'soon'), BODY, ts), false);
  });
});
