import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  makeWakeableSleep, retrying, webhookMessageOf, type CloudEvent, type StoredEvent, type WebhookMessage, type WebhookReplayRequested,
  type WebhookTestRequested, type WebhookUpdated,
} from '@docshare/contracts';
import type { EventBatch } from '@docshare/event-bus';
import { nextRetryDelay, type DeliveryResult } from '@docshare/webhooks';
import {
  attemptIdOf, taskIdOf, type DeliveryAttempt, type DeliveryTask, type EndpointRecord, type ReopenSelector, type SettleNext,
} from '@docshare/webhooks/store';
import { endpointEventOf, foldEndpoint, signingSecrets, subscribes } from './endpoints.ts';
import type { DispatcherDeps } from './module.ts';
import { makeFairQueue } from './queues.ts';

/**
 * The webhook dispatcher (issue 23; docs/architecture: webhooks). Two halves:
 *
 * - `handle(batch)`, the consumer group's handler: folds the endpoint events into their records,
 *   turns each event about a user's files into one delivery task per endpoint of that user that
 *   subscribes to it, and stores the tasks BEFORE the batch is acknowledged, so a kill -9 loses
 *   none (a re-sent delivery carries the same `webhook-id`). Side effects happen only for events
 *   after the group's own checkpoint in the store: a redelivered batch schedules nothing twice
 *   and replays nothing twice.
 * - delivery: one FIFO queue per endpoint (queues.ts), bounded in flight per endpoint and in all,
 *   so a hanging endpoint holds only its own slots. The batch's tasks go straight into the queues
 *   (leased to this process when scheduled) once the read models have the batch (a receiver that
 *   calls the API sees the fact); a poller claims the rest from the store: retries when due,
 *   replays, the backlog the queues had no room for, and tasks of a dispatcher that died (their
 *   lease ran out). Memory holds only the bounded queues; the backlog stays in the store.
 */
export interface Dispatcher {
  /** The group's batch handler: resolves once the batch's tasks are in the store and its checkpoint moved. */
  handle(batch: EventBatch): Promise<void>;
  /** Starts the poller (retries, replays, backlog, expired leases) and the hourly prune. */
  start(): void;
  /** Stops claiming, hands the tasks that wait in memory back to the store, and waits for the attempts in flight. */
  stop(): Promise<void>;
  stats(): { queued: number; inFlight: number };
  /** Runs the poller's next round now (a replay was recorded, tests). */
  wake(): void;
}

/** Most tasks one poll claims. */
const CLAIM_BATCH = 64;
/** Endpoint records (and their health) cached; a cached record is read again after this long (another process may have folded a change). */
const CACHE_SIZE = 10_000;
const CACHE_TTL_MS = 30_000;
const DAY_MS = 86_400_000;

interface Cached<T> { value: T; at: number }

/** A bounded map: the oldest entry goes when it is full (endpoint records, health). */
const boundedSet = <K, V>(map: Map<K, V>, key: K, value: V): void => {
  map.delete(key);
  map.set(key, value);
  if (map.size > CACHE_SIZE) map.delete(map.keys().next().value as K);
};

