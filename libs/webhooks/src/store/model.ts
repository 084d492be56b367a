import { compareDesc, decodeCursor, encodeCursor, type Keyset } from './cursor.ts';
import {
  SETTLED_STATES, type DeliveryAttempt, type DeliveryTask, type EndpointRecord, type Page, type ReopenSelector, type WebhookStore,
} from './port.ts';

/*
 * The WebhookStore in memory: the memory adapter is this alone, the file adapter this plus a
 * durable log of the changes it reports. Indexes kept beside the maps so that no call walks more
 * than it must: the pending set (claimDue), each webhook's tasks (reopen, dead letters) and each
 * webhook's attempts sorted by (at, id) (paging from a cursor by binary search).
 */

/** One change, as the file adapter logs it (the whole new value: replaying the lines in order rebuilds the model). */
export type Change =
  | { t: 'e'; v: EndpointRecord }
  | { t: 'k'; v: DeliveryTask }
  | { t: 'a'; v: DeliveryAttempt }
  | { t: 'h'; w: number; s: number | null }
  | { t: 'c'; g: string; p: number; v: number };

export interface WebhookModel {
  /**
   * The store's calls; each mutation hands what it changed to `persist` and resolves when it does.
   * `check` runs first in every call (it throws when the store is closed or can no longer write).
   */
  store(persist: (changes: Change[]) => Promise<void>, check: () => void): Omit<WebhookStore, 'close'>;
  /** Applies a logged change (replay at open). */
  load(change: Change): void;
  /** Every live value as changes (what a compaction writes). */
  snapshot(): Iterable<Change>;
  /** Drops every lease (an opened file: the process that held them is gone). */
  dropLeases(): void;
}

const key = (group: string, partition: number): string => `${group}\u0000${partition}`;
const byDue = (a: DeliveryTask, b: DeliveryTask): number =>
  a.nextAt - b.nextAt || a.position - b.position || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const attemptKey = (a: DeliveryAttempt): Keyset => ({ at: a.at, id: a.id });
const deadKey = (t: DeliveryTask): Keyset => ({ at: t.updatedAt, id: t.id });
const cloneEndpoint = (r: EndpointRecord): EndpointRecord => structuredClone(r);

/** The page of `items` (already newest first, after the cursor) holding at most `limit`. */
const pageOf = <T>(items: T[], limit: number, keyOf: (item: T) => Keyset): Page<T> => {
  const page = items.slice(0, limit);
  const last = page.at(-1);
  return { items: page, next: items.length > limit && last !== undefined ? encodeCursor(keyOf(last)) : null };
};

