import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DocshareError, M } from '@docshare/contracts';
import { attemptIdOf, taskIdOf, type DeliveryAttempt, type DeliveryTask, type EndpointRecord, type WebhookStore } from './port.ts';

const T0 = 1_750_000_000_000;
const LEASE = 60_000;
const NONE: ReadonlySet<number> = new Set();

export const endpointRecord = (webhookId: number, ownerId: number, position: number, over: Partial<EndpointRecord> = {}): EndpointRecord => ({
  webhookId, ownerId, url: `https://example.com/hooks/${webhookId}`, events: ['file.uploaded', 'comment.received'], enabled: true, deleted: false,
  secrets: [{ sealed: { kid: 'k1', iv: 'aXY', ct: 'Y3Q', tag: 'dGFn' }, validUntil: null }], position, ...over,
});

/** A task of message `n` for `webhookId` (event n at T0 + n seconds, position n), due at T0 unless said. */
export const deliveryTask = (webhookId: number, n: number, over: Partial<DeliveryTask> = {}): DeliveryTask => {
  const messageId = `msg_${n.toString(16).padStart(32, '0')}`;
  return {
    id: taskIdOf(webhookId, messageId), webhookId, ownerId: 1, messageId, eventId: `00000000-0000-4000-8000-${n.toString().padStart(12, '0')}`,
    eventType: 'file.uploaded', eventTime: T0 + n * 1_000, position: n, body: JSON.stringify({ type: 'file.uploaded', data: { file_id: n } }),
    state: 'pending', attempts: 0, cycle: 0, nextAt: T0, leaseOwner: null, leaseUntil: 0, lastError: null, lastStatus: null, updatedAt: T0, ...over,
  };
};

const attemptOf = (task: DeliveryTask, attempt: number, at: number, outcome: 'succeeded' | 'failed'): DeliveryAttempt => ({
  id: attemptIdOf(task.id, task.cycle, attempt), webhookId: task.webhookId, ownerId: task.ownerId, messageId: task.messageId, eventId: task.eventId,
  eventType: task.eventType, attempt, at, outcome, status: outcome === 'succeeded' ? 200 : 500, latencyMs: 12, error: outcome === 'failed' ? 'HTTP 500' : null,
});

const ids = (tasks: readonly { id: string }[]): string[] => tasks.map((t) => t.id);

const isInvalidCursor = (error: unknown): boolean => error instanceof DocshareError && error.kind === 'invalid' && error.message === M.invalidCursor;

/**
 * The behaviour every WebhookStore adapter must show. `make` opens a store on fresh, empty storage.
 */
