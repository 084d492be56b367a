/**
 * bench:stack's resumable-upload arithmetic: the part layout, the part a part URL names, what a
 * resumed upload sent beyond what was missing, the rate-limit points an upload spent between two
 * probes, and the fetch meter that watches the SDK (fed by a fake fetch: no server).
 *   npm exec -- node --test --test-reporter=spec bench/stack/test/resumable.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FetchMeter, partNumberOf, partPlan, pointsSpent, rateLimitOf, resumeAccount, streamedBytes } from '../resumable.ts';

const MiB = 1024 * 1024;

test('a file is cut in full parts and a shorter last one, numbered from 1', () => {
  assert.deepEqual(partPlan(20 * MiB + 5, 8 * MiB), [
    { partNumber: 1, start: 0, size: 8 * MiB },
    { partNumber: 2, start: 8 * MiB, size: 8 * MiB },
    { partNumber: 3, start: 16 * MiB, size: 4 * MiB + 5 },
  ]);
  assert.deepEqual(partPlan(16 * MiB, 8 * MiB).map((p) => p.size), [8 * MiB, 8 * MiB], 'an exact multiple has no empty last part');
  assert.deepEqual(partPlan(1, 8 * MiB), [{ partNumber: 1, start: 0, size: 1 }]);
  assert.throws(() => partPlan(0, 8 * MiB), /size 0/);
  assert.throws(() => partPlan(10, 0), /part size 0/);
});

test('a resume that sends only the missing parts sends nothing extra', () => {
  const size = 10 * 8 * MiB + 3;
  const account = resumeAccount(size, 8 * MiB, [1, 2, 3, 5], [4, 6, 7, 8, 9, 10, 11]);
  assert.equal(account.missing, 6 * 8 * MiB + 3);
  assert.equal(account.sent, account.missing);
  assert.equal(account.extra, 0);
  assert.equal(account.extraParts, 0);
});

test('parts held by the server and sent again, or a part sent twice, count as extra', () => {
  const size = 4 * 8 * MiB;
  const again = resumeAccount(size, 8 * MiB, [1, 2], [2, 3, 4]);
  assert.equal(again.missing, 2 * 8 * MiB);
  assert.equal(again.extra, 8 * MiB);
  assert.equal(again.extraParts, 1);
  const retried = resumeAccount(size, 8 * MiB, [1, 2], [3, 3, 4, 1]);
  assert.equal(retried.extraParts, 2);
  assert.throws(() => resumeAccount(size, 8 * MiB, [], [5]), /part 5 is not one of the 4 parts/);
});

test('the rate limit read from an answer: none without RateLimit-Remaining', () => {
  assert.deepEqual(rateLimitOf(new Headers({ 'RateLimit-Remaining': '27', 'RateLimit-Reset': '41' })), { remaining: 27, resetSeconds: 41 });
  assert.equal(rateLimitOf(new Headers({ ETag: '"abc"' })), null, 'a part PUT (exempt) carries no rate-limit header');
  assert.equal(rateLimitOf(new Headers({ 'RateLimit-Remaining': 'x' })), null);
});

test('points spent between two probes take the second probe off, and mean nothing once the window may have rolled', () => {
  // before 100; create + complete (2) + the second probe (1) → 97
  assert.equal(pointsSpent({ remaining: 100, resetSeconds: 3600 }, { remaining: 97 }, 12), 2);
  assert.ok(Number.isNaN(pointsSpent({ remaining: 100, resetSeconds: 10 }, { remaining: 97 }, 12)), 'the window ended meanwhile');
  assert.ok(Number.isNaN(pointsSpent({ remaining: 10, resetSeconds: 3600 }, { remaining: 29 }, 1)), 'a budget that grew: a new window');
});

test('the part a URL names: presigned S3 (partNumber=) or docshare (/parts/N); none for other URLs', () => {
  assert.equal(partNumberOf('http://127.0.0.1:9000/b/f1-x?partNumber=7&uploadId=abc&X-Amz-Signature=00'), 7);
  assert.equal(partNumberOf('http://h/api/V1/docs/api-uploads/0f0e/parts/12?expires=1&signature=ff'), 12);
  assert.equal(partNumberOf('http://h/api/V1/docs/api-uploads/0f0e/complete'), undefined);
  assert.equal(partNumberOf('http://h/b/k?partNumber=0'), undefined, 'parts are numbered from 1');
  assert.equal(partNumberOf('not a url'), undefined);
});

/** A fake server: part PUTs read to their end and answered 200 with an ETag; the rest 201 with the rate limit's headers. */
const fakeServer = (remaining: { n: number }) => async (input: string | URL, init?: RequestInit): Promise<Response> => {
  if (init?.method === 'PUT') {
    const body = init.body instanceof ReadableStream ? await new Response(init.body).arrayBuffer() : undefined;
    return new Response(null, { status: 200, headers: { etag: `"${body?.byteLength ?? 0}"` } });
  }
  remaining.n -= 1;
  return new Response('{}', { status: String(input).endsWith('/complete') ? 201 : 200, headers: { 'RateLimit-Remaining': String(remaining.n), 'RateLimit-Reset': '60' } });
};
const streamOf = (bytes: number): ReadableStream<Uint8Array> => ReadableStream.from([new Uint8Array(bytes - 1), new Uint8Array(1)]);
const put = (bytes: number, declared = bytes): RequestInit & { duplex: 'half' } => ({
  method: 'PUT', body: streamOf(bytes), headers: { 'Content-Length': String(declared) }, duplex: 'half',
});

