// client.webhooks against a fetch that plays the server: each call's method, path, query and
// snake_case body, the token, an Idempotency-Key on every write (kept across a retry), errors as
// DocshareApiError, and the page walks through next_cursor.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createClient, DocshareApiError, type FetchLike } from '../src/index.ts';

interface Call { method: string; url: string; headers: Headers; body: unknown }

/** A client whose fetch records each request and answers with the next of `answers` (the last repeats). */
function fake(...answers: [number, unknown][]): { client: ReturnType<typeof createClient>; calls: Call[] } {
  const calls: Call[] = [];
  const fetch_: FetchLike = async (input, init) => {
    const text = typeof init?.body === 'string' ? init.body : undefined;
    calls.push({ method: init?.method ?? 'GET', url: String(input), headers: new Headers(init?.headers), body: text === undefined ? undefined : JSON.parse(text) });
    const [status, body] = (answers.length > 1 ? answers.shift() : answers[0]) as [number, unknown];
    return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  };
  return { client: createClient({ baseUrl: 'http://api.test', token: 'tok', fetch: fetch_, retryBaseDelayMs: 1 }), calls };
}

const webhook = { id: 7, url: 'https://hooks.example.com/in', events: ['file.uploaded'], description: '', enabled: true, disabled_reason: null, created_at: '2025-11-22T10:00:00.000Z' };
const BASE = 'http://api.test/api/V1/users/api-webhooks';

describe('client.webhooks', () => {
  it('create POSTs the registration as JSON with the token and an Idempotency-Key; resolves with the webhook and its secret', async () => {
    const answer = { status: 'success', message: 'Webhook registered', webhook, secret: 'whsec_abc' };
    const { client, calls } = fake([201, answer]);
    assert.deepEqual(await client.webhooks.create({ url: webhook.url, events: ['file.uploaded', 'comment.received'], description: 'mine' }), answer);
    const [c] = calls;
    assert.equal(c?.method, 'POST');
    assert.equal(c?.url, BASE);
    assert.deepEqual(c?.body, { url: webhook.url, events: ['file.uploaded', 'comment.received'], description: 'mine' });
    assert.equal(c?.headers.get('x-authorization'), 'Bearer tok');
    assert.match(c?.headers.get('idempotency-key') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('a retried write carries the same Idempotency-Key; a caller key is sent as given', async () => {
    const { client, calls } = fake([503, { status: 'error', message: 'Service unavailable' }], [202, { status: 'success', message: 'Test delivery queued', message_id: 'msg_1' }]);
    assert.equal((await client.webhooks.test(7)).message_id, 'msg_1');
    assert.equal(calls.length, 2);
    assert.equal(calls[0]?.headers.get('idempotency-key'), calls[1]?.headers.get('idempotency-key'));
    await client.webhooks.rotateSecret(7, { idempotencyKey: 'rotate-7-once' });
    assert.equal(calls[2]?.headers.get('idempotency-key'), 'rotate-7-once');
  });

  it('each call: its method and path; reads carry no Idempotency-Key and no body', async () => {
    const { client, calls } = fake([200, { status: 'success', webhooks: [webhook], webhook, deliveries: [], dead_letters: [], next_cursor: null }]);
    await client.webhooks.list();
    await client.webhooks.get(7);
    await client.webhooks.update('7', { enabled: false, events: ['file.deleted'] });
    await client.webhooks.remove(7);
    await client.webhooks.rotateSecret(7);
    await client.webhooks.test(7);
    await client.webhooks.deliveries(7, { status: 'failed', cursor: 'c/1', limit: 10 });
    await client.webhooks.deliveries(7);
    await client.webhooks.deadLetters(7, { limit: 5 });
    assert.deepEqual(calls.map((c) => `${c.method} ${c.url.slice(BASE.length)}`), [
      'GET ', 'GET /7', 'PATCH /7', 'DELETE /7', 'POST /7/rotate-secret', 'POST /7/test',
      'GET /7/deliveries?status=failed&cursor=c%2F1&limit=10', 'GET /7/deliveries', 'GET /7/dead-letters?limit=5',
    ]);
    assert.deepEqual(calls[2]?.body, { enabled: false, events: ['file.deleted'] });
    for (const c of calls) {
      assert.equal(c.headers.get('idempotency-key') !== null, ['POST', 'PATCH', 'DELETE'].includes(c.method), `${c.method} ${c.url}`);
      if (c.method === 'GET') assert.equal(c.body, undefined);
    }
  });

  it('replay: since/until as ISO times (a Date too), or message_ids', async () => {
    const { client, calls } = fake([202, { status: 'success', message: 'Replay queued', replay_id: 'r1' }]);
    await client.webhooks.replay(7, { since: new Date('2025-11-22T10:00:00Z') });
    await client.webhooks.replay(7, { since: '2025-11-22T10:00:00Z', until: new Date('2025-11-22T11:00:00Z') });
    await client.webhooks.replay(7, { messageIds: ['msg_a', 'msg_b'] });
    assert.deepEqual(calls.map((c) => c.body), [
      { since: '2025-11-22T10:00:00.000Z' },
      { since: '2025-11-22T10:00:00Z', until: '2025-11-22T11:00:00.000Z' },
      { message_ids: ['msg_a', 'msg_b'] },
    ]);
    assert.ok(calls.every((c) => c.method === 'POST' && c.url === `${BASE}/7/replay`));
  });

  it('an error is a DocshareApiError with the server message, not retried', async () => {
    const { client, calls } = fake([404, { status: 'error', message: 'Webhook not found' }]);
    const error = await client.webhooks.get(99).catch((e: unknown) => e);
    assert.ok(error instanceof DocshareApiError);
    assert.equal(error.status, 404);
    assert.equal(error.message, 'Webhook not found');
    assert.equal(calls.length, 1);
  });

  it('allDeliveries and allDeadLetters walk next_cursor to its end, keeping the filter', async () => {
    const attempt = (n: number) => ({ message_id: `msg_${n}`, event_id: `e${n}`, event_type: 'file.uploaded', attempt: 1, attempted_at: 't', outcome: 'failed', http_status: 500, latency_ms: 3, error: 'HTTP 500' });
    const { client, calls } = fake(
      [200, { status: 'success', deliveries: [attempt(1), attempt(2)], next_cursor: 'p2' }],
      [200, { status: 'success', deliveries: [attempt(3)], next_cursor: null }],
      [200, { status: 'success', dead_letters: [{ message_id: 'msg_9' }], next_cursor: null }],
    );
    const seen: string[] = [];
    for await (const d of client.webhooks.allDeliveries(7, { status: 'failed' })) seen.push(d.message_id);
    assert.deepEqual(seen, ['msg_1', 'msg_2', 'msg_3']);
    assert.deepEqual(calls.map((c) => c.url.slice(BASE.length)), ['/7/deliveries?status=failed', '/7/deliveries?status=failed&cursor=p2']);
    const dead: string[] = [];
    for await (const d of client.webhooks.allDeadLetters(7)) dead.push(d.message_id);
    assert.deepEqual(dead, ['msg_9']);
  });

  it('a walk ends with an error when the server sends a cursor twice', async () => {
    const { client } = fake([200, { status: 'success', deliveries: [{ message_id: 'msg_1' }], next_cursor: 'same' }]);
    await assert.rejects(async () => {
      for await (const _ of client.webhooks.allDeliveries(7)) { /* walk */ }
    }, /cursor "same" twice/);
  });
});
