// The dispatcher over the memory WebhookStore, a scripted Deliverer and a recorder that remembers:
// what a batch schedules (and when), what a redelivery or an old event does not, who receives what,
// retries and dead letters, disabling, the queues' fairness, order and bounds, replays and tests.
// Nothing is timed: the poller runs every few ms and the tests wait on conditions.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { retrying, webhookMessageId, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { makeLogger } from '@docshare/http';
import type { WebhookSettings } from '@docshare/runtime/config';
import type { Deliverer, DeliveryRequest, DeliveryResult, SecretSealer } from '@docshare/webhooks';
import { makeMemoryWebhookStore, type WebhookStore } from '@docshare/webhooks/store';
import { makeDispatcher, type Dispatcher } from '../src/dispatcher.ts';
import { registerWebhookMetrics } from '../src/metrics.ts';
import type { DispatcherDeps } from '../src/module.ts';
import { makeLog, T0 } from './history.ts';

const logger = makeLogger('test', 'silent');
const GROUP = 'webhook-dispatcher';

const settings = (overrides: Partial<WebhookSettings> = {}): WebhookSettings => ({
  maxPerUser: 10, policy: { allowHttp: true, allowPrivate: true }, secretKey: undefined, retryScheduleMs: [1, 1, 1],
  disableAfterMs: 5 * 86_400_000, timeoutMs: 1_000, concurrency: 8, endpointConcurrency: 1, retentionDays: 30, dispatcherUrl: undefined, ...overrides,
});

/** Opens a sealed secret of history.ts: `whsec_<ct>`. */
const sealer: SecretSealer = {
  seal: () => { throw new Error('not used'); },
  open: (sealed) => `whsec_${sealed.ct}`,
};

const ok = (status = 200): DeliveryResult => ({ outcome: status === 410 ? 'gone' : status < 300 ? 'succeeded' : 'failed', status, latencyMs: 1, error: status < 300 ? null : `HTTP ${status}` });

/**
 * A Deliverer that answers each URL from its script (then 200), remembers every request, and can
 * hold the requests of a URL until released.
 */
const scriptedDeliverer = (script: Record<string, number[]> = {}) => {
  const requests: DeliveryRequest[] = [];
  const held = new Set<string>();
  const waiting: (() => void)[] = [];
  const answers = new Map(Object.entries(script).map(([url, statuses]) => [url, [...statuses]]));
  const deliverer: Deliverer = {
    async deliver(request) {
      requests.push(request);
      if (held.has(request.url)) await new Promise<void>((resolve) => waiting.push(resolve));
      return ok(answers.get(request.url)?.shift() ?? 200);
    },
    close() {},
  };
  return {
    deliverer, requests,
    hold: (url: string) => held.add(url),
    release() {
      held.clear();
      for (const resolve of waiting.splice(0)) resolve();
    },
    to: (url: string) => requests.filter((r) => r.url === url),
  };
};

/** Waits (polling, bounded by attempts, not by a time budget) until `check` holds. */
const until = (check: () => boolean | Promise<boolean>, what: string): Promise<void> => retrying(async () => {
  if (!(await check())) throw new Error(`still waiting for ${what}`);
}, { attempts: 1_000, baseMs: 2, capMs: 10 });

const batchOf = (records: readonly StoredEvent<CloudEvent>[], partition = 0) =>
  ({ partition, records: [...records], through: records.at(-1)?.position ?? 0 });

const running: Dispatcher[] = [];
afterEach(async () => {
  for (const dispatcher of running.splice(0)) await dispatcher.stop();
});

const setup = (options: {
  script?: Record<string, number[]>; settings?: Partial<WebhookSettings>; deps?: Partial<DispatcherDeps>; store?: WebhookStore;
} = {}) => {
  const store = options.store ?? makeMemoryWebhookStore();
  const delivery = scriptedDeliverer(options.script);
  const disabled: [number, number, string][] = [];
  const registry = new Registry();
  const dispatcher = makeDispatcher({
    store, sealer, deliverer: delivery.deliverer, logger, group: GROUP,
    recorder: { disable: async (webhookId, ownerId, reason) => { disabled.push([webhookId, ownerId, reason]); } },
    settings: settings(options.settings), readModelsReached: async () => {}, pollMs: 2, metrics: registerWebhookMetrics(registry),
    ...options.deps,
  });
  running.push(dispatcher);
  dispatcher.start();
  return { store, dispatcher, disabled, registry, ...delivery };
};