test('the meter counts answers and rate-limited ones, times complete, and confirms the bytes of each 200 part answer', async () => {
  const meter = new FetchMeter(fakeServer({ n: 100 }));
  meter.layout = { size: 2 * MiB + 10, partSize: MiB };
  const span = meter.begin();
  const confirmedSeen: number[] = [];
  span.onConfirmed = (c) => confirmedSeen.push(c);
  await meter.fetch('http://gw/api/V1/docs/api-uploads', { method: 'POST', body: '{}' });
  const url = (n: number) => `http://minio/b/k?partNumber=${n}&uploadId=u`;
  await meter.fetch(url(1), put(MiB));
  await meter.fetch(url(3), put(10));
  await meter.fetch(url(2), put(MiB - 1, MiB));
  await meter.fetch('http://gw/api/V1/docs/api-uploads/u/complete', { method: 'POST', body: '{}' });
  assert.equal(span.answers, 5);
  assert.equal(span.limited, 2, 'the part answers carry no rate limit');
  assert.deepEqual(span.remaining, [99, 98]);
  assert.equal(span.completeMs.length, 1);
  assert.deepEqual(span.puts.map((p) => [p.partNumber, p.declared, p.streamed, p.status]), [[1, MiB, MiB, 200], [3, 10, 10, 200], [2, MiB, MiB - 1, 200]]);
  assert.equal(streamedBytes(span.puts), 2 * MiB + 9);
  assert.deepEqual(span.mismatches, [`part 2: streamed ${MiB - 1}, declared ${MiB}, layout ${MiB}`]);
  assert.deepEqual(confirmedSeen, [MiB, MiB + 10, 2 * MiB + 9]);
  assert.notEqual(meter.begin(), span, 'a new span starts from nothing');
  assert.equal(meter.span.answers, 0);
});

test('the meter passes a failed request on, its PUT recorded without an answer', async () => {
  const meter = new FetchMeter(async () => {
    throw new TypeError('fetch failed');
  });
  const span = meter.begin();
  await assert.rejects(meter.fetch('http://h/x/parts/4?expires=1', { method: 'PUT', body: new Uint8Array(5), headers: { 'content-length': '5' } }), /fetch failed/);
  assert.deepEqual(span.puts, [{ partNumber: 4, declared: 5, streamed: 5, status: null }]);
  assert.equal(span.answers, 0);
  assert.equal(span.confirmed, 0);
});
