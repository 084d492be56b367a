/**
 * bench:stack's webhooks scenario, its pure part (what a delivery says, first arrivals, missing
 * tags, percentiles, the RSS trend) and its receiver on a loopback port.
 *   npm exec -- node --test --test-reporter=spec bench/stack/test/webhooks.test.ts
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { percentile, request } from '../load.ts';
import { startReceiver } from '../webhooks-receiver.ts';
import {
  FirstArrivals, commentTag, missingSeqs, parseDelivery, parseReceiverPath, percentiles, receiverPath, rssTrend, summarizeLatencies, type Delivery,
} from '../webhooks-stats.ts';

const payload = (comment: string, timestamp = '2026-03-01T10:00:00.250Z'): string =>
  JSON.stringify({ type: 'comment.received', timestamp, data: { comment_id: 1, file_id: 2, owner_id: 3, author_id: 3, comment, posted_at: timestamp } });

test('a receiver path names its mode and index, and nothing else parses', () => {
  assert.deepEqual(parseReceiverPath(receiverPath('ok', 17)), { mode: 'ok', index: 17 });
  assert.deepEqual(parseReceiverPath('/hang/0'), { mode: 'hang', index: 0 });
  for (const path of ['/', '/ok', '/ok/', '/ok/x', '/slow/1', '/ok/1/2', '/fail/-1']) assert.equal(parseReceiverPath(path), null, path);
});

test('a delivery: event time from the payload\'s timestamp, the tag from the comment; the latency is arrival − event time', () => {
  const arrival = Date.parse('2026-03-01T10:00:00.250Z') + 42;
  const d = parseDelivery('/ok/5', 'msg_abc', payload(`${commentTag('a', 123)} bench webhook load`), arrival);
  assert.ok(typeof d !== 'string');
  assert.deepEqual(d, {
    mode: 'ok', index: 5, messageId: 'msg_abc', type: 'comment.received', eventMs: Date.parse('2026-03-01T10:00:00.250Z'), arrivalMs: arrival, phase: 'a', seq: 123,
  });
  const untagged = parseDelivery('/fail/0', 'msg_x', JSON.stringify({ type: 'webhook.test', timestamp: '2026-03-01T10:00:00Z', data: { webhook_id: 1 } }), 0);
  assert.ok(typeof untagged !== 'string');
  assert.equal(untagged.phase, null);
  assert.equal(untagged.seq, null);
});

test('what is not a delivery says why', () => {
  assert.match(parseDelivery('/nope', 'msg_a', payload('x'), 0) as string, /unknown path/);
  assert.equal(parseDelivery('/ok/1', undefined, payload('x'), 0), 'no webhook-id header');
  assert.equal(parseDelivery('/ok/1', 'msg_a', '{', 0), 'body is not JSON');
  assert.equal(parseDelivery('/ok/1', 'msg_a', '42', 0), 'body is not an object');
  assert.equal(parseDelivery('/ok/1', 'msg_a', '{"type":"x"}', 0), 'body without type or timestamp');
  assert.match(parseDelivery('/ok/1', 'msg_a', payload('x', 'yesterday'), 0) as string, /is not a time/);
});

const delivery = (over: Partial<Delivery>): Delivery => ({
  mode: 'ok', index: 0, messageId: 'msg_1', type: 'comment.received', eventMs: 1_000, arrivalMs: 1_100, phase: 'a', seq: 1, ...over,
});

test('first arrivals: a retry with the same webhook-id counts as a repeat, another phase\'s as other; latencies and missing tags per mode', () => {
  const arrivals = new FirstArrivals('a');
  assert.equal(arrivals.add(delivery({})), true);
  assert.equal(arrivals.add(delivery({ arrivalMs: 9_000 })), false); // the retry keeps the first arrival's latency
  assert.equal(arrivals.add(delivery({ messageId: 'msg_2', seq: 2, arrivalMs: 1_300 })), true);
  assert.equal(arrivals.add(delivery({ messageId: 'msg_3', seq: 1, mode: 'hang', arrivalMs: 31_000 })), true);
  assert.equal(arrivals.add(delivery({ messageId: 'msg_4', seq: 3, phase: 'w' })), false); // a late warm-up delivery
  assert.equal(arrivals.add(delivery({ messageId: 'msg_5', phase: null, seq: null })), false);
  assert.equal(arrivals.repeats, 1);
  assert.equal(arrivals.others, 2);
  assert.deepEqual(arrivals.latencies('ok').sort((a, b) => a - b), [100, 300]);
  assert.deepEqual(arrivals.latencies('hang'), [30_000]);
  assert.equal(arrivals.count('ok'), 2);
  assert.equal(arrivals.count('fail'), 0);
  assert.deepEqual(missingSeqs(arrivals, 'ok', [1, 2, 3, 4]), [3, 4]);
  assert.deepEqual(missingSeqs(arrivals, 'hang', [1, 2]), [2]);
});

test('percentiles are nearest-rank, as load.ts\'s percentile, from one sort', () => {
  const samples = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 1000); // 0..999 shuffled
  assert.deepEqual(percentiles(samples, [50, 99, 100, 0]), [499, 989, 999, 0]);
  for (const p of [1, 25, 50, 90, 99, 99.9]) assert.equal(percentiles(samples, [p])[0], percentile(samples, p), `p${p}`);
  assert.deepEqual(percentiles([5], [50, 99]), [5, 5]);
  assert.ok(percentiles([], [50]).every(Number.isNaN));
  assert.deepEqual(summarizeLatencies([3, 1, 2]), { count: 3, p50: 2, p99: 3, max: 3 });
  assert.equal(summarizeLatencies([]).count, 0);
});

test('the RSS trend: start, end, max and least-squares slopes per hour; samples without a process left out', () => {
  // 100 MiB growing 0.01 MiB/s = 36 MiB/h for the first half, flat after
  const samples = Array.from({ length: 37 }, (_, i) => ({ t: i * 100, mib: i <= 18 ? 100 + i : 118 }));
  samples.splice(5, 0, { t: 450, mib: Number.NaN });
  const trend = rssTrend(samples);
  assert.equal(trend.samples, 37);
  assert.equal(trend.startMiB, 100);
  assert.equal(trend.endMiB, 118);
  assert.equal(trend.maxMiB, 118);
  assert.ok(trend.slopeMiBPerHour > 10 && trend.slopeMiBPerHour < 36, String(trend.slopeMiBPerHour));
  assert.equal(trend.secondHalfSlopeMiBPerHour, 0);
  const flat = rssTrend([{ t: 0, mib: 50 }, { t: 10, mib: 50 }, { t: 20, mib: 50 }]);
  assert.equal(flat.slopeMiBPerHour, 0);
  assert.ok(Number.isNaN(rssTrend([{ t: 0, mib: 50 }]).slopeMiBPerHour));
  assert.ok(Number.isNaN(rssTrend([]).startMiB));
});

test('the receiver: 200 for ok, 500 for fail, each delivery handed to the sink and verified with its endpoint\'s secret', async () => {
  const receiver = await startReceiver(0);
  try {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    receiver.setSecret('ok', 3, secret);
    receiver.setSecret('fail', 0, secret);
    const got: Delivery[] = [];
    receiver.sink = (d) => got.push(d);
    const send = async (mode: 'ok' | 'fail', index: number, id: string, signer = new Webhook(secret)) => {
      const now = new Date();
      const body = payload(commentTag('t', got.length), now.toISOString());
      return request('POST', receiver.url(mode, index), {
        'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signer.sign(id, now, body),
      }, body);
    };
    assert.equal((await send('ok', 3, 'msg_1')).status, 200);
    assert.equal((await send('fail', 0, 'msg_2')).status, 500);
    assert.equal((await send('ok', 3, 'msg_3', new Webhook(`whsec_${Buffer.alloc(32, 8).toString('base64')}`))).status, 200);
    assert.equal((await request('POST', `http://127.0.0.1:${receiver.port}/elsewhere`, {}, '{}')).status, 404);
    assert.deepEqual(got.map((d) => [d.mode, d.index, d.messageId, d.phase]), [['ok', 3, 'msg_1', 't'], ['fail', 0, 'msg_2', 't'], ['ok', 3, 'msg_3', 't']]);
    assert.deepEqual(receiver.counts.byMode, { ok: 2, hang: 0, fail: 1 });
    assert.equal(receiver.counts.badSignatures, 1);
    assert.deepEqual(receiver.counts.invalid, { 'unknown path': 1 });
  } finally {
    await receiver.close();
  }
});