export const makeWebhookModel = (): WebhookModel => {
  const endpoints = new Map<number, EndpointRecord>();
  const tasks = new Map<string, DeliveryTask>();
  const pending = new Set<string>();
  const tasksOf = new Map<number, Set<string>>();
  const attemptIds = new Set<string>();
  /** Each webhook's attempts, ascending by (at, id). */
  const attemptsOf = new Map<number, DeliveryAttempt[]>();
  const health = new Map<number, number>();
  const checkpoints = new Map<string, { g: string; p: number; v: number }>();

  const putTask = (task: DeliveryTask): void => {
    tasks.set(task.id, task);
    let ids = tasksOf.get(task.webhookId);
    if (!ids) tasksOf.set(task.webhookId, (ids = new Set()));
    ids.add(task.id);
    if (task.state === 'pending') pending.add(task.id);
    else pending.delete(task.id);
  };
  const dropTask = (task: DeliveryTask): void => {
    tasks.delete(task.id);
    pending.delete(task.id);
    const ids = tasksOf.get(task.webhookId);
    ids?.delete(task.id);
    if (ids?.size === 0) tasksOf.delete(task.webhookId);
  };
  /** Inserts in (at, id) order: attempts come about in time order, so this is almost always a push. */
  const putAttempt = (attempt: DeliveryAttempt): boolean => {
    if (attemptIds.has(attempt.id)) return false;
    attemptIds.add(attempt.id);
    let list = attemptsOf.get(attempt.webhookId);
    if (!list) attemptsOf.set(attempt.webhookId, (list = []));
    let at = list.length;
    while (at > 0 && compareDesc(attemptKey(list[at - 1]!), attemptKey(attempt)) < 0) at--;
    list.splice(at, 0, attempt);
    return true;
  };
  const putEndpoint = (record: EndpointRecord): boolean => {
    const stored = endpoints.get(record.webhookId);
    if (stored && stored.position >= record.position) return false;
    endpoints.set(record.webhookId, cloneEndpoint(record));
    return true;
  };
  const putCheckpoint = (g: string, p: number, v: number): boolean => {
    const stored = checkpoints.get(key(g, p));
    if (stored && stored.v >= v) return false;
    checkpoints.set(key(g, p), { g, p, v });
    return true;
  };
  const putHealth = (w: number, s: number | null): void => {
    if (s === null) health.delete(w);
    else health.set(w, s);
  };

  const load = (change: Change): void => {
    switch (change.t) {
      case 'e': putEndpoint(change.v); break;
      case 'k': putTask({ ...change.v }); break;
      case 'a': putAttempt({ ...change.v }); break;
      case 'h': putHealth(change.w, change.s); break;
      case 'c': putCheckpoint(change.g, change.p, change.v); break;
    }
  };

  const store = (persist: (changes: Change[]) => Promise<void>, check: () => void): Omit<WebhookStore, 'close'> => ({
    async applyEndpoints(records) {
      check();
      const changes: Change[] = [];
      for (const record of records) if (putEndpoint(record)) changes.push({ t: 'e', v: cloneEndpoint(record) });
      await persist(changes);
    },
    async endpoint(webhookId) {
      check();
      const record = endpoints.get(webhookId);
      return record ? cloneEndpoint(record) : null;
    },
    async endpointsOf(ownerIds) {
      check();
      const owners = new Set(ownerIds);
      return [...endpoints.values()].filter((r) => owners.has(r.ownerId) && !r.deleted).map(cloneEndpoint);
    },
    async schedule(list) {
      check();
      const inserted: DeliveryTask[] = [];
      for (const task of list) {
        if (tasks.has(task.id)) continue;
        const stored = { ...task };
        putTask(stored);
        inserted.push(stored);
      }
      await persist(inserted.map((v) => ({ t: 'k', v: { ...v } })));
      return inserted.map((t) => t.id);
    },
    async releaseLeases(owner) {
      check();
      let released = 0;
      for (const id of pending) {
        const task = tasks.get(id)!;
        if (task.leaseOwner !== owner) continue;
        task.leaseOwner = null;
        task.leaseUntil = 0;
        released++;
      }
      // Leases are not persisted (see port.ts): nothing to log.
      return released;
    },
    async claimDue(now, limit, leaseMs, owner, skip) {
      check();
      if (limit <= 0) return [];
      const due: DeliveryTask[] = [];
      for (const id of pending) {
        const task = tasks.get(id)!;
        if (task.nextAt <= now && task.leaseUntil <= now && !skip.has(task.webhookId)) due.push(task);
      }
      // Leases are not persisted (see port.ts): nothing to log.
      return due.sort(byDue).slice(0, limit).map((task) => {
        task.leaseOwner = owner;
        task.leaseUntil = now + leaseMs;
        return { ...task };
      });
    },
    async settle(taskId, next, attempt) {
      check();
      const changes: Change[] = [];
      const task = tasks.get(taskId);
      if (task && (next.cycle === undefined || task.cycle === next.cycle)) {
        Object.assign(task, {
          state: next.state, attempts: next.attempts, nextAt: next.nextAt, lastError: next.lastError, lastStatus: next.lastStatus,
          updatedAt: next.now, leaseOwner: null, leaseUntil: 0,
        });
        putTask(task);
        changes.push({ t: 'k', v: { ...task } });
      }
      if (attempt && putAttempt({ ...attempt })) changes.push({ t: 'a', v: { ...attempt } });
      await persist(changes);
    },
    async reopen(webhookId, selector: ReopenSelector, now) {
      check();
      const wanted = 'messageIds' in selector ? new Set(selector.messageIds) : null;
      const changes: Change[] = [];
      for (const id of tasksOf.get(webhookId) ?? []) {
        const task = tasks.get(id)!;
        const hit = wanted ? wanted.has(task.messageId) : 'since' in selector && task.eventTime >= selector.since && task.eventTime < selector.until;
        if (!hit) continue;
        Object.assign(task, { state: 'pending', attempts: 0, cycle: task.cycle + 1, nextAt: now, leaseOwner: null, leaseUntil: 0, updatedAt: now });
        putTask(task);
        changes.push({ t: 'k', v: { ...task } });
      }
      await persist(changes);
      return changes.length;
    },
    async pendingCount(webhookId) {
      check();
      let count = 0;
      for (const id of tasksOf.get(webhookId) ?? []) if (pending.has(id)) count++;
      return count;
    },
    async attempts(webhookId, { outcome, cursor, limit }) {
      check();
      const after = cursor === undefined ? null : decodeCursor(cursor);
      const list = attemptsOf.get(webhookId) ?? [];
      // Items older than the cursor are a prefix of the ascending list: `high` is its length (binary search).
      let high = list.length;
      if (after) {
        let low = 0;
        while (low < high) {
          const mid = (low + high) >> 1;
          if (compareDesc(attemptKey(list[mid]!), after) > 0) low = mid + 1; // list[mid] is older than the cursor
          else high = mid;
        }
        high = low;
      }
      const items: DeliveryAttempt[] = [];
      for (let i = high - 1; i >= 0 && items.length <= limit; i--) {
        const attempt = list[i]!;
        if (outcome === undefined || attempt.outcome === outcome) items.push({ ...attempt });
      }
      return pageOf(items, limit, attemptKey);
    },
    async deadLetters(webhookId, { cursor, limit }) {
      check();
      const after = cursor === undefined ? null : decodeCursor(cursor);
      const dead: DeliveryTask[] = [];
      for (const id of tasksOf.get(webhookId) ?? []) {
        const task = tasks.get(id)!;
        if (task.state === 'dead' && (!after || compareDesc(after, deadKey(task)) < 0)) dead.push({ ...task });
      }
      return pageOf(dead.sort((a, b) => compareDesc(deadKey(a), deadKey(b))), limit, deadKey);
    },
    async failingSince(webhookId) {
      check();
      return health.get(webhookId) ?? null;
    },
    async setFailingSince(webhookId, since) {
      check();
      putHealth(webhookId, since);
      await persist([{ t: 'h', w: webhookId, s: since }]);
    },
    async checkpoint(group, partition) {
      check();
      return checkpoints.get(key(group, partition))?.v ?? 0;
    },
    async setCheckpoint(group, partition, position) {
      check();
      if (putCheckpoint(group, partition, position)) await persist([{ t: 'c', g: group, p: partition, v: position }]);
    },
    async prune(before) {
      check();
      let removed = 0;
      for (const task of [...tasks.values()]) {
        if (SETTLED_STATES.includes(task.state) && task.updatedAt < before) {
          dropTask(task);
          removed++;
        }
      }
      for (const [webhookId, list] of attemptsOf) {
        const kept = list.filter((attempt) => attempt.at >= before);
        for (const attempt of list) if (attempt.at < before) attemptIds.delete(attempt.id);
        removed += list.length - kept.length;
        if (kept.length === 0) attemptsOf.delete(webhookId);
        else attemptsOf.set(webhookId, kept);
      }
      return removed;
    },
    async removeOwner(ownerId) {
      check();
      let removedTasks = 0;
      let removedAttempts = 0;
      // Through the owner's endpoints, as the MongoDB adapter goes (by its indexes).
      for (const { webhookId } of [...endpoints.values()].filter((r) => r.ownerId === ownerId)) {
        for (const id of [...(tasksOf.get(webhookId) ?? [])]) {
          const task = tasks.get(id)!;
          if (task.ownerId !== ownerId) continue;
          dropTask(task);
          removedTasks++;
        }
        const list = attemptsOf.get(webhookId) ?? [];
        const kept = list.filter((attempt) => attempt.ownerId !== ownerId);
        for (const attempt of list) if (attempt.ownerId === ownerId) attemptIds.delete(attempt.id);
        removedAttempts += list.length - kept.length;
        if (kept.length === 0) attemptsOf.delete(webhookId);
        else attemptsOf.set(webhookId, kept);
      }
      // Removals are not changes a log replays: the file adapter compacts instead.
      return { tasks: removedTasks, attempts: removedAttempts };
    },
  });

  return {
    store,
    load,
    *snapshot() {
      for (const v of endpoints.values()) yield { t: 'e', v };
      for (const v of tasks.values()) yield { t: 'k', v };
      for (const list of attemptsOf.values()) for (const v of list) yield { t: 'a', v };
      for (const [w, s] of health) yield { t: 'h', w, s };
      for (const { g, p, v } of checkpoints.values()) yield { t: 'c', g, p, v };
    },
    dropLeases() {
      for (const task of tasks.values()) {
        task.leaseOwner = null;
        task.leaseUntil = 0;
      }
    },
  };
};