export const webhookStoreContract = (name: string, make: () => Promise<WebhookStore>): void =>
  void describe(`WebhookStore contract: ${name}`, () => {
    const withStore = (fn: (store: WebhookStore) => Promise<void>) => async () => {
      const store = await make();
      try {
        await fn(store);
      } finally {
        await store.close();
      }
    };
    /** Settles `task` failed (attempt `attempt` at `at`), pending again at `nextAt`. */
    const fail = (store: WebhookStore, task: DeliveryTask, attempt: number, at: number, state: 'pending' | 'dead' = 'pending') =>
      store.settle(task.id, { state, attempts: attempt, nextAt: at + 5_000, lastError: 'HTTP 500', lastStatus: 500, now: at }, attemptOf(task, attempt, at, 'failed'));

    it('schedule is idempotent by id: a second schedule changes nothing and returns []', withStore(async (store) => {
      const a = deliveryTask(1, 1);
      assert.deepEqual(await store.schedule([a, deliveryTask(1, 2)]), [a.id, deliveryTask(1, 2).id]);
      await fail(store, a, 1, T0);
      assert.deepEqual(await store.schedule([a]), []);
      assert.deepEqual(await store.schedule([deliveryTask(1, 2), deliveryTask(1, 3)]), [deliveryTask(1, 3).id]);
      const claimed = await store.claimDue(T0 + 5_000, 10, LEASE, 'd1', NONE);
      assert.deepEqual(ids(claimed), [deliveryTask(1, 2).id, deliveryTask(1, 3).id, a.id], 'a is due at T0 + 5 s, after the others');
      assert.equal(claimed[2]?.attempts, 1, 'the second schedule did not reset it');
      assert.equal(await store.pendingCount(1), 3);
    }));

    it('claimDue respects nextAt, then (nextAt, position) order, limit and skip', withStore(async (store) => {
      await store.schedule([
        deliveryTask(1, 3, { nextAt: T0 + 10 }), deliveryTask(1, 2, { nextAt: T0 + 10 }), deliveryTask(1, 1, { nextAt: T0 + 20 }),
        deliveryTask(2, 4, { nextAt: T0 }), deliveryTask(1, 5, { nextAt: T0 + 1_000 }),
      ]);
      assert.deepEqual(await store.claimDue(T0 - 1, 10, LEASE, 'd1', NONE), []);
      assert.deepEqual(ids(await store.claimDue(T0 + 20, 2, LEASE, 'd1', new Set([2]))), [deliveryTask(1, 2).id, deliveryTask(1, 3).id]);
      const rest = await store.claimDue(T0 + 20, 10, LEASE, 'd1', NONE);
      assert.deepEqual(ids(rest), [deliveryTask(2, 4).id, deliveryTask(1, 1).id]);
      assert.equal(rest[0]?.leaseOwner, 'd1');
      assert.equal(rest[0]?.leaseUntil, T0 + 20 + LEASE);
      assert.equal(rest[0]?.body, deliveryTask(2, 4).body);
      assert.deepEqual(await store.claimDue(T0 + 20, 0, LEASE, 'd1', NONE), []);
    }));

    it('a claimed task is not claimed again until its lease runs out, and never by two callers at once', withStore(async (store) => {
      await store.schedule(Array.from({ length: 6 }, (_, i) => deliveryTask(1, i + 1)));
      const [a, b] = await Promise.all([store.claimDue(T0, 4, LEASE, 'd1', NONE), store.claimDue(T0, 4, LEASE, 'd2', NONE)]);
      // Two callers racing may each find the other took a candidate (fewer than asked); none is lost.
      const c = await store.claimDue(T0, 6, LEASE, 'd3', NONE);
      const taken = [...ids(a), ...ids(b), ...ids(c)];
      assert.equal(taken.length, 6);
      assert.equal(new Set(taken).size, 6, 'no task handed to both');
      assert.deepEqual(await store.claimDue(T0 + LEASE - 1, 10, LEASE, 'd3', NONE), []);
      const again = await store.claimDue(T0 + LEASE, 10, LEASE, 'd3', NONE);
      assert.equal(again.length, 6);
      assert.ok(again.every((t) => t.leaseOwner === 'd3'));
    }));

    it('a task scheduled leased is not claimed while its lease lasts', withStore(async (store) => {
      await store.schedule([deliveryTask(1, 1, { leaseOwner: 'd1', leaseUntil: T0 + LEASE })]);
      assert.deepEqual(await store.claimDue(T0 + 1, 10, LEASE, 'd2', NONE), []);
      assert.deepEqual(ids(await store.claimDue(T0 + LEASE, 10, LEASE, 'd2', NONE)), [deliveryTask(1, 1).id]);
    }));

    it('settles made at once all land, each with its attempt (the Mongo adapter writes them together)', withStore(async (store) => {
      const tasks = Array.from({ length: 40 }, (_, i) => deliveryTask(1 + (i % 4), i + 1));
      await store.schedule(tasks);
      await store.claimDue(T0, 100, LEASE, 'd1', NONE);
      await Promise.all(tasks.map((task, i) => store.settle(task.id, {
        state: i % 2 === 0 ? 'succeeded' : 'pending', attempts: 1, nextAt: T0 + 1_000, lastError: i % 2 === 0 ? null : 'HTTP 500',
        lastStatus: i % 2 === 0 ? 200 : 500, now: T0 + 10, cycle: 0,
      }, attemptOf(task, 1, T0 + 10, i % 2 === 0 ? 'succeeded' : 'failed'))));
      let pending = 0;
      let recorded = 0;
      for (const webhookId of [1, 2, 3, 4]) {
        pending += await store.pendingCount(webhookId);
        recorded += (await store.attempts(webhookId, { limit: 100 })).items.length;
      }
      assert.equal(pending, 20);
      assert.equal(recorded, 40);
      assert.equal((await store.claimDue(T0 + 1_000, 100, LEASE, 'd2', NONE)).length, 20, 'the failed ones are due again, unleased');
    }));

    it('releaseLeases ends only the owner\'s leases on pending tasks: they are claimable at once', withStore(async (store) => {
      await store.schedule([deliveryTask(1, 1), deliveryTask(1, 2), deliveryTask(2, 1)]);
      const held = (await store.claimDue(T0, 2, LEASE, 'crashed', NONE)).map((task) => task.id).sort();
      assert.equal((await store.claimDue(T0, 10, LEASE, 'alive', NONE)).length, 1);
      assert.deepEqual(await store.claimDue(T0 + 1, 10, LEASE, 'new', NONE), []);
      assert.equal(await store.releaseLeases('crashed'), 2);
      assert.deepEqual((await store.claimDue(T0 + 1, 10, LEASE, 'crashed', NONE)).map((task) => task.id).sort(), held);
      assert.equal(await store.releaseLeases('nobody'), 0);
    }));

    it('a settle of an earlier cycle records its attempt but leaves a replayed task as the replay made it', withStore(async (store) => {
      const task = deliveryTask(1, 1);
      await store.schedule([task]);
      await store.claimDue(T0, 10, LEASE, 'd1', NONE);
      // Replayed while its first attempt is in flight: cycle 1, pending, due now.
      assert.equal(await store.reopen(1, { messageIds: [task.messageId] }, T0 + 50), 1);
      await store.settle(task.id, { state: 'succeeded', attempts: 1, nextAt: T0 + 100, lastError: null, lastStatus: 200, now: T0 + 100, cycle: 0 }, attemptOf(task, 1, T0 + 100, 'succeeded'));
      const [replayed] = await store.claimDue(T0 + 200, 10, LEASE, 'd2', NONE);
      assert.equal(replayed?.id, task.id, 'still pending for the replay');
      assert.equal(replayed?.cycle, 1);
      assert.equal((await store.attempts(1, { limit: 10 })).items.length, 1, 'the earlier cycle\'s attempt is recorded');
      await store.settle(task.id, { state: 'succeeded', attempts: 1, nextAt: T0 + 300, lastError: null, lastStatus: 200, now: T0 + 300, cycle: 1 }, null);
      assert.equal(await store.pendingCount(1), 0);
    }));

    it('settle moves the state, clears the lease and records the attempt', withStore(async (store) => {
      const task = deliveryTask(1, 1);
      await store.schedule([task, deliveryTask(1, 2)]);
      await store.claimDue(T0, 10, LEASE, 'd1', NONE);
      await fail(store, task, 1, T0 + 100);
      assert.equal(await store.pendingCount(1), 2);
      assert.deepEqual(await store.claimDue(T0 + 5_099, 10, LEASE, 'd1', NONE), [], 'not due yet, the other still leased');
      const [retry] = await store.claimDue(T0 + 5_100, 10, LEASE, 'd2', NONE);
      assert.deepEqual({ ...retry }, {
        ...task, state: 'pending', attempts: 1, nextAt: T0 + 5_100, lastError: 'HTTP 500', lastStatus: 500, updatedAt: T0 + 100, leaseOwner: 'd2', leaseUntil: T0 + 5_100 + LEASE,
      });
      await store.settle(task.id, { state: 'succeeded', attempts: 2, nextAt: T0 + 6_000, lastError: null, lastStatus: 200, now: T0 + 6_000 }, attemptOf(task, 2, T0 + 6_000, 'succeeded'));
      assert.equal(await store.pendingCount(1), 1);
      assert.deepEqual(await store.claimDue(T0 + 10 * LEASE, 10, LEASE, 'd3', NONE).then(ids), [deliveryTask(1, 2).id]);
      const page = await store.attempts(1, { limit: 10 });
      assert.deepEqual(page.items, [attemptOf(task, 2, T0 + 6_000, 'succeeded'), attemptOf(task, 1, T0 + 100, 'failed')]);
      assert.equal(page.next, null);
      await store.settle(deliveryTask(1, 2).id, { state: 'dead', attempts: 0, nextAt: T0, lastError: 'endpoint deleted', lastStatus: null, now: T0 + 7_000 }, null);
      assert.equal(await store.pendingCount(1), 0);
      assert.equal((await store.attempts(1, { limit: 10 })).items.length, 2, 'no attempt recorded for null');
      assert.deepEqual((await store.deadLetters(1, { limit: 10 })).items.map((t) => [t.id, t.lastError, t.updatedAt]), [[deliveryTask(1, 2).id, 'endpoint deleted', T0 + 7_000]]);
    }));

    it('attempts page newest first, by outcome, with a cursor; a bad cursor is invalid', withStore(async (store) => {
      const tasks = Array.from({ length: 5 }, (_, i) => deliveryTask(7, i + 1));
      await store.schedule(tasks);
      // 15 attempts, three share each instant (ties broken by id), every third one succeeded.
      let n = 0;
      for (const task of tasks) for (let attempt = 1; attempt <= 3; attempt++) {
        n++;
        await store.settle(task.id, { state: 'pending', attempts: attempt, nextAt: T0, lastError: null, lastStatus: null, now: T0 }, attemptOf(task, attempt, T0 + Math.floor(n / 3) * 1_000, attempt === 3 ? 'succeeded' : 'failed'));
      }
      await store.settle(deliveryTask(8, 1).id, { state: 'pending', attempts: 1, nextAt: T0, lastError: null, lastStatus: null, now: T0 }, attemptOf(deliveryTask(8, 1), 1, T0 + 99_000, 'failed'));
      const walk = async (outcome?: 'succeeded' | 'failed'): Promise<DeliveryAttempt[]> => {
        const all: DeliveryAttempt[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 20; pages++) {
          const page = await store.attempts(7, { limit: 4, ...(outcome ? { outcome } : {}), ...(cursor ? { cursor } : {}) });
          assert.ok(page.items.length <= 4);
          all.push(...page.items);
          if (page.next === null) return all;
          assert.match(page.next, /^[A-Za-z0-9_-]+$/);
          cursor = page.next;
        }
        throw new Error('no end');
      };
      const every = await walk();
      assert.equal(every.length, 15);
      const sorted = [...every].sort((a, b) => (b.at - a.at) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      assert.deepEqual(every, sorted, 'newest (at, id) first');
      assert.equal(new Set(every.map((a) => a.id)).size, 15);
      const failed = await walk('failed');
      assert.deepEqual(failed, every.filter((a) => a.outcome === 'failed'));
      assert.equal(failed.length, 10);
      assert.deepEqual(await walk('succeeded'), every.filter((a) => a.outcome === 'succeeded'));
      assert.deepEqual(await store.attempts(9, { limit: 5 }), { items: [], next: null });
      for (const cursor of ['not a cursor', 'abc', Buffer.from('[1]').toString('base64url'), Buffer.from('["x","y"]').toString('base64url')]) {
        await assert.rejects(store.attempts(7, { cursor, limit: 5 }), isInvalidCursor, cursor);
        await assert.rejects(store.deadLetters(7, { cursor, limit: 5 }), isInvalidCursor, cursor);
      }
    }));

    it('dead letters page most recently dead first, with a cursor', withStore(async (store) => {
      const tasks = Array.from({ length: 7 }, (_, i) => deliveryTask(3, i + 1));
      await store.schedule([...tasks, deliveryTask(4, 1)]);
      for (const [i, task] of tasks.entries()) if (i !== 3) await fail(store, task, 9, T0 + Math.floor(i / 2) * 1_000, 'dead');
      await fail(store, deliveryTask(4, 1), 9, T0, 'dead');
      const first = await store.deadLetters(3, { limit: 4 });
      assert.equal(first.items.length, 4);
      assert.ok(first.next);
      const second = await store.deadLetters(3, { limit: 4, cursor: first.next });
      assert.equal(second.next, null);
      const all = [...first.items, ...second.items];
      assert.equal(all.length, 6);
      assert.ok(all.every((t) => t.state === 'dead' && t.webhookId === 3 && t.attempts === 9 && t.lastStatus === 500));
      assert.deepEqual(all.map((t) => t.id), [...all].sort((a, b) => (b.updatedAt - a.updatedAt) || (a.id < b.id ? 1 : -1)).map((t) => t.id));
      assert.ok(!all.some((t) => t.id === tasks[3]!.id));
    }));

    it('reopen by [since, until) or by message ids makes tasks of any state pending again, cycle + 1', withStore(async (store) => {
      const tasks = Array.from({ length: 6 }, (_, i) => deliveryTask(5, i + 1));
      await store.schedule([...tasks, deliveryTask(6, 2)]);
      await store.settle(tasks[0]!.id, { state: 'succeeded', attempts: 1, nextAt: T0, lastError: null, lastStatus: 200, now: T0 }, attemptOf(tasks[0]!, 1, T0, 'succeeded'));
      await fail(store, tasks[1]!, 9, T0, 'dead');
      await store.settle(tasks[2]!.id, { state: 'skipped', attempts: 0, nextAt: T0, lastError: null, lastStatus: null, now: T0 }, null);
      await store.claimDue(T0, 10, LEASE, 'd1', NONE);
      // Events at T0 + 1 s ... T0 + 6 s: [T0 + 2 s, T0 + 5 s) is messages 2, 3, 4.
      assert.equal(await store.reopen(5, { since: T0 + 2_000, until: T0 + 5_000 }, T0 + 50), 3);
      const claimed = await store.claimDue(T0 + 50, 10, LEASE, 'd2', NONE);
      assert.deepEqual(ids(claimed), [tasks[1]!.id, tasks[2]!.id, tasks[3]!.id], 'leased one (4) unleased too; webhook 6 untouched');
      assert.ok(claimed.every((t) => t.state === 'pending' && t.attempts === 0 && t.cycle === 1 && t.nextAt === T0 + 50));
      assert.equal(await store.reopen(5, { messageIds: [tasks[0]!.messageId, tasks[1]!.messageId, 'msg_unknown'] }, T0 + 60), 2);
      const again = await store.claimDue(T0 + 60 + LEASE, 10, LEASE, 'd3', NONE);
      assert.deepEqual(again.filter((t) => t.id === tasks[1]!.id).map((t) => t.cycle), [2]);
      assert.deepEqual(again.filter((t) => t.id === tasks[0]!.id).map((t) => t.cycle), [1]);
      assert.equal(await store.reopen(5, { messageIds: [] }, T0), 0);
      assert.equal(await store.reopen(99, { since: 0, until: T0 * 2 }, T0), 0);
      assert.equal(await store.pendingCount(5), 6);
      assert.equal(await store.pendingCount(6), 1);
      assert.equal((await store.deadLetters(5, { limit: 10 })).items.length, 0, 'a reopened dead letter is no longer dead');
    }));

    it('failingSince round-trips and clears', withStore(async (store) => {
      assert.equal(await store.failingSince(1), null);
      await store.setFailingSince(1, T0);
      await store.setFailingSince(2, T0 + 1);
      assert.equal(await store.failingSince(1), T0);
      await store.setFailingSince(1, null);
      assert.equal(await store.failingSince(1), null);
      assert.equal(await store.failingSince(2), T0 + 1);
    }));

    it('a checkpoint starts at 0 and never moves back', withStore(async (store) => {
      assert.equal(await store.checkpoint('g', 0), 0);
      await store.setCheckpoint('g', 0, 10);
      await store.setCheckpoint('g', 0, 7);
      await store.setCheckpoint('g', 1, 3);
      await store.setCheckpoint('h', 0, 1);
      assert.equal(await store.checkpoint('g', 0), 10);
      assert.equal(await store.checkpoint('g', 1), 3);
      assert.equal(await store.checkpoint('h', 0), 1);
      await store.setCheckpoint('g', 0, 12);
      assert.equal(await store.checkpoint('g', 0), 12);
    }));

    it('prune removes old attempts and settled tasks, never pending ones', withStore(async (store) => {
      const tasks = Array.from({ length: 5 }, (_, i) => deliveryTask(2, i + 1, { updatedAt: T0 - 10_000 }));
      await store.schedule(tasks);
      await store.settle(tasks[0]!.id, { state: 'succeeded', attempts: 1, nextAt: T0, lastError: null, lastStatus: 200, now: T0 - 5_000 }, attemptOf(tasks[0]!, 1, T0 - 5_000, 'succeeded'));
      await fail(store, tasks[1]!, 1, T0 - 5_000, 'dead');
      await store.settle(tasks[2]!.id, { state: 'skipped', attempts: 0, nextAt: T0, lastError: null, lastStatus: null, now: T0 + 5_000 }, null);
      await fail(store, tasks[3]!, 1, T0 + 5_000, 'dead');
      await fail(store, tasks[4]!, 1, T0 - 5_000);
      // Old: attempts of tasks 0, 1, 4 and settled tasks 0, 1 = 5; task 4 is pending (old but owed), 2 and 3 are recent.
      assert.equal(await store.prune(T0), 5);
      assert.equal(await store.prune(T0), 0);
      assert.deepEqual((await store.attempts(2, { limit: 10 })).items.map((a) => a.id), [attemptOf(tasks[3]!, 1, 0, 'failed').id]);
      assert.deepEqual((await store.deadLetters(2, { limit: 10 })).items.map((t) => t.id), [tasks[3]!.id]);
      assert.equal(await store.pendingCount(2), 1);
      assert.equal(await store.reopen(2, { since: 0, until: T0 * 2 }, T0 + 6_000), 3, 'tasks 2, 3, 4 are left');
      assert.deepEqual(await store.schedule([tasks[0]!]), [tasks[0]!.id], 'a pruned task can be scheduled again');
    }));

    it('removeOwner removes every task and attempt of the owner\'s endpoints (deleted ones too), and nobody else\'s', withStore(async (store) => {
      // Owner 7: endpoints 70 (live) and 71 (deleted); owner 8: endpoint 80.
      await store.applyEndpoints([endpointRecord(70, 7, 1), endpointRecord(71, 7, 2, { deleted: true }), endpointRecord(80, 8, 3)]);
      const mine = [deliveryTask(70, 1, { ownerId: 7 }), deliveryTask(70, 2, { ownerId: 7 }), deliveryTask(71, 3, { ownerId: 7 })];
      const theirs = [deliveryTask(80, 4, { ownerId: 8 }), deliveryTask(80, 5, { ownerId: 8 })];
      await store.schedule([...mine, ...theirs]);
      await fail(store, mine[0]!, 1, T0);
      await fail(store, mine[0]!, 2, T0 + 5_000, 'dead');
      await store.settle(mine[2]!.id, { state: 'succeeded', attempts: 1, nextAt: T0, lastError: null, lastStatus: 200, now: T0 }, attemptOf(mine[2]!, 1, T0, 'succeeded'));
      await fail(store, theirs[0]!, 1, T0, 'dead');

      assert.deepEqual(await store.removeOwner(7), { tasks: 3, attempts: 3 });
      assert.deepEqual(await store.removeOwner(7), { tasks: 0, attempts: 0 });
      for (const webhookId of [70, 71]) {
        assert.deepEqual((await store.attempts(webhookId, { limit: 10 })).items, []);
        assert.deepEqual((await store.deadLetters(webhookId, { limit: 10 })).items, []);
        assert.equal(await store.pendingCount(webhookId), 0);
        assert.equal(await store.reopen(webhookId, { since: 0, until: T0 * 2 }, T0 + 10_000), 0);
      }
      assert.deepEqual(ids(await store.claimDue(T0 + 60_000, 10, LEASE, 'd1', NONE)), [theirs[1]!.id]);
      assert.deepEqual((await store.attempts(80, { limit: 10 })).items.map((a) => a.id), [attemptOf(theirs[0]!, 1, T0, 'failed').id]);
      assert.deepEqual(ids((await store.deadLetters(80, { limit: 10 })).items), [theirs[0]!.id]);
      assert.equal((await store.endpoint(70))?.ownerId, 7, 'the endpoint records stay');
      assert.deepEqual(await store.schedule([mine[1]!]), [mine[1]!.id], 'a removed task is gone: it can be scheduled again');
      assert.deepEqual(await store.removeOwner(99), { tasks: 0, attempts: 0 });
    }));

    it('applyEndpoints keeps the record of the latest position; endpointsOf leaves deleted ones out', withStore(async (store) => {
      assert.equal(await store.endpoint(1), null);
      await store.applyEndpoints([endpointRecord(1, 10, 5), endpointRecord(2, 10, 6), endpointRecord(3, 11, 7), endpointRecord(4, 12, 8)]);
      await store.applyEndpoints([endpointRecord(1, 10, 5, { url: 'https://same.example/' }), endpointRecord(2, 10, 4, { enabled: false })]);
      assert.deepEqual(await store.endpoint(1), endpointRecord(1, 10, 5));
      assert.deepEqual(await store.endpoint(2), endpointRecord(2, 10, 6));
      const rotated = endpointRecord(1, 10, 9, {
        enabled: false, events: ['file.deleted'],
        secrets: [{ sealed: { kid: 'k1', iv: 'bmV3', ct: 'bmV3', tag: 'bmV3' }, validUntil: null }, { sealed: endpointRecord(1, 10, 0).secrets[0]!.sealed, validUntil: T0 }],
      });
      await store.applyEndpoints([rotated, endpointRecord(3, 11, 10, { deleted: true })]);
      assert.deepEqual(await store.endpoint(1), rotated);
      assert.equal((await store.endpoint(3))?.deleted, true, 'a deleted one is still found by id');
      const mine = (await store.endpointsOf([10, 11, 99])).sort((a, b) => a.webhookId - b.webhookId);
      assert.deepEqual(mine, [rotated, endpointRecord(2, 10, 6)]);
      assert.deepEqual(await store.endpointsOf([]), []);
      const copy = await store.endpoint(2);
      copy!.events.push('file.deleted');
      assert.deepEqual((await store.endpoint(2))?.events, endpointRecord(2, 10, 6).events, 'a record handed out is a copy');
    }));
  });