const url = (webhookId: number): string => `https://hooks.example/${webhookId}`;
const metric = async (registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> => {
  const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
  return values.filter((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value)).reduce((sum, v) => sum + v.value, 0);
};

describe('webhook dispatcher', () => {
  it('stores the batch\'s tasks before handle resolves, and delivers them once the read models have the batch', async () => {
    let reached: (() => void) | undefined;
    const waitedFor: number[] = [];
    const t = setup({
      deps: {
        readModelsReached: (position) => {
          waitedFor.push(position);
          return new Promise<void>((resolve) => { reached = resolve; });
        },
      },
    });
    const log = makeLog();
    log.register(1, 1);
    const upload = log.upload(10, 1);
    log.view(10, 1);
    await t.dispatcher.handle(batchOf(log.records));
    assert.equal(await t.store.pendingCount(1), 1, 'the task is in the store when handle resolves');
    assert.equal(await t.store.checkpoint(GROUP, 0), 3);
    assert.deepEqual((await t.store.endpoint(1))?.url, url(1));
    assert.equal(t.requests.length, 0, 'nothing is sent before the read models have the batch');
    await until(() => reached !== undefined, 'the wait for the read models');
    assert.deepEqual(waitedFor, [2]);
    reached?.();
    await until(() => t.requests.length === 1, 'the delivery');
    const [request] = t.requests;
    assert.equal(request?.messageId, webhookMessageId(upload.event.id));
    assert.deepEqual(request?.secrets, ['whsec_s1']);
    assert.equal(JSON.parse(request?.body ?? '{}').type, 'file.uploaded');
    await until(async () => (await t.store.pendingCount(1)) === 0, 'the task settled');
    const attempts = await t.store.attempts(1, { limit: 10 });
    assert.deepEqual(attempts.items.map((a) => [a.attempt, a.outcome, a.status, a.messageId]), [[1, 'succeeded', 200, request?.messageId]]);
  });

  it('batches wait for the read models together, and their tasks are queued in batch order', async () => {
    const waits = new Map<number, () => void>();
    const memory = makeMemoryWebhookStore();
    let polls = 0;
    const counted: WebhookStore = { ...memory, claimDue: (...args) => { polls++; return memory.claimDue(...args); } };
    const t = setup({
      store: counted,
      deps: { readModelsReached: (position) => new Promise<void>((resolve) => { waits.set(position, resolve); }) },
    });
    const log = makeLog();
    log.register(1, 1);
    const first = log.upload(10, 1);
    const second = log.upload(11, 1);
    await t.dispatcher.handle(batchOf(log.records.slice(0, 2)));
    await t.dispatcher.handle(batchOf(log.records.slice(2)));
    await until(() => waits.size === 2, 'both waits started');
    waits.get(3)?.();
    const polled = polls;
    await until(() => polls >= polled + 3, 'three rounds of the poller');
    assert.equal(t.requests.length, 0, 'the second batch waits for the first');
    waits.get(2)?.();
    await until(() => t.requests.length === 2, 'both deliveries');
    assert.deepEqual(t.requests.map((r) => r.messageId), [webhookMessageId(first.event.id), webhookMessageId(second.event.id)]);
  });

  it('a batch delivered again (its checkpoint not written) schedules and sends nothing twice', async () => {
    const store = makeMemoryWebhookStore();
    let failOnce = true;
    const flaky: WebhookStore = {
      ...store,
      setCheckpoint: async (group, partition, position) => {
        if (failOnce) {
          failOnce = false;
          throw new Error('store down');
        }
        await store.setCheckpoint(group, partition, position);
      },
    };
    const t = setup({ store: flaky });
    const log = makeLog();
    log.register(1, 1);
    log.upload(10, 1);
    log.upload(11, 1);
    const batch = batchOf(log.records);
    await assert.rejects(t.dispatcher.handle(batch), /store down/);
    await t.dispatcher.handle(batch);
    await t.dispatcher.handle(batch);
    await until(async () => (await store.pendingCount(1)) === 0 && t.requests.length === 2, 'both deliveries');
    assert.equal(new Set(t.requests.map((r) => r.messageId)).size, 2);
    assert.equal((await store.attempts(1, { limit: 10 })).items.length, 2);
  });

  it('events at or before its checkpoint schedule nothing, but their endpoint changes are folded', async () => {
    const t = setup();
    const log = makeLog();
    log.register(1, 1);
    log.upload(10, 1);
    log.test(1, 1);
    log.replaySince(1, 1, T0, T0 + 60_000);
    await t.store.setCheckpoint(GROUP, 0, 4);
    log.update(1, 1, { url: 'https://moved.example/1' });
    await t.dispatcher.handle(batchOf(log.records));
    assert.equal(await t.store.pendingCount(1), 0);
    assert.equal((await t.store.endpoint(1))?.url, 'https://moved.example/1');
    assert.equal(await t.store.checkpoint(GROUP, 0), 5);
    log.upload(12, 1);
    await t.dispatcher.handle(batchOf(log.records.slice(5)));
    await until(() => t.requests.length === 1, 'the delivery after the checkpoint');
    assert.equal(t.requests[0]?.url, 'https://moved.example/1');
  });

  it('a user\'s endpoints receive only that user\'s events, of the types they subscribe to', async () => {
    const t = setup();
    const log = makeLog();
    log.register(1, 1, ['file.uploaded']);
    log.register(2, 1, ['file.deleted', 'comment.received']);
    log.register(3, 2, ['file.uploaded', 'file.deleted']);
    const mine = log.upload(10, 1);
    log.view(10, 1);
    const deleted = log.fileDeleted(10, 1);
    const theirs = log.upload(20, 2);
    await t.dispatcher.handle(batchOf(log.records));
    await until(() => t.requests.length === 3, 'three deliveries');
    await until(async () => (await t.store.pendingCount(1)) + (await t.store.pendingCount(2)) + (await t.store.pendingCount(3)) === 0, 'settled');
    assert.deepEqual(t.to(url(1)).map((r) => r.messageId), [webhookMessageId(mine.event.id)]);
    assert.deepEqual(t.to(url(2)).map((r) => r.messageId), [webhookMessageId(deleted.event.id)]);
    assert.deepEqual(t.to(url(3)).map((r) => r.messageId), [webhookMessageId(theirs.event.id)]);
  });

  it('an event for a disabled endpoint is kept skipped (replayable), never sent', async () => {
    const t = setup();
    const log = makeLog();
    log.register(1, 1);
    log.update(1, 1, { enabled: false });
    const upload = log.upload(10, 1);
    await t.dispatcher.handle(batchOf(log.records));
    assert.equal(await t.store.pendingCount(1), 0);
    // Kept: a replay of its message reopens it.
    assert.equal(await t.store.reopen(1, { messageIds: [webhookMessageId(upload.event.id)] }, Date.now()), 1);
    assert.equal(t.requests.length, 0);
  });

  it('500, 500, 500, 200: delivered on attempt 4, with the same webhook-id every time', async () => {
    const t = setup({ script: { [url(1)]: [500, 500, 500] } });
    const log = makeLog();
    log.register(1, 1);
    const upload = log.upload(10, 1);
    await t.dispatcher.handle(batchOf(log.records));
    await until(async () => (await t.store.attempts(1, { outcome: 'succeeded', limit: 10 })).items.length === 1, 'the success');
    assert.deepEqual(t.requests.map((r) => r.messageId), Array(4).fill(webhookMessageId(upload.event.id)));
    const attempts = (await t.store.attempts(1, { limit: 10 })).items.reverse();
    assert.deepEqual(attempts.map((a) => [a.attempt, a.outcome, a.status]), [[1, 'failed', 500], [2, 'failed', 500], [3, 'failed', 500], [4, 'succeeded', 200]]);
    assert.equal(await t.store.pendingCount(1), 0);
    assert.equal((await t.store.deadLetters(1, { limit: 10 })).items.length, 0);
    assert.equal(await t.store.failingSince(1), null, 'healthy again');
    assert.equal(await metric(t.registry, 'docshare_webhook_deliveries_total', { outcome: 'failed' }), 3);
    assert.equal(await metric(t.registry, 'docshare_webhook_deliveries_total', { outcome: 'succeeded' }), 1);
  });

  it('retries spent: a dead letter, counted', async () => {
    const t = setup({ script: { [url(1)]: [500, 503, 502, 500] }, settings: { retryScheduleMs: [1, 1] } });
    const log = makeLog();
    log.register(1, 1);
    const upload = log.upload(10, 1);
    await t.dispatcher.handle(batchOf(log.records));
    await until(async () => (await t.store.deadLetters(1, { limit: 10 })).items.length === 1, 'the dead letter');
    const [dead] = (await t.store.deadLetters(1, { limit: 10 })).items;
    assert.equal(dead?.messageId, webhookMessageId(upload.event.id));
    assert.equal(dead?.attempts, 3);
    assert.equal(dead?.lastStatus, 502);
    assert.equal(t.requests.length, 3);
    assert.equal(await metric(t.registry, 'docshare_webhook_dead_letters_total'), 1);
    assert.equal(await metric(t.registry, 'docshare_webhook_deliveries_total', { outcome: 'dead' }), 1);
    assert.equal(await t.store.pendingCount(1), 0);
  });

  it('410 Gone: the endpoint is disabled (reason gone) and the message is a dead letter', async () => {
    const t = setup({ script: { [url(1)]: [410] } });
    const log = makeLog();
    log.register(1, 7);
    log.upload(10, 7);
    await t.dispatcher.handle(batchOf(log.records));
    await until(() => t.disabled.length === 1, 'the disable');
    assert.deepEqual(t.disabled, [[1, 7, 'gone']]);
    await until(async () => (await t.store.deadLetters(1, { limit: 10 })).items.length === 1, 'the dead letter');
    assert.equal(t.requests.length, 1, 'no retry');
  });

  it('an endpoint failing for WEBHOOK_DISABLE_AFTER is disabled (reason failing)', async () => {
    let now = T0 + 3_600_000;
    const t = setup({ script: { [url(1)]: [500, 500, 500] }, settings: { disableAfterMs: 60_000, retryScheduleMs: [1, 1] }, deps: { clock: () => now } });
    const log = makeLog();
    log.register(1, 1);
    log.upload(10, 1);
    await t.dispatcher.handle(batchOf(log.records));
    await until(async () => (await t.store.failingSince(1)) === now, 'the first failure');
    assert.deepEqual(t.disabled, [], 'failing for less than the limit');
    now += 60_000;
    t.dispatcher.wake();
    await until(() => t.disabled.length === 1, 'the disable');
    assert.deepEqual(t.disabled, [[1, 1, 'failing']]);
  });

  it('an endpoint that hangs does not delay another endpoint\'s deliveries', async () => {
    const t = setup();
    t.hold(url(1));
    const log = makeLog();
    log.register(1, 1);
    log.register(2, 2);
    log.upload(10, 1);
    log.upload(11, 1);
    log.upload(20, 2);
    log.upload(21, 2);
    await t.dispatcher.handle(batchOf(log.records));
    await until(() => t.to(url(2)).length === 2, 'endpoint 2\'s deliveries');
    await until(async () => (await t.store.pendingCount(2)) === 0, 'endpoint 2 settled');
    assert.equal(t.to(url(1)).length, 1, 'endpoint 1: one in flight, hanging');
    assert.equal(await metric(t.registry, 'docshare_webhook_queue_depth', { webhook_id: '1' }), 2, 'one in flight, one waiting');
    assert.equal(await metric(t.registry, 'docshare_webhook_queue_depth', { webhook_id: '2' }), 0, 'an endpoint with nothing queued is not listed');
    t.release();
    await until(async () => (await t.store.pendingCount(1)) === 0 && t.to(url(1)).length === 2, 'endpoint 1 settles once released');
  });

  it('one in flight per endpoint: first attempts in log order, through the backlog in the store too', async () => {
    // Room for 2 per endpoint in memory: most of the 12 wait in the store for the poller.
    const t = setup({ deps: { endpointQueue: 2 } });
    const log = makeLog();
    log.register(1, 1);
    const uploads = Array.from({ length: 12 }, (_, i) => log.upload(100 + i, 1));
    await t.dispatcher.handle(batchOf(log.records.slice(0, 5)));
    await t.dispatcher.handle(batchOf(log.records.slice(5)));
    await until(() => t.requests.length === 12, 'every delivery');
    assert.deepEqual(t.requests.map((r) => r.messageId), uploads.map((u) => webhookMessageId(u.event.id)));
  });

  it('replay_requested sends again the endpoint\'s messages of [since, until), with their webhook-id', async () => {
    const t = setup();
    const log = makeLog();
    log.register(1, 1);
    log.register(2, 1);
    const first = log.upload(10, 1);
    const second = log.upload(11, 1);
    await t.dispatcher.handle(batchOf(log.records));
    await until(() => t.requests.length === 4, 'the first deliveries');
    await until(async () => (await t.store.pendingCount(1)) + (await t.store.pendingCount(2)) === 0, 'settled');
    const since = Date.parse(second.event.time);
    log.replaySince(1, 1, since, since + 1);
    await t.dispatcher.handle(batchOf(log.records.slice(4)));
    await until(() => t.requests.length === 5, 'the replayed delivery');
    const replayed = t.requests[4];
    assert.equal(replayed?.url, url(1));
    assert.equal(replayed?.messageId, webhookMessageId(second.event.id));
    assert.notEqual(replayed?.messageId, webhookMessageId(first.event.id));
  });

  it('test_requested sends webhook.test to that endpoint, even disabled, and to no other', async () => {
    const t = setup();
    const log = makeLog();
    log.register(1, 1);
    log.register(2, 1, ['file.uploaded']);
    log.disable(1, 1, 'failing');
    const test = log.test(1, 1);
    log.test(2, 9); // another user's id for endpoint 2: nothing
    await t.dispatcher.handle(batchOf(log.records));
    await until(() => t.requests.length === 1, 'the test delivery');
    await until(async () => (await t.store.pendingCount(1)) === 0, 'settled');
    const [request] = t.requests;
    assert.equal(request?.url, url(1));
    assert.equal(request?.messageId, webhookMessageId(test.event.id));
    const body = JSON.parse(request?.body ?? '{}') as { type: string; data: { webhook_id: number } };
    assert.deepEqual([body.type, body.data.webhook_id], ['webhook.test', 1]);
    assert.equal(t.requests.length, 1);
  });

  it('holds at most its bounds in memory; the backlog waits in the store', async () => {
    const observed: number[] = [];
    const t = setup({ settings: { concurrency: 2 }, deps: { endpointQueue: 2, maxQueued: 4 } });
    const sample = (): void => {
      const stats = t.dispatcher.stats();
      observed.push(stats.queued + stats.inFlight);
    };
    for (const id of [1, 2, 3]) t.hold(url(id));
    const log = makeLog();
    for (const id of [1, 2, 3]) log.register(id, id);
    for (let i = 0; i < 10; i++) for (const owner of [1, 2, 3]) log.upload(100 * owner + i, owner);
    await t.dispatcher.handle(batchOf(log.records.slice(0, 15)));
    sample();
    await t.dispatcher.handle(batchOf(log.records.slice(15)));
    sample();
    await until(() => t.requests.length === 2, 'two in flight');
    sample();
    assert.equal((await t.store.pendingCount(1)) + (await t.store.pendingCount(2)) + (await t.store.pendingCount(3)), 30, 'the backlog is in the store');
    assert.ok(Math.max(...observed) <= 4, `held ${Math.max(...observed)} > 4`);
    assert.ok(t.dispatcher.stats().inFlight <= 2);
    t.release();
    await until(async () => (await t.store.pendingCount(1)) + (await t.store.pendingCount(2)) + (await t.store.pendingCount(3)) === 0, 'the whole backlog delivered');
    for (const owner of [1, 2, 3]) assert.equal(t.to(url(owner)).length, 10);
    sample();
    assert.ok(Math.max(...observed) <= 4);
  });

  it('stop hands what waits in memory back to the store: another dispatcher delivers it at once', async () => {
    const t = setup();
    t.hold(url(1));
    const log = makeLog();
    log.register(1, 1);
    log.upload(10, 1);
    log.upload(11, 1);
    await t.dispatcher.handle(batchOf(log.records));
    await until(() => t.requests.length === 1, 'one in flight');
    const stopping = t.dispatcher.stop();
    t.release();
    await stopping;
    const next = setup({ store: t.store });
    await until(async () => (await t.store.pendingCount(1)) === 0, 'the second message delivered by the next dispatcher');
    assert.equal(next.requests.length, 1);
    assert.equal(next.requests[0]?.messageId, webhookMessageId(log.records[2]?.event.id ?? ''));
  });

  it('a dispatcher that died (no stop) leaves its tasks leased; the same owner, started again, sends them at once', async () => {
    const store = makeMemoryWebhookStore();
    // A long lease: without taking its leases back, the restarted dispatcher could not send them within this test.
    const first = setup({ store, deps: { owner: 'host:8086', leaseMs: 3_600_000 } });
    first.hold(url(1));
    const log = makeLog();
    log.register(1, 1);
    log.upload(10, 1);
    log.upload(11, 1);
    await first.dispatcher.handle(batchOf(log.records));
    await until(() => first.requests.length === 1, 'one in flight');
    // kill -9: nothing is handed back, both tasks stay leased to host:8086 in the store.
    try {
      let claims = 0;
      const counted: WebhookStore = { ...store, claimDue: async (...args) => { claims++; return store.claimDue(...args); } };
      const other = setup({ store: counted, deps: { owner: 'another:8086', leaseMs: 3_600_000 } });
      await until(() => claims >= 2, 'two claim rounds of another dispatcher');
      await other.dispatcher.stop();
      assert.equal(other.requests.length, 0, 'another owner does not take a live lease');
      const restarted = setup({ store, deps: { owner: 'host:8086', leaseMs: 3_600_000 } });
      await until(() => restarted.requests.length === 2, 'both messages sent by the restarted dispatcher');
      assert.deepEqual(restarted.requests.map((r) => r.messageId), log.records.slice(1).map((r) => webhookMessageId(r.event.id)));
    } finally {
      first.release();
    }
  });
});
