// Creators' webhooks (issue 23; docs/api-decisions.md "Webhooks"): registration and its
// validation, the per-user limit and ownership; every event type arrives as documented and verifies
// with the `standardwebhooks` library; one user never receives another's events; retries keep the
// webhook-id and are listed; 410 disables; dead letters are listed and replayable; rotation signs
// with both secrets; replay since T resends exactly what came after T; PATCH and DELETE; the
// Idempotency-Key. Runs against embedded and distributed alike (the receiver listens on 127.0.0.1,
// so the server runs with WEBHOOK_ALLOW_PRIVATE_NETWORKS and WEBHOOK_ALLOW_HTTP). Every check waits
// on a condition, never on time.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { api, randomWord, type Api, type Json, type RegisteredUser } from '../support/client.ts';
import { assertInt, assertKeys, expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { TEST_JWT_SECRET } from '../support/jwt.ts';
import { localOnly, startServer, type Server } from '../support/server.ts';
import { payloadOf, startReceiver, verifyDelivery, webhookHeaders, type Delivery, type Receiver } from '../support/webhook-receiver.ts';
import { eventually } from '../support/wait.ts';

const HOOKS = '/api/V1/users/api-webhooks';
const ALL_EVENTS = ['file.uploaded', 'file.processed', 'file.updated', 'file.deleted', 'comment.received', 'sale.completed'];
const VIEW_KEYS = ['id', 'url', 'events', 'description', 'enabled', 'disabled_reason', 'created_at'];
const DELIVERY_KEYS = ['message_id', 'event_id', 'event_type', 'attempt', 'attempted_at', 'outcome', 'http_status', 'latency_ms', 'error'];
const DEAD_KEYS = ['message_id', 'event_id', 'event_type', 'event_time', 'attempts', 'last_http_status', 'last_error', 'dead_at'];
const MESSAGE_ID = /^msg_[0-9a-f]{32}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
/** Four retries after the first attempt: five attempts, then a dead letter. */
const RETRY_SCHEDULE = '200ms,200ms,200ms,200ms';
const ATTEMPTS_BEFORE_DEAD = 5;
/** Deliveries go through the log, the bus and the dispatcher (another process in distributed mode). */
const DELIVERED = { timeoutMs: 60_000, intervalMs: 100 };
/** Extraction runs in a child process after the upload is acknowledged. */
const EXTRACTED = { timeoutMs: 90_000, intervalMs: 200 };

let receiver: Receiver;
const fx = useServer({
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
}, async () => {
  receiver = await startReceiver();
});
after(async () => {
  if (receiver !== undefined) await receiver.close();
});

const hookPath = (id: number | string, suffix = ''): string => `${HOOKS}/${id}${suffix}`;
const freshPath = (): string => `/hook/${randomUUID()}`;

interface Registered { id: number; secret: string; path: string; body: Json }

/** Registers an endpoint on the receiver at a fresh path (or `path`); fails the test unless 201. */
const registerHook = async (user: RegisteredUser, events: string[] = ALL_EVENTS, path = freshPath(), description?: string): Promise<Registered> => {
  const body = expectSuccess(await fx.c.json('POST', HOOKS, user.token, { url: receiver.url(path), events, ...(description === undefined ? {} : { description }) }), 201);
  return { id: body.webhook.id as number, secret: body.secret as string, path, body };
};

const sendTest = async (user: RegisteredUser, id: number, client: Api = fx.c): Promise<string> => {
  const body = expectSuccess(await client.json('POST', hookPath(id, '/test'), user.token), 202);
  assert.match(body.message_id, MESSAGE_ID);
  return body.message_id as string;
};

/** Waits until `path` got a delivery that `match` accepts; returns it (the first such). */
const delivery = async (path: string, match: (d: Delivery) => boolean, what: string): Promise<Delivery> =>
  await eventually(() => {
    const found = receiver.deliveries(path).find(match);
    assert.ok(found, `${what}: not delivered yet to ${path} (got ${receiver.deliveries(path).map((d) => payloadOf(d).type).join(', ') || 'nothing'})`);
    return found;
  }, DELIVERED);

const ofType = (type: string, fileId?: string | number) => (d: Delivery): boolean => {
  const p = payloadOf(d);
  return p.type === type && (fileId === undefined || p.data['file_id'] === Number(fileId));
};
const withId = (messageId: string) => (d: Delivery): boolean => d.headers['webhook-id'] === messageId;

/** A delivery's wire format (Standard Webhooks) and its verification by the library; returns the payload. */
const checkWire = (d: Delivery, secret: string): { type: string; timestamp: string; data: Record<string, unknown> } => {
  assert.match(d.headers['content-type'] ?? '', /^application\/json\b/);
  assert.match(d.headers['webhook-id'] ?? '', MESSAGE_ID);
  assert.match(d.headers['webhook-timestamp'] ?? '', /^\d+$/);
  assert.match(d.headers['webhook-signature'] ?? '', /^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$/);
  const verified = verifyDelivery(secret, d);
  assertKeys(verified, ['type', 'timestamp', 'data'], `${verified.type} payload`);
  assert.match(verified.timestamp, ISO);
  assert.ok(Buffer.byteLength(d.body) < 20 * 1024, 'a thin payload, under 20 KB');
  return verified;
};

const listDeliveries = async (user: RegisteredUser, id: number, query = ''): Promise<Json> =>
  expectSuccess(await fx.c.json('GET', hookPath(id, `/deliveries${query}`), user.token), 200);

describe('registration', () => {
  it('201 with the webhook view and a whsec_ secret shown once: GET and the list never show it', async () => {
    const { c } = fx;
    const user = await c.register();
    const url = receiver.url(freshPath());
    const res = await c.json('POST', HOOKS, user.token, { url, events: ['file.uploaded', 'comment.received'], description: 'my integration' });
    const body = expectSuccess(res, 201);
    assertKeys(body, ['status', 'message', 'webhook', 'secret'], 'registration answer');
    assert.equal(body.message, 'Webhook registered');
    assertKeys(body.webhook, VIEW_KEYS, 'webhook');
    assertInt(body.webhook.id, 'webhook.id');
    assert.equal(body.webhook.url, url);
    assert.deepEqual(body.webhook.events, ['file.uploaded', 'comment.received']);
    assert.equal(body.webhook.description, 'my integration');
    assert.equal(body.webhook.enabled, true);
    assert.equal(body.webhook.disabled_reason, null);
    assert.match(body.webhook.created_at, ISO);
    assert.match(body.secret, /^whsec_[A-Za-z0-9+/]{40,}=*$/);
    const secretKey = (body.secret as string).slice('whsec_'.length);

    const one = await c.json('GET', hookPath(body.webhook.id), user.token);
    assert.deepEqual(expectSuccess(one, 200), { status: 'success', webhook: body.webhook });
    assert.ok(!one.text.includes(secretKey), 'GET must not show the secret');
    const list = await c.json('GET', HOOKS, user.token);
    assert.deepEqual(expectSuccess(list, 200), { status: 'success', webhooks: [body.webhook] });
    assert.ok(!list.text.includes(secretKey), 'the list must not show the secret');

    // Without a description it is the empty string; the list is oldest first.
    const second = await registerHook(user, ['file.deleted']);
    assert.equal(second.body.webhook.description, '');
    assert.notEqual(second.secret, body.secret);
    const both = expectSuccess(await c.json('GET', HOOKS, user.token), 200);
    assert.deepEqual(both.webhooks.map((w: Json) => w.id), [body.webhook.id, second.id]);
  });

  it('needs a token', async () => {
    const res = await fx.c.json('POST', HOOKS, undefined, { url: receiver.url('/x'), events: ['file.uploaded'] });
    assert.equal(res.status, 401);
    assert.equal((await fx.c.json('GET', HOOKS)).status, 401);
  });

  it('validates the body in order: url, events, description', async () => {
    const { c } = fx;
    const user = await c.register();
    const url = receiver.url('/valid');
    const post = (body: unknown) => c.json('POST', HOOKS, user.token, body);
    expectError(await post({}), 400, 'url is required');
    expectError(await post({ events: ['nope'], description: 'x'.repeat(501) }), 400, 'url is required');
    expectError(await post({ url: 'not a url', events: ['file.uploaded'] }), 400, 'Invalid webhook URL');
    expectError(await post({ url: '   ', events: ['file.uploaded'] }), 400, 'url is required');
    // docs/api-decisions.md: absent or blank is "required"; not a text is invalid.
    expectError(await post({ url: 42, events: ['file.uploaded'] }), 400, 'Invalid webhook URL');
    expectError(await post({ url: `${url}/${'a'.repeat(2100)}`, events: ['file.uploaded'] }), 400, 'Webhook URL is too long');
    expectError(await post({ url: url.replace('http://', 'http://user:pass@'), events: ['file.uploaded'] }), 400, 'Webhook URL must not contain credentials');
    expectError(await post({ url, events: [], description: 'x'.repeat(501) }), 400, 'events must be a non-empty list of webhook event types');
    expectError(await post({ url }), 400, 'events must be a non-empty list of webhook event types');
    expectError(await post({ url, events: 'file.uploaded' }), 400, 'events must be a non-empty list of webhook event types');
    expectError(await post({ url, events: ['file.uploaded', 'file.exploded'], description: 'x'.repeat(501) }), 400, 'Unknown webhook event type');
    expectError(await post({ url, events: ['webhook.test'] }), 400, 'Unknown webhook event type');
    expectError(await post({ url, events: ['file.uploaded'], description: 42 }), 400, 'description must be a single line of text');
    expectError(await post({ url, events: ['file.uploaded'], description: 'x'.repeat(501) }), 400, 'Description is too long');
    // Nothing was registered by the refusals; 500 characters is allowed.
    assert.deepEqual(expectSuccess(await c.json('GET', HOOKS, user.token), 200).webhooks, []);
    expectSuccess(await post({ url, events: ['file.uploaded'], description: 'x'.repeat(500) }), 201);
    // A description is one line: line breaks fold into spaces.
    assert.equal(expectSuccess(await post({ url, events: ['file.uploaded'], description: 'two\nlines' }), 201).webhook.description, 'two lines');
  });

  it('at most 10 endpoints per user (409 "Webhook limit reached"); deleting one makes room', async () => {
    const { c } = fx;
    const user = await c.register();
    const ids: number[] = [];
    for (let i = 0; i < 10; i += 1) ids.push((await registerHook(user, ['file.deleted'])).id);
    expectError(await c.json('POST', HOOKS, user.token, { url: receiver.url(freshPath()), events: ['file.deleted'] }), 409, 'Webhook limit reached');
    // Another user's limit is their own.
    await registerHook(await c.register(), ['file.deleted']);
    expectSuccess(await c.json('DELETE', hookPath(ids[0] as number), user.token), 200);
    await registerHook(user, ['file.deleted']);
    assert.equal(expectSuccess(await c.json('GET', HOOKS, user.token), 200).webhooks.length, 10);
  });

  it('another user\'s, a deleted and a malformed webhook id are 404 "Webhook not found" on every route', async () => {
    const { c } = fx;
    const owner = await c.register();
    const other = await c.register();
    const hook = await registerHook(owner, ['file.uploaded']);
    const gone = await registerHook(owner, ['file.uploaded']);
    expectSuccess(await c.json('DELETE', hookPath(gone.id), owner.token), 200);
    const routes: Array<[string, string, unknown]> = [
      ['GET', '', undefined], ['PATCH', '', { enabled: false }], ['DELETE', '', undefined], ['POST', '/rotate-secret', undefined],
      ['POST', '/test', undefined], ['GET', '/deliveries', undefined], ['GET', '/dead-letters', undefined],
      ['POST', '/replay', { message_ids: [`msg_${'0'.repeat(32)}`] }],
    ];
    for (const [method, suffix, body] of routes) {
      expectError(await c.json(method, hookPath(hook.id, suffix), other.token, body), 404, 'Webhook not found');
      expectError(await c.json(method, hookPath(gone.id, suffix), owner.token, body), 404, 'Webhook not found');
      expectError(await c.json(method, hookPath('abc', suffix), owner.token, body), 404, 'Webhook not found');
      expectError(await c.json(method, hookPath(999_999_999, suffix), owner.token, body), 404, 'Webhook not found');
    }
    // The other user's attempts changed nothing.
    const still = expectSuccess(await c.json('GET', hookPath(hook.id), owner.token), 200).webhook;
    assert.equal(still.enabled, true);
    assert.deepEqual(expectSuccess(await c.json('GET', HOOKS, other.token), 200).webhooks, []);
  });

  it('Idempotency-Key on create returns the same webhook (and secret) and registers one', async () => {
    const { c } = fx;
    const user = await c.register();
    const key = randomUUID();
    const body = { url: receiver.url(freshPath()), events: ['file.uploaded'] };
    const first = expectSuccess(await c.json('POST', HOOKS, user.token, body, { headers: { 'Idempotency-Key': key } }), 201);
    const again = expectSuccess(await c.json('POST', HOOKS, user.token, body, { headers: { 'Idempotency-Key': key } }), 201);
    assert.equal(again.webhook.id, first.webhook.id);
    assert.equal(again.secret, first.secret);
    assert.equal(expectSuccess(await c.json('GET', HOOKS, user.token), 200).webhooks.length, 1);
  });
});

describe('every event type, as documented, verified with standardwebhooks', () => {
  it('file.uploaded, file.processed (the text is searchable when it arrives), file.updated, comment.received, sale.completed, file.deleted, webhook.test, in order', async () => {
    const { c } = fx;
    const owner = await c.register();
    const commenter = await c.register();
    const hook = await registerHook(owner);
    // A second endpoint of the same owner, subscribed to comments only.
    const commentsOnly = await registerHook(owner, ['comment.received']);
    const word = randomWord(12);
    // The receiver calls the API when file.processed arrives: what it finds is what it was told.
    let searchedOnArrival: boolean | undefined;
    receiver.hook(hook.path, async (d) => {
      if (payloadOf(d).type !== 'file.processed' || searchedOnArrival !== undefined) return;
      const found = await c.search(commenter.token, { search: word });
      searchedOnArrival = found.status === 200 && (found.body.results as Array<{ id: string }>).some((r) => r.id === fileId);
    });
    const bytes = new TextEncoder().encode(`The quarterly notes mention ${word} twice: ${word}.\n`);
    const { fileId, res: uploaded } = await c.uploadOk(owner.token, { title: 'Hooked notes' }, bytes, 'notes.txt', 'text/plain');

    const up = checkWire(await delivery(hook.path, ofType('file.uploaded', fileId), 'file.uploaded'), hook.secret);
    assertKeys(up.data, ['file_id', 'owner_id', 'title', 'file_name', 'content_type', 'size', 'category_id', 'uploaded_at'], 'file.uploaded data');
    assert.deepEqual({ ...up.data, uploaded_at: undefined }, {
      file_id: Number(fileId), owner_id: owner.userId, title: 'Hooked notes', file_name: 'notes.txt', content_type: 'text/plain',
      size: bytes.length, category_id: Number(uploaded.body.category_id), uploaded_at: undefined,
    });
    assert.match(up.data['uploaded_at'] as string, ISO);

    const processedDelivery = await eventually(() => {
      const d = receiver.deliveries(hook.path).find(ofType('file.processed', fileId));
      assert.ok(d, 'file.processed not delivered yet');
      return d;
    }, EXTRACTED);
    const processed = checkWire(processedDelivery, hook.secret);
    assertKeys(processed.data, ['file_id', 'owner_id', 'status', 'format', 'characters', 'truncated', 'language', 'reason', 'processed_at'], 'file.processed data');
    assert.equal(processed.data['file_id'], Number(fileId));
    assert.equal(processed.data['owner_id'], owner.userId);
    assert.equal(processed.data['status'], 'extracted');
    assert.equal(typeof processed.data['format'], 'string');
    assert.ok((processed.data['characters'] as number) > 0);
    assert.equal(processed.data['truncated'], false);
    assert.equal(processed.data['reason'], null);
    assert.match(processed.data['processed_at'] as string, ISO);
    assert.equal(searchedOnArrival, true, 'a receiver searching on file.processed finds the file by its text');

    expectSuccess(await c.update(owner.token, { id: fileId, for_sale: true, price: 5 }), 200);
    const sale = checkWire(await delivery(hook.path, (d) => ofType('file.updated', fileId)(d) && (payloadOf(d).data['changes'] as Json).for_sale === true, 'file.updated for sale'), hook.secret);
    assertKeys(sale.data, ['file_id', 'owner_id', 'changes', 'updated_at'], 'file.updated data');
    assert.deepEqual(sale.data['changes'], { for_sale: true, price: 5 });
    assert.equal(sale.data['owner_id'], owner.userId);
    assert.match(sale.data['updated_at'] as string, ISO);

    const comment = expectSuccess(await c.comment(commenter.token, { file_id: fileId, comment: 'Nice notes' }), 201);
    const got = checkWire(await delivery(hook.path, ofType('comment.received', fileId), 'comment.received'), hook.secret);
    assert.deepEqual({ ...got.data, posted_at: undefined }, {
      comment_id: Number(comment.comment_id), file_id: Number(fileId), owner_id: owner.userId, author_id: commenter.userId, comment: 'Nice notes', posted_at: undefined,
    });
    assert.match(got.data['posted_at'] as string, ISO);
    const onlyComments = checkWire(await delivery(commentsOnly.path, ofType('comment.received', fileId), 'comment.received (comments-only endpoint)'), commentsOnly.secret);
    assert.deepEqual(onlyComments, got, 'the same message to both endpoints');

    const bought = await eventually(async () => expectSuccess(await c.purchase(commenter.token, { file_id: fileId }), 201), DELIVERED);
    const sold = checkWire(await delivery(hook.path, ofType('sale.completed', fileId), 'sale.completed'), hook.secret);
    assert.deepEqual({ ...sold.data, purchased_at: undefined }, {
      sale_id: Number(bought.sale_id), file_id: Number(fileId), owner_id: owner.userId, buyer_id: commenter.userId, price: 5, purchased_at: undefined,
    });
    assert.match(sold.data['purchased_at'] as string, ISO);

    expectSuccess(await c.update(owner.token, { id: fileId, enabled: false }), 200);
    const disabled = checkWire(await delivery(hook.path, (d) => ofType('file.updated', fileId)(d) && (payloadOf(d).data['changes'] as Json).enabled === false, 'file.updated disabled'), hook.secret);
    assert.deepEqual(disabled.data['changes'], { enabled: false });

    expectSuccess(await c.del(owner.token, fileId), 200);
    const deleted = checkWire(await delivery(hook.path, ofType('file.deleted', fileId), 'file.deleted'), hook.secret);
    assert.deepEqual({ ...deleted.data, deleted_at: undefined }, { file_id: Number(fileId), owner_id: owner.userId, deleted_at: undefined });
    assert.match(deleted.data['deleted_at'] as string, ISO);

    const testId = await sendTest(owner, hook.id);
    const test = checkWire(await delivery(hook.path, withId(testId), 'webhook.test'), hook.secret);
    assert.equal(test.type, 'webhook.test');
    assert.deepEqual({ ...test.data, requested_at: undefined }, { webhook_id: hook.id, owner_id: owner.userId, requested_at: undefined });

    // In log order, each once, each its own webhook-id; the comments-only endpoint got the comment alone.
    const all = receiver.deliveries(hook.path);
    assert.deepEqual(all.map((d) => payloadOf(d).type),
      ['file.uploaded', 'file.processed', 'file.updated', 'comment.received', 'sale.completed', 'file.updated', 'file.deleted', 'webhook.test']);
    assert.equal(new Set(all.map((d) => d.headers['webhook-id'])).size, all.length);
    assert.deepEqual(receiver.deliveries(commentsOnly.path).map((d) => payloadOf(d).type), ['comment.received']);
    // A wrong secret does not verify (the check above can fail).
    assert.throws(() => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(all[0]?.body ?? '', webhookHeaders(all[0] as Delivery)));
  });

  it('a user never receives another user\'s events', async () => {
    const { c } = fx;
    const a = await c.register();
    const b = await c.register();
    const hookA = await registerHook(a);
    const hookB = await registerHook(b);
    const { fileId: bFile } = await c.uploadOk(b.token, { title: 'B private' });
    expectSuccess(await c.comment(a.token, { file_id: bFile, comment: 'from A on B' }), 201);
    expectSuccess(await c.update(b.token, { id: bFile, title: 'B renamed' }), 200);
    await delivery(hookB.path, ofType('comment.received', bFile), 'B\'s comment');
    await delivery(hookB.path, ofType('file.updated', bFile), 'B\'s update');
    // Everything of B's is dispatched; A's own later event arrives after whatever A would have got.
    const { fileId: aFile } = await c.uploadOk(a.token, { title: 'A own' });
    await delivery(hookA.path, ofType('file.uploaded', aFile), 'A\'s upload');
    const aGot = receiver.deliveries(hookA.path).map(payloadOf);
    assert.ok(aGot.every((p) => p.data['owner_id'] === a.userId), `A received another user's event: ${JSON.stringify(aGot)}`);
    assert.ok(!aGot.some((p) => p.data['file_id'] === Number(bFile)), 'A received an event about B\'s file');
    assert.ok(receiver.deliveries(hookB.path).map(payloadOf).every((p) => p.data['owner_id'] === b.userId));
  });
});

describe('retries, deliveries, 410, dead letters', () => {
  it('500 three times then 200: delivered on attempt 4 with the same webhook-id; deliveries lists the four attempts', async () => {
    const { c } = fx;
    const user = await c.register();
    const hook = await registerHook(user, ['file.uploaded']);
    receiver.script(hook.path, [500, 500, 500]);
    const messageId = await sendTest(user, hook.id);
    await eventually(() => receiver.deliveries(hook.path).length >= 4 || false, DELIVERED);
    const got = receiver.deliveries(hook.path);
    assert.equal(got.length, 4);
    assert.deepEqual(got.map((d) => d.headers['webhook-id']), [messageId, messageId, messageId, messageId]);
    assert.deepEqual(got.map((d) => d.answered), [500, 500, 500, 200]);
    for (const d of got) assert.equal(checkWire(d, hook.secret).type, 'webhook.test');
    assert.equal(new Set(got.map((d) => d.body)).size, 1, 'the same body each attempt');

    const listed = await eventually(async () => {
      const body = await listDeliveries(user, hook.id);
      assert.equal(body.deliveries.length, 4, JSON.stringify(body));
      return body;
    }, DELIVERED);
    assertKeys(listed, ['status', 'deliveries', 'next_cursor'], 'deliveries answer');
    assert.equal(listed.next_cursor, null);
    for (const d of listed.deliveries) {
      assertKeys(d, DELIVERY_KEYS, 'a delivery');
      assert.equal(d.message_id, messageId);
      assert.equal(d.event_type, 'webhook.test');
      assert.match(d.event_id, /^[0-9a-f-]{36}$/);
      assert.equal(`msg_${(d.event_id as string).replaceAll('-', '')}`, messageId);
      assert.match(d.attempted_at, ISO);
      assert.ok(typeof d.latency_ms === 'number' && d.latency_ms >= 0);
    }
    // Newest first.
    assert.deepEqual(listed.deliveries.map((d: Json) => d.attempt), [4, 3, 2, 1]);
    assert.deepEqual(listed.deliveries.map((d: Json) => d.http_status), [200, 500, 500, 500]);
    assert.deepEqual(listed.deliveries.map((d: Json) => d.outcome), ['succeeded', 'failed', 'failed', 'failed']);
    assert.equal(listed.deliveries[0].error, null);
    for (const d of listed.deliveries.slice(1)) assert.equal(typeof d.error, 'string');

    const failed = await listDeliveries(user, hook.id, '?status=failed');
    assert.deepEqual(failed.deliveries.map((d: Json) => d.attempt), [3, 2, 1]);
    const succeeded = await listDeliveries(user, hook.id, '?status=succeeded');
    assert.deepEqual(succeeded.deliveries.map((d: Json) => d.attempt), [4]);
    // Pages by cursor: the same four, no repeat.
    const page1 = await listDeliveries(user, hook.id, '?limit=3');
    assert.equal(page1.deliveries.length, 3);
    assert.equal(typeof page1.next_cursor, 'string');
    const page2 = await listDeliveries(user, hook.id, `?limit=3&cursor=${encodeURIComponent(page1.next_cursor)}`);
    assert.deepEqual([...page1.deliveries, ...page2.deliveries], listed.deliveries);
    assert.equal(page2.next_cursor, null);
    expectError(await c.json('GET', hookPath(hook.id, '/deliveries?status=pending'), user.token), 400, 'status must be failed or succeeded');
    expectError(await c.json('GET', hookPath(hook.id, '/deliveries?cursor=not-a-cursor'), user.token), 400, 'Invalid or expired cursor');
  });

  it('410 Gone disables the endpoint (enabled false, disabled_reason gone) after one attempt; replay to it is 409', async () => {
    const { c } = fx;
    const user = await c.register();
    const hook = await registerHook(user, ['file.uploaded']);
    receiver.answerAlways(hook.path, 410);
    const messageId = await sendTest(user, hook.id);
    const view = await eventually(async () => {
      const w = expectSuccess(await c.json('GET', hookPath(hook.id), user.token), 200).webhook;
      assert.equal(w.enabled, false, 'not disabled yet');
      return w;
    }, DELIVERED);
    assert.equal(view.disabled_reason, 'gone');
    assert.deepEqual(receiver.deliveries(hook.path).map((d) => d.headers['webhook-id']), [messageId]);
    // Events of a disabled endpoint are not sent.
    const marker = await registerHook(user, ['file.uploaded']);
    const { fileId } = await c.uploadOk(user.token, { title: 'after gone' });
    await delivery(marker.path, ofType('file.uploaded', fileId), 'the other endpoint\'s upload');
    assert.equal(receiver.deliveries(hook.path).length, 1);
    expectError(await c.json('POST', hookPath(hook.id, '/replay'), user.token, { message_ids: [messageId] }), 409, 'Webhook is disabled');
  });

  it('retries exhausted: a dead letter, listed; replay by message_ids redelivers it with the same webhook-id', async () => {
    const { c } = fx;
    const user = await c.register();
    const hook = await registerHook(user, ['file.uploaded']);
    receiver.answerAlways(hook.path, 503);
    const { fileId } = await c.uploadOk(user.token, { title: 'dead letter' });
    const dead = await eventually(async () => {
      const body = expectSuccess(await c.json('GET', hookPath(hook.id, '/dead-letters'), user.token), 200);
      assert.equal(body.dead_letters.length, 1, JSON.stringify(body));
      return body;
    }, DELIVERED);
    assertKeys(dead, ['status', 'dead_letters', 'next_cursor'], 'dead letters answer');
    const letter = dead.dead_letters[0];
    assertKeys(letter, DEAD_KEYS, 'a dead letter');
    assert.equal(letter.event_type, 'file.uploaded');
    assert.equal(letter.attempts, ATTEMPTS_BEFORE_DEAD);
    assert.equal(letter.last_http_status, 503);
    assert.equal(typeof letter.last_error, 'string');
    assert.match(letter.event_time, ISO);
    assert.match(letter.dead_at, ISO);
    const got = receiver.deliveries(hook.path);
    assert.equal(got.length, ATTEMPTS_BEFORE_DEAD);
    assert.ok(got.every((d) => d.headers['webhook-id'] === letter.message_id));
    assert.equal(checkWire(got[0] as Delivery, hook.secret).data['file_id'], Number(fileId));
    // Still enabled: failing for less than WEBHOOK_DISABLE_AFTER.
    assert.equal(expectSuccess(await c.json('GET', hookPath(hook.id), user.token), 200).webhook.enabled, true);

    receiver.answerAlways(hook.path, 200);
    const replay = expectSuccess(await c.json('POST', hookPath(hook.id, '/replay'), user.token, { message_ids: [letter.message_id] }), 202);
    assertKeys(replay, ['status', 'message', 'replay_id'], 'replay answer');
    assert.equal(replay.message, 'Replay queued');
    const redelivered = await delivery(hook.path, (d) => d.answered === 200, 'the replayed dead letter');
    assert.equal(redelivered.headers['webhook-id'], letter.message_id);
    assert.equal(redelivered.body, (got[0] as Delivery).body);
    checkWire(redelivered, hook.secret);
    await eventually(async () => {
      assert.deepEqual(expectSuccess(await c.json('GET', hookPath(hook.id, '/dead-letters'), user.token), 200).dead_letters, []);
      return true;
    }, DELIVERED);
  });
});

describe('rotation, replay, PATCH, DELETE', () => {
  it('rotate-secret: deliveries carry two signatures, the new first; both secrets verify', async () => {
    const { c } = fx;
    const user = await c.register();
    const hook = await registerHook(user, ['file.uploaded']);
    const before = await delivery(hook.path, withId(await sendTest(user, hook.id)), 'test before rotation');
    assert.equal((before.headers['webhook-signature'] ?? '').split(' ').length, 1);
    checkWire(before, hook.secret);

    const rotated = expectSuccess(await c.json('POST', hookPath(hook.id, '/rotate-secret'), user.token), 200);
    assertKeys(rotated, ['status', 'message', 'secret', 'previous_secret_expires_at'], 'rotation answer');
    assert.equal(rotated.message, 'Webhook secret rotated');
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, hook.secret);
    const expires = Date.parse(rotated.previous_secret_expires_at);
    assert.ok(Math.abs(expires - (Date.now() + 24 * 3600_000)) < 3600_000, `the old secret keeps signing for 24 h: ${rotated.previous_secret_expires_at}`);

    const during = await delivery(hook.path, withId(await sendTest(user, hook.id)), 'test during rotation');
    assert.equal((during.headers['webhook-signature'] ?? '').split(' ').length, 2);
    checkWire(during, rotated.secret);
    checkWire(during, hook.secret);
    // Each signature is its own secret's, the new one first.
    const [first, second] = (during.headers['webhook-signature'] ?? '').split(' ');
    const ts = new Date(Number(during.headers['webhook-timestamp']) * 1000);
    assert.equal(first, new Webhook(rotated.secret).sign(during.headers['webhook-id'] ?? '', ts, during.body));
    assert.equal(second, new Webhook(hook.secret).sign(during.headers['webhook-id'] ?? '', ts, during.body));
    assert.throws(() => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(during.body, webhookHeaders(during)));
  });

  it('replay since T redelivers exactly the messages whose event came at or after T', async () => {
    const { c } = fx;
    const user = await c.register();
    const hook = await registerHook(user, ['file.uploaded']);
    const { fileId: f1 } = await c.uploadOk(user.token, { title: 'before T 1' });
    const e1 = await delivery(hook.path, ofType('file.uploaded', f1), 'e1');
    const e2 = await delivery(hook.path, withId(await sendTest(user, hook.id)), 'e2');
    const since = new Date(Math.max(Date.parse(payloadOf(e1).timestamp), Date.parse(payloadOf(e2).timestamp)) + 1).toISOString();
    const { fileId: f3 } = await c.uploadOk(user.token, { title: 'after T 1' });
    const e3 = await delivery(hook.path, ofType('file.uploaded', f3), 'e3');
    const e4 = await delivery(hook.path, withId(await sendTest(user, hook.id)), 'e4');
    const after = new Set([e3, e4].map((d) => d.headers['webhook-id']));
    assert.ok(Date.parse(payloadOf(e3).timestamp) >= Date.parse(since));
    const countBefore = receiver.deliveries(hook.path).length;
    assert.equal(countBefore, 4);

    const post = (body: unknown) => c.json('POST', hookPath(hook.id, '/replay'), user.token, body);
    expectError(await post({}), 400, 'Give since and until, or message_ids');
    expectError(await post({ until: since }), 400, 'Give since and until, or message_ids');
    expectError(await post({ since: 'yesterday' }), 400, 'since and until must be ISO 8601 times');
    expectError(await post({ since, until: 'tomorrow' }), 400, 'since and until must be ISO 8601 times');
    expectError(await post({ since, until: new Date(Date.parse(since) - 3600_000).toISOString() }), 400, 'until must be after since');
    expectError(await post({ message_ids: [] }), 400, 'message_ids must be a non-empty list of at most 100 message ids');
    expectError(await post({ message_ids: ['nope'] }), 400, 'message_ids must be a non-empty list of at most 100 message ids');
    expectError(await post({ message_ids: Array.from({ length: 101 }, () => `msg_${randomBytes(16).toString('hex')}`) }), 400, 'message_ids must be a non-empty list of at most 100 message ids');
    assert.equal(receiver.deliveries(hook.path).length, countBefore, 'refused replays send nothing');

    expectSuccess(await post({ since }), 202);
    await eventually(() => receiver.deliveries(hook.path).length >= countBefore + 2 || false, DELIVERED);
    // A later message marks the end of what the replay sends.
    const marker = await sendTest(user, hook.id);
    await delivery(hook.path, withId(marker), 'the marker');
    const replayed = receiver.deliveries(hook.path).slice(countBefore).filter((d) => d.headers['webhook-id'] !== marker);
    assert.deepEqual(new Set(replayed.map((d) => d.headers['webhook-id'])), after);
    assert.equal(replayed.length, 2);
    for (const d of replayed) checkWire(d, hook.secret);
  });

  it('PATCH changes events, url, description and enabled; a disabled endpoint gets nothing', async () => {
    const { c } = fx;
    const user = await c.register();
    const hook = await registerHook(user, ['file.uploaded']);
    const marker = await registerHook(user, ['file.uploaded', 'comment.received']);
    const patch = (body: unknown) => c.json('PATCH', hookPath(hook.id), user.token, body);
    expectError(await patch({}), 400, 'Nothing to update');
    expectError(await patch({ enabled: 'yes' }), 400, 'enabled must be a boolean');
    expectError(await patch({ events: ['file.nope'] }), 400, 'Unknown webhook event type');
    expectError(await patch({ url: 'nope' }), 400, 'Invalid webhook URL');

    const newPath = freshPath();
    const updated = expectSuccess(await patch({ events: ['comment.received'], url: receiver.url(newPath), description: 'comments now' }), 200);
    assertKeys(updated, ['status', 'message', 'webhook'], 'PATCH answer');
    assert.equal(updated.message, 'Webhook updated');
    assert.deepEqual(updated.webhook, { ...hook.body.webhook, events: ['comment.received'], url: receiver.url(newPath), description: 'comments now' });
    assert.deepEqual(expectSuccess(await c.json('GET', hookPath(hook.id), user.token), 200).webhook, updated.webhook);

    const other = await c.register();
    const { fileId } = await c.uploadOk(user.token, { title: 'patched' });
    await delivery(marker.path, ofType('file.uploaded', fileId), 'marker upload');
    expectSuccess(await c.comment(other.token, { file_id: fileId, comment: 'hello' }), 201);
    await delivery(newPath, ofType('comment.received', fileId), 'comment at the new url');
    await delivery(marker.path, ofType('comment.received', fileId), 'marker comment');
    assert.deepEqual(receiver.deliveries(newPath).map((d) => payloadOf(d).type), ['comment.received']);
    assert.deepEqual(receiver.deliveries(hook.path), []);

    const off = expectSuccess(await patch({ enabled: false }), 200).webhook;
    assert.equal(off.enabled, false);
    expectSuccess(await c.comment(other.token, { file_id: fileId, comment: 'while disabled' }), 201);
    await delivery(marker.path, (d) => payloadOf(d).data['comment'] === 'while disabled', 'marker comment while disabled');
    assert.equal(receiver.deliveries(newPath).length, 1, 'a disabled endpoint gets nothing');
    assert.equal(expectSuccess(await patch({ enabled: true }), 200).webhook.enabled, true);
    expectSuccess(await c.comment(other.token, { file_id: fileId, comment: 'enabled again' }), 201);
    await delivery(newPath, (d) => payloadOf(d).data['comment'] === 'enabled again', 'comment once enabled again');
  });

  it('DELETE stops deliveries: 200 "Webhook deleted", then 404, not listed, nothing sent to it', async () => {
    const { c } = fx;
    const user = await c.register();
    const hook = await registerHook(user, ['file.uploaded']);
    const marker = await registerHook(user, ['file.uploaded']);
    const { fileId: f1 } = await c.uploadOk(user.token, { title: 'before delete' });
    await delivery(hook.path, ofType('file.uploaded', f1), 'before delete');
    const deleted = expectSuccess(await c.json('DELETE', hookPath(hook.id), user.token), 200);
    assert.deepEqual(deleted, { status: 'success', message: 'Webhook deleted' });
    expectError(await c.json('GET', hookPath(hook.id), user.token), 404, 'Webhook not found');
    expectError(await c.json('DELETE', hookPath(hook.id), user.token), 404, 'Webhook not found');
    assert.deepEqual(expectSuccess(await c.json('GET', HOOKS, user.token), 200).webhooks.map((w: Json) => w.id), [marker.id]);
    const { fileId: f2 } = await c.uploadOk(user.token, { title: 'after delete' });
    await delivery(marker.path, ofType('file.uploaded', f2), 'marker after delete');
    assert.equal(receiver.deliveries(hook.path).length, 1);
  });
});

