import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { BlobTooLarge } from '@docshare/blob-store';
import { canonicalJson, hashOnlySink, hashingSink, parseIdempotencyKey } from '../src/http/idempotency.ts';

describe('parseIdempotencyKey', () => {
  it('takes the bare value or the Structured Field string, 1 to 255 printable ASCII characters', () => {
    assert.equal(parseIdempotencyKey(undefined), undefined);
    assert.equal(parseIdempotencyKey('8e03978e-40d5-43e8-bc93-6894a57f9324'), '8e03978e-40d5-43e8-bc93-6894a57f9324');
    assert.equal(parseIdempotencyKey('"8e03978e"'), '8e03978e');
    assert.equal(parseIdempotencyKey('"a \\"quoted\\" \\\\ key"'), 'a "quoted" \\ key');
    assert.equal(parseIdempotencyKey('k'.repeat(255)), 'k'.repeat(255));
  });

  for (const bad of ['', ' ', 'k'.repeat(256), '"open', '"', '""', '"a"b"', '"bad \\x escape"', 'tab\there', 'caf\u00e9', 'nul\u0000']) {
    it(`refuses ${JSON.stringify(bad).slice(0, 40)}`, () => {
      assert.throws(() => parseIdempotencyKey(bad), { message: 'Invalid Idempotency-Key' });
    });
  }
});

describe('canonicalJson', () => {
  it('sorts object keys at every depth, keeps array order, drops undefined members', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null }, u: undefined }), '{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}');
    assert.notEqual(canonicalJson([1, 2]), canonicalJson([2, 1]));
    assert.notEqual(canonicalJson({ id: '1' }), canonicalJson({ id: 1 }));
  });
});

describe('hashing sinks', () => {
  const bytes = Buffer.from('a'.repeat(100_000));
  const sha = createHash('sha256').update(bytes).digest('hex');
  const chunks = (): Readable => Readable.from([bytes.subarray(0, 30_000), bytes.subarray(30_000)]);

  it('hashingSink hands the same bytes on and adds their SHA-256', async () => {
    let got = Buffer.alloc(0);
    const sink = hashingSink({
      async store(body: Readable) {
        for await (const chunk of body) got = Buffer.concat([got, chunk as Buffer]);
        return { size: got.length };
      },
      async discard() {},
    });
    const stored = await sink.store(chunks(), 'text/plain', 1e9);
    assert.deepEqual(stored, { size: bytes.length, sha256: sha });
    assert.ok(got.equals(bytes));
  });

  it('hashingSink: a body that fails before the sink reads it fails the store, and nothing throws elsewhere', async () => {
    const sink = hashingSink({
      async store(body: Readable) {
        // The real sink awaits an id first: the body fails meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 20));
        for await (const _chunk of body) { /* read */ }
        return { size: 0 };
      },
      async discard() {},
    });
    const body = new Readable({ read() {} });
    setImmediate(() => body.destroy(new Error('client went away')));
    await assert.rejects(sink.store(body, 'text/plain', 1e9), /client went away/);
  });

  it('hashOnlySink hashes without keeping, and stops past the limit', async () => {
    assert.deepEqual(await hashOnlySink.store(chunks(), 'text/plain', 1e9), { size: bytes.length, sha256: sha });
    await assert.rejects(hashOnlySink.store(chunks(), 'text/plain', 50_000), BlobTooLarge);
  });
});