export const makeDispatcher = (deps: DispatcherDeps): Dispatcher => {
  const { store, sealer, deliverer, recorder, settings, logger, group, metrics } = deps;
  const clock = deps.clock ?? Date.now;
  const random = deps.random ?? Math.random;
  const owner = deps.owner ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const pollMs = deps.pollMs ?? 1_000;
  const leaseMs = deps.leaseMs ?? 5 * 60_000;
  const pruneEveryMs = deps.pruneEveryMs ?? 3_600_000;
  // An endpoint's queue drains within its lease even when every attempt times out.
  const endpointQueue = deps.endpointQueue
    ?? Math.max(1, Math.min(16, Math.floor(leaseMs / settings.timeoutMs) - 1)) * settings.endpointConcurrency;

  const endpoints = new Map<number, Cached<EndpointRecord>>();
  /** failingSince as this process last saw it. */
  const health = new Map<number, Cached<number | null>>();
  /** Endpoints this process had disabled (recorded, its event not folded yet): their tasks are skipped meanwhile. */
  const disabledHere = new Set<number>();
  /**
   * Endpoints with pending tasks in the store that the queues had no room for: their new tasks go
   * behind them, through the poller. Each mark is numbered, so a poll clears only the marks made
   * before its claim began (a task stored after that is not in the claim's view).
   */
  const backlogged = new Map<number, number>();
  let marks = 0;
  const mark = (webhookId: number): void => {
    backlogged.set(webhookId, ++marks);
  };
  /** Per partition: the batches' tasks waiting for the read models, queued in batch order. */
  const chains = new Map<number, Promise<void>>();
  /** Per bus partition, the checkpoint as this process last read or wrote it. */
  const checkpoints = new Map<number, number>();
  const sleeper = makeWakeableSleep();
  const stopSignal = new AbortController();
  let stopped = false;
  let loop: Promise<void> | null = null;

  const remember = (record: EndpointRecord): void => {
    boundedSet(endpoints, record.webhookId, { value: record, at: clock() });
  };
  const endpointFor = async (webhookId: number): Promise<EndpointRecord | null> => {
    const cached = endpoints.get(webhookId);
    if (cached !== undefined && clock() - cached.at < CACHE_TTL_MS) return cached.value;
    const record = await store.endpoint(webhookId);
    if (record === null) endpoints.delete(webhookId);
    else remember(record);
    return record;
  };

  // Only while the task is still in the attempt's cycle: a replay that reopened it meanwhile stands.
  const settle = (task: DeliveryTask, next: Omit<SettleNext, 'now' | 'cycle'>, attempt: DeliveryAttempt | null): Promise<void> =>
    store.settle(task.id, { ...next, now: clock(), cycle: task.cycle }, attempt);

  /** Gives a task this process holds back to the store: pending as it was, unleased (claimable at once). */
  const release = async (task: DeliveryTask): Promise<void> => {
    try {
      await settle(task, { state: 'pending', attempts: task.attempts, nextAt: task.nextAt, lastError: task.lastError, lastStatus: task.lastStatus }, null);
    } catch (error) {
      // Its lease runs out instead; the poller of some dispatcher claims it then.
      logger.warn({ err: error, webhookId: task.webhookId, messageId: task.messageId }, 'could not hand a webhook task back');
    }
  };

  const disable = async (endpoint: EndpointRecord, reason: 'gone' | 'failing'): Promise<void> => {
    if (disabledHere.has(endpoint.webhookId)) return;
    try {
      await recorder.disable(endpoint.webhookId, endpoint.ownerId, reason);
      disabledHere.add(endpoint.webhookId);
      logger.warn({ webhookId: endpoint.webhookId, ownerId: endpoint.ownerId, reason }, 'webhook endpoint disabled');
    } catch (error) {
      // Tried again on the endpoint's next failure.
      logger.error({ err: error, webhookId: endpoint.webhookId, reason }, 'could not record a disabled webhook endpoint');
    }
  };

  const failingSince = async (webhookId: number): Promise<number | null> => {
    const since = await store.failingSince(webhookId);
    boundedSet(health, webhookId, { value: since, at: clock() });
    return since;
  };
  /** A success: the endpoint is healthy again (one write when it was failing; read again now and then, another process may have marked it). */
  const healthy = async (webhookId: number): Promise<void> => {
    const known = health.get(webhookId);
    if (known !== undefined && known.value === null && clock() - known.at < CACHE_TTL_MS) return;
    if ((known !== undefined && known.value !== null) || (await failingSince(webhookId)) !== null) await store.setFailingSince(webhookId, null);
    boundedSet(health, webhookId, { value: null, at: clock() });
  };
  /** A failure: the endpoint has been failing since its first failure after its last success; disabled after WEBHOOK_DISABLE_AFTER. */
  const failed = async (endpoint: EndpointRecord, now: number): Promise<void> => {
    let since = await failingSince(endpoint.webhookId);
    if (since === null) {
      since = now;
      await store.setFailingSince(endpoint.webhookId, since);
      boundedSet(health, endpoint.webhookId, { value: since, at: clock() });
    }
    if (now - since >= settings.disableAfterMs) await disable(endpoint, 'failing');
  };

  /** Signs and sends one task (an attempt), records it, and settles the task's next state. */
  const attempt = async (webhookId: number, task: DeliveryTask): Promise<void> => {
    const start = clock();
    // Too little lease left to finish: another dispatcher may claim it meanwhile. Left to the poller.
    if (task.leaseUntil < start + settings.timeoutMs) return;
    const endpoint = await endpointFor(webhookId);
    if (endpoint === null || endpoint.deleted) {
      await settle(task, { state: 'dead', attempts: task.attempts, nextAt: start, lastError: 'endpoint deleted', lastStatus: null }, null);
      metrics?.deadLetter();
      return;
    }
    // A test message goes to a disabled endpoint too (how its owner checks it before enabling it again).
    if ((!endpoint.enabled || disabledHere.has(webhookId)) && task.eventType !== 'webhook.test') {
      await settle(task, { state: 'skipped', attempts: task.attempts, nextAt: start, lastError: 'endpoint disabled', lastStatus: null }, null);
      return;
    }
    let result: DeliveryResult;
    let secrets: string[] | null = null;
    try {
      secrets = signingSecrets(endpoint, start).map((secret) => sealer.open(secret.sealed, webhookId));
    } catch (error) {
      // Another WEBHOOK_SECRET_KEY than the write side's: nothing can be signed (never logged: the error only).
      logger.error({ err: error instanceof Error ? error.message : 'unknown', webhookId }, 'cannot open a webhook secret (WEBHOOK_SECRET_KEY differs?)');
    }
    if (secrets === null || secrets.length === 0) {
      result = { outcome: 'failed', status: null, latencyMs: 0, error: 'signing secret unavailable' };
    } else {
      result = await deliverer.deliver({ url: endpoint.url, messageId: task.messageId, timestampSeconds: Math.floor(start / 1000), body: task.body, secrets });
    }
    const attempts = task.attempts + 1;
    if (attempts === 1 && task.cycle === 0) metrics?.firstAttempt((start - task.eventTime) / 1000);
    const record: DeliveryAttempt = {
      id: attemptIdOf(task.id, task.cycle, attempts), webhookId, ownerId: task.ownerId, messageId: task.messageId, eventId: task.eventId,
      eventType: task.eventType, attempt: attempts, at: start, outcome: result.outcome === 'succeeded' ? 'succeeded' : 'failed',
      status: result.status, latencyMs: result.latencyMs, error: result.error,
    };
    const end = clock();
    const seconds = result.latencyMs / 1000;
    if (result.outcome === 'succeeded') {
      await settle(task, { state: 'succeeded', attempts, nextAt: end, lastError: null, lastStatus: result.status }, record);
      metrics?.attempted('succeeded', seconds);
      await healthy(webhookId);
      return;
    }
    if (result.outcome === 'gone') {
      await settle(task, { state: 'dead', attempts, nextAt: end, lastError: result.error ?? 'HTTP 410', lastStatus: result.status }, record);
      metrics?.attempted('gone', seconds);
      metrics?.deadLetter();
      await disable(endpoint, 'gone');
      return;
    }
    const delay = nextRetryDelay(settings.retryScheduleMs, attempts, result.retryAfterMs, random);
    if (delay === null) {
      await settle(task, { state: 'dead', attempts, nextAt: end, lastError: result.error, lastStatus: result.status }, record);
      metrics?.attempted('dead', seconds);
      metrics?.deadLetter();
      logger.warn({ webhookId, messageId: task.messageId, attempts }, 'webhook message dead-lettered: its retries are spent');
    } else {
      await settle(task, { state: 'pending', attempts, nextAt: end + delay, lastError: result.error, lastStatus: result.status }, record);
      metrics?.attempted('failed', seconds);
    }
    await failed(endpoint, end);
  };

  const queue = makeFairQueue<number, DeliveryTask>({
    perKey: settings.endpointConcurrency,
    total: settings.concurrency,
    bound: endpointQueue,
    maxHeld: deps.maxQueued ?? settings.concurrency * 16,
    run: attempt,
    // The store failed: the task stays leased to this process until its lease runs out, then it is claimed again.
    onError: (error, webhookId, task) => logger.error({ err: error, webhookId, messageId: task.messageId }, 'webhook delivery could not be settled'),
  });
  const unwatch = metrics?.watch(() => queue.depths());

  const taskOf = (
    endpoint: EndpointRecord, message: WebhookMessage, stored: StoredEvent<CloudEvent>, state: 'pending' | 'skipped', now: number,
  ): DeliveryTask => {
    const eventTime = Date.parse(stored.event.time);
    return {
      id: taskIdOf(endpoint.webhookId, message.id), webhookId: endpoint.webhookId, ownerId: message.ownerId, messageId: message.id,
      eventId: stored.event.id, eventType: message.payload.type, eventTime: Number.isFinite(eventTime) ? eventTime : now,
      position: stored.position, body: JSON.stringify(message.payload), state, attempts: 0, cycle: 0, nextAt: now,
      leaseOwner: null, leaseUntil: 0, lastError: null, lastStatus: null, updatedAt: now,
    };
  };

  /** Queues the batch's leased tasks once the read models have the batch, in batch order per partition (never holds the consumer). */
  const queueAfterReadModels = (partition: number, tasks: DeliveryTask[]): void => {
    if (tasks.length === 0) return;
    const position = Math.max(...tasks.map((task) => task.position));
    // The waits overlap (a lagging read model delays each batch once, not once per batch before it); the queueing keeps batch order.
    const reached = deps.readModelsReached(position).catch((error: unknown) => {
      logger.warn({ err: error, position }, 'could not wait for the read models; delivering anyway');
    });
    const previous = chains.get(partition) ?? Promise.resolve();
    const next = previous.then(async () => {
      await reached;
      for (const task of tasks) {
        if (stopped) {
          queue.cancel(task.webhookId);
          await release(task);
        } else {
          queue.fill(task.webhookId, task);
        }
      }
    });
    chains.set(partition, next);
    void next.finally(() => {
      if (chains.get(partition) === next) chains.delete(partition);
    });
  };

  const handle = async (batch: EventBatch): Promise<void> => {
    const now = clock();
    // Read from the store once per partition, then this process's own: a member that took the
    // partition over from another finds it at most lower than it is, which only redoes idempotent
    // work (tasks are scheduled by id), never skips any.
    const checkpoint = checkpoints.get(batch.partition) ?? await store.checkpoint(group, batch.partition);

    // The endpoints the batch needs: its endpoint events' and its messages' owners, one query.
    const messages = new Map<number, WebhookMessage>();
    const owners = new Set<number>();
    for (const stored of batch.records) {
      const target = endpointEventOf(stored.event);
      if (target !== null) owners.add(target.ownerId);
      else if (stored.position > checkpoint) {
        const message = webhookMessageOf(stored.event);
        if (message !== null) {
          messages.set(stored.position, message);
          owners.add(message.ownerId);
        }
      }
    }
    const byId = new Map<number, EndpointRecord>();
    const byOwner = new Map<number, Set<number>>();
    const put = (record: EndpointRecord): void => {
      byId.set(record.webhookId, record);
      const ids = byOwner.get(record.ownerId) ?? new Set<number>();
      ids.add(record.webhookId);
      byOwner.set(record.ownerId, ids);
    };
    if (owners.size > 0) for (const record of await store.endpointsOf([...owners])) put(record);
    const known = async (webhookId: number): Promise<EndpointRecord | null> => {
      const found = byId.get(webhookId);
      if (found !== undefined) return found;
      // A deleted endpoint (endpointsOf leaves them out) or one not folded yet.
      const stored = await store.endpoint(webhookId);
      if (stored !== null) put(stored);
      return stored;
    };

    // In log order: each message goes to the endpoints as they were when its event was recorded.
    const changed = new Map<number, EndpointRecord>();
    const enabledAgain = new Set<number>();
    const tasks: DeliveryTask[] = [];
    const replays: { webhookId: number; selector: ReopenSelector }[] = [];
    for (const stored of batch.records) {
      const { event, position } = stored;
      const target = endpointEventOf(event);
      if (target !== null) {
        const current = await known(target.webhookId);
        const next = foldEndpoint(current, stored);
        if (next !== null && next !== current) {
          put(next);
          changed.set(next.webhookId, next);
          if (event.type === 'docs.webhook.updated.v1' && (event.data as WebhookUpdated).changes.enabled === true) enabledAgain.add(next.webhookId);
        }
        continue;
      }
      if (position <= checkpoint) continue;
      if (event.type === 'docs.webhook.replay_requested.v1') {
        const e = event.data as WebhookReplayRequested;
        replays.push({
          webhookId: e.webhookId,
          selector: e.messageIds === undefined ? { since: Date.parse(e.since), until: Date.parse(e.until) } : { messageIds: e.messageIds },
        });
        continue;
      }
      const message = messages.get(position);
      if (message === undefined) continue;
      if (event.type === 'docs.webhook.test_requested.v1') {
        const endpoint = await known((event.data as WebhookTestRequested).webhookId);
        if (endpoint !== null && !endpoint.deleted && endpoint.ownerId === message.ownerId) tasks.push(taskOf(endpoint, message, stored, 'pending', now));
        continue;
      }
      for (const webhookId of byOwner.get(message.ownerId) ?? []) {
        const endpoint = byId.get(webhookId);
        if (endpoint === undefined || !subscribes(endpoint, message.payload.type)) continue;
        tasks.push(taskOf(endpoint, message, stored, endpoint.enabled ? 'pending' : 'skipped', now));
      }
    }

    // The endpoints' changes first: a task of this batch (or a retry) sent from now on must find
    // its endpoint as the batch left it (a rotation's new secret, a new URL, a disabling).
    if (changed.size > 0) {
      await store.applyEndpoints([...changed.values()]);
      for (const record of changed.values()) {
        remember(record);
        disabledHere.delete(record.webhookId);
      }
    }
    // Enabled again by its owner: its failing streak starts over.
    for (const webhookId of enabledAgain) {
      await store.setFailingSince(webhookId, null);
      boundedSet(health, webhookId, { value: null, at: clock() });
    }

    // Leased to this process when its endpoint's queue has room (and nothing of it waits in the
    // store before them); the others wait in the store, due now, for the poller.
    const leased = new Set<DeliveryTask>();
    for (const task of tasks) {
      if (task.state !== 'pending') continue;
      if (!stopped && !backlogged.has(task.webhookId) && queue.reserve(task.webhookId)) {
        task.leaseOwner = owner;
        task.leaseUntil = now + leaseMs;
        leased.add(task);
      } else {
        mark(task.webhookId);
      }
    }
    let inserted: Set<string>;
    try {
      inserted = new Set(tasks.length === 0 ? [] : await store.schedule(tasks));
    } catch (error) {
      for (const task of leased) queue.cancel(task.webhookId);
      throw error;
    }
    for (const task of tasks) if (task.state === 'pending' && !leased.has(task)) mark(task.webhookId);
    // A task already there (a batch delivered again) stays as it is: its holder, or the poller, delivers it.
    const mine: DeliveryTask[] = [];
    for (const task of leased) {
      if (inserted.has(task.id)) mine.push(task);
      else queue.cancel(task.webhookId);
    }
    // Queued even when what follows fails: they are in the store, leased to this process.
    queueAfterReadModels(batch.partition, mine);

    for (const { webhookId, selector } of replays) {
      const reopened = await store.reopen(webhookId, selector, now);
      logger.info({ webhookId, reopened }, 'webhook replay');
      mark(webhookId);
    }
    await store.setCheckpoint(group, batch.partition, batch.through);
    checkpoints.set(batch.partition, Math.max(checkpoint, batch.through));
    if (replays.length > 0 || leased.size < tasks.filter((task) => task.state === 'pending').length) sleeper.wake();
  };

  /** One round of the poller: claims due tasks for the endpoints with room, queues them, hands back what does not fit. */
  const poll = async (): Promise<void> => {
    const limit = Math.min(queue.room(), CLAIM_BATCH);
    if (limit === 0) return;
    const skip = queue.full();
    const claimFrom = marks;
    const claimed = await store.claimDue(clock(), limit, leaseMs, owner, skip);
    // Fewer than asked: nothing else is due for the endpoints not skipped, so none of them has a backlog left.
    if (claimed.length < limit) {
      for (const [webhookId, at] of backlogged) if (at <= claimFrom && !skip.has(webhookId)) backlogged.delete(webhookId);
    }
    const firsts = claimed.filter((task) => task.attempts === 0 && task.cycle === 0);
    if (firsts.length > 0) {
      await deps.readModelsReached(Math.max(...firsts.map((task) => task.position))).catch((error: unknown) => {
        logger.warn({ err: error }, 'could not wait for the read models; delivering anyway');
      });
    }
    let queued = 0;
    // Once an endpoint's queue refuses one, the rest of its tasks go back too (its order holds).
    const refused: DeliveryTask[] = [];
    const full = new Set<number>();
    for (const task of claimed) {
      if (!stopped && !full.has(task.webhookId) && queue.push(task.webhookId, task)) {
        queued++;
      } else {
        full.add(task.webhookId);
        mark(task.webhookId);
        refused.push(task);
      }
    }
    await Promise.all(refused.map(release));
    // A full claim that queued something: more may be due, go again at once.
    if (claimed.length === limit && queued > 0) sleeper.wake();
  };

  const prune = async (): Promise<void> => {
    const removed = await store.prune(clock() - settings.retentionDays * DAY_MS);
    if (removed > 0) logger.info({ removed }, 'webhook delivery state pruned');
  };

  const run = async (): Promise<void> => {
    let prunedAt = Number.NEGATIVE_INFINITY;
    // The tasks this owner held before a crash (the same owner id after a restart) are claimable
    // at once, not after their lease: a kill -9 delays their delivery by a restart, not 5 minutes.
    await retrying(() => store.releaseLeases(owner), {
      baseMs: 200, capMs: 5_000, signal: stopSignal.signal,
      onRetry: (error) => logger.warn({ err: error }, 'could not take back this dispatcher\'s earlier leases; retrying'),
    }).then((released) => {
      if (released > 0) logger.info({ released }, 'took back the webhook tasks this dispatcher held before it stopped');
    }, () => undefined);
    while (!stopped) {
      try {
        await poll();
      } catch (error) {
        logger.warn({ err: error }, 'could not claim due webhook tasks');
      }
      if (!stopped && clock() - prunedAt >= pruneEveryMs) {
        prunedAt = clock();
        await prune().catch((error: unknown) => logger.warn({ err: error }, 'could not prune webhook delivery state'));
      }
      if (!stopped) await sleeper.sleep(pollMs);
    }
  };

  return {
    handle,
    start() {
      if (loop !== null || stopped) return;
      loop = run();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      stopSignal.abort();
      sleeper.wake();
      await loop;
      await Promise.all([...chains.values()]);
      await Promise.all(queue.drain().map(({ item }) => release(item)));
      await queue.idle();
      unwatch?.();
    },
    stats: () => queue.stats(),
    wake: () => sleeper.wake(),
  };
};