describe('no server-side request forgery without the opt-in', { skip: localOnly }, () => {
  // Its own server: http allowed (so the address guard is what refuses), private networks not.
  let server: Server | undefined;
  let c: Api;
  let user: RegisteredUser;
  let registered: Registered;
  before(async () => {
    server = await startServer({
      JWT_SECRET: TEST_JWT_SECRET, WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
    });
    c = api(server);
    user = await c.register();
    // Registered while the operator allowed private networks: the connect-time guard is tested below.
    const body = expectSuccess(await c.json('POST', HOOKS, user.token, { url: receiver.url('/ssrf'), events: ['file.uploaded'] }), 201);
    registered = { id: body.webhook.id, secret: body.secret, path: '/ssrf', body };
    await server.restart({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: undefined });
  });
  after(async () => {
    if (server !== undefined) await server.dispose();
  });

  const PRIVATE = 'Webhook URL must not point to a private or special address';
  const post = (url: string) => c.json('POST', HOOKS, user.token, { url, events: ['file.uploaded'] });

  it('refuses loopback, link-local (cloud metadata), private and special addresses, and a name resolving to one', async () => {
    for (const url of [
      receiver.url('/x'), 'http://127.0.0.1/', 'http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://192.168.1.1/',
      'http://[::1]/', 'http://0.0.0.0/', 'http://[::ffff:127.0.0.1]/', 'https://localhost/', `https://localhost:${new URL(receiver.baseUrl).port}/`,
    ]) {
      expectError(await post(url), 400, PRIVATE);
    }
    assert.deepEqual(expectSuccess(await c.json('GET', HOOKS, user.token), 200).webhooks.map((w: Json) => w.id), [registered.id]);
  });

  it('checks again at connect time: an endpoint registered under the opt-in is not connected to without it', async () => {
    await sendTest(user, registered.id, c);
    const failed = await eventually(async () => {
      const body = expectSuccess(await c.json('GET', hookPath(registered.id, '/deliveries'), user.token), 200);
      assert.ok(body.deliveries.length >= 1, 'no attempt yet');
      return body.deliveries[0];
    }, DELIVERED);
    assert.equal(failed.outcome, 'failed');
    assert.equal(failed.http_status, null);
    assert.equal(failed.error, 'refused: private address');
    assert.equal(receiver.deliveries('/ssrf').length, 0, 'the receiver on loopback was never reached');
  });

  it('https only unless WEBHOOK_ALLOW_HTTP', async () => {
    assert.ok(server);
    await server.restart({ WEBHOOK_ALLOW_HTTP: undefined });
    expectError(await post('http://example.com/hook'), 400, 'Webhook URL must use https');
    expectError(await post(receiver.url('/x')), 400, 'Webhook URL must use https');
    expectError(await post('https://127.0.0.1/'), 400, PRIVATE);
    expectError(await post('https://169.254.169.254/'), 400, PRIVATE);
  });
});
