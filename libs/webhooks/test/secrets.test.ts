import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeSecretSealer, newWebhookSecret, secretKeyBytes } from '../src/secrets.ts';

const KEY = 'k'.repeat(40);

/** Flips the first character of a base64url text into another base64url character. */
const flip = (text: string): string => `${text[0] === 'A' ? 'B' : 'A'}${text.slice(1)}`;

describe('newWebhookSecret', () => {
  it('is whsec_ and the base64 of 32 random bytes, new each time', () => {
    const a = newWebhookSecret();
    const b = newWebhookSecret();
    assert.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(secretKeyBytes(a).length, 32);
    assert.notEqual(a, b);
  });
  it('the key is the part after whsec_, base64-decoded', () => {
    assert.deepEqual(secretKeyBytes(`whsec_${Buffer.from('hello').toString('base64')}`), Buffer.from('hello'));
  });
});

describe('makeSecretSealer', () => {
  it('opens what it sealed, for the same webhook', () => {
    const sealer = makeSecretSealer(KEY);
    const secret = newWebhookSecret();
    const sealed = sealer.seal(secret, 7);
    assert.equal(sealer.open(sealed, 7), secret);
    assert.ok(!JSON.stringify(sealed).includes(secret.slice(6)), 'the sealed form does not carry the secret');
    assert.match(sealed.kid, /^[0-9a-f]{8}$/);
  });
  it('uses a new iv each time (the same secret seals differently)', () => {
    const sealer = makeSecretSealer(KEY);
    const a = sealer.seal('whsec_AAAA', 1);
    const b = sealer.seal('whsec_AAAA', 1);
    assert.notEqual(a.iv, b.iv);
    assert.notEqual(a.ct, b.ct);
  });
  it('a sealer with the same key material opens it (another process, a restart)', () => {
    const sealed = makeSecretSealer(KEY).seal('whsec_AAAA', 3);
    assert.equal(makeSecretSealer(KEY).open(sealed, 3), 'whsec_AAAA');
  });
  it('another key cannot open it', () => {
    const sealed = makeSecretSealer(KEY).seal('whsec_AAAA', 3);
    const other = makeSecretSealer('z'.repeat(40));
    assert.throws(() => other.open(sealed, 3), /another key/);
    // Even under its own kid, another key fails authentication.
    assert.throws(() => other.open({ ...sealed, kid: other.seal('x', 3).kid }, 3), /does not open/);
  });
  it('another webhook id cannot open it (the id is authenticated)', () => {
    const sealer = makeSecretSealer(KEY);
    assert.throws(() => sealer.open(sealer.seal('whsec_AAAA', 3), 4), /does not open/);
  });
  it('a tampered ciphertext, tag or iv cannot be opened', () => {
    const sealer = makeSecretSealer(KEY);
    const sealed = sealer.seal(newWebhookSecret(), 9);
    assert.throws(() => sealer.open({ ...sealed, ct: flip(sealed.ct) }, 9), /does not open/);
    assert.throws(() => sealer.open({ ...sealed, tag: flip(sealed.tag) }, 9), /does not open/);
    assert.throws(() => sealer.open({ ...sealed, iv: flip(sealed.iv) }, 9), /does not open/);
    assert.throws(() => sealer.open({ ...sealed, tag: sealed.tag.slice(0, 8) }, 9), /damaged/);
  });
  it('never puts the secret in an error', () => {
    const sealer = makeSecretSealer(KEY);
    const secret = newWebhookSecret();
    const sealed = sealer.seal(secret, 1);
    for (const attempt of [() => sealer.open(sealed, 2), () => makeSecretSealer('q'.repeat(40)).open(sealed, 1)]) {
      assert.throws(attempt, (error: Error) => !error.message.includes(secret) && !error.message.includes(secret.slice(6)));
    }
  });
});
