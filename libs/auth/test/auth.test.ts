import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { hashPassword, makeTokens, makeUrlSigner, tokenFrom, verifyPassword } from '../src/index.ts';

const SECRET = 'a-test-secret-that-is-long-enough-0123456789';
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const handMade = (header: unknown, payload: unknown, secret = SECRET): string => {
  const unsigned = `${b64(header)}.${b64(payload)}`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
};
const now = (): number => Math.floor(Date.now() / 1000);

describe('tokens', () => {
  const tokens = makeTokens(SECRET, 60);
  it('round-trips a user id', () => assert.deepEqual(tokens.verify(tokens.issue(42)), { ok: true, userId: 42 }));
  it('refuses alg none', () => {
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: '1', exp: now() + 60 })}.`;
    assert.deepEqual(tokens.verify(none), { ok: false });
  });
  it('refuses another algorithm even with the right key', () => {
    const unsigned = `${b64({ alg: 'HS512', typ: 'JWT' })}.${b64({ sub: '1', exp: now() + 60 })}`;
    const token = `${unsigned}.${createHmac('sha512', SECRET).update(unsigned).digest('base64url')}`;
    assert.deepEqual(tokens.verify(token), { ok: false });
  });
  it('refuses expired tokens, tokens without exp, and bad subjects', () => {
    assert.deepEqual(tokens.verify(handMade({ alg: 'HS256', typ: 'JWT' }, { sub: '1', exp: now() - 10 })), { ok: false });
    assert.deepEqual(tokens.verify(handMade({ alg: 'HS256', typ: 'JWT' }, { sub: '1' })), { ok: false });
    assert.deepEqual(tokens.verify(handMade({ alg: 'HS256', typ: 'JWT' }, { sub: 'admin', exp: now() + 60 })), { ok: false });
    assert.deepEqual(tokens.verify(handMade({ alg: 'HS256', typ: 'JWT' }, { sub: '7', exp: now() + 60 })), { ok: true, userId: 7 });
  });
  it('refuses another key and garbage', () => {
    assert.deepEqual(tokens.verify(handMade({ alg: 'HS256' }, { sub: '1', exp: now() + 60 }, 'x'.repeat(40))), { ok: false });
    assert.deepEqual(tokens.verify('not.a.token'), { ok: false });
  });
  it('refuses secrets shorter than 32 bytes', () => assert.throws(() => makeTokens('short', 60)));
  it('reads the token from X-Authorization first, Bearer optional', () => {
    assert.equal(tokenFrom('Bearer abc', 'Bearer def'), 'abc');
    assert.equal(tokenFrom(undefined, 'bearer def'), 'def');
    assert.equal(tokenFrom('abc', undefined), 'abc');
    assert.equal(tokenFrom('  ', undefined), undefined);
    assert.equal(tokenFrom('Bearer', undefined), undefined);
    assert.equal(tokenFrom('Bearer   ', undefined), undefined);
  });
});

describe('passwords', () => {
  it('verifies the right password only, with a fresh salt each time', async () => {
    const a = await hashPassword('correct horse', 1024);
    const b = await hashPassword('correct horse', 1024);
    assert.notEqual(a, b);
    assert.equal(await verifyPassword('correct horse', a), true);
    assert.equal(await verifyPassword('wrong horse', a), false);
    assert.equal(await verifyPassword('correct horse', 'garbage'), false);
    assert.doesNotMatch(a, /correct/);
  });
});

describe('signed urls', () => {
  const signer = makeUrlSigner(SECRET);
  it('accepts its own signature until it expires', () => {
    const q = new URLSearchParams(signer.sign('/files/1/content', 1000));
    assert.equal(signer.verify('/files/1/content', q.get('expires'), q.get('signature'), 999), true);
    assert.equal(signer.verify('/files/1/content', q.get('expires'), q.get('signature'), 1001), false);
    assert.equal(signer.verify('/files/2/content', q.get('expires'), q.get('signature'), 999), false);
    assert.equal(signer.verify('/files/1/content', '1001', q.get('signature'), 999), false);
    assert.equal(signer.verify('/files/1/content', q.get('expires'), 'ab', 999), false);
  });
});
