import type { SealedSecret, WebhookEventType } from '@docshare/contracts';

/*
 * The WebhookStore port: the dispatcher's operational state (docs/api-decisions.md, Webhooks).
 * Delivery state is not domain events: tasks and attempts are kept WEBHOOK_RETENTION_DAYS (30)
 * after they settle, then pruned. Endpoints are a read model of the `docs.webhook.*` events,
 * folded by the dispatcher and guarded by log position, so replaying the log is harmless.
 *
 * Adapters:
 * - memory (tests): everything in maps, lost at exit.
 * - file (embedded mode, `DATA_DIR/webhooks/webhooks.log`): the memory model, every change
 *   appended to one durable log (libs/durable-log, fsynced before the call resolves), replayed at
 *   open and compacted on prune and on removeOwner (so an erased owner's deliveries leave the
 *   disk at once). Endpoints are kept there too, though embedded mode replays the
 *   whole event log at every start and would rebuild them anyway. Leases are not durable: one
 *   process holds the file, so a lease found at open belonged to a process that is gone and is
 *   dropped (its tasks are due again at once; a re-send carries the same `webhook-id`).
 * - MongoDB (distributed mode): collections webhook_endpoints, webhook_tasks, webhook_attempts,
 *   webhook_health, webhook_checkpoints; every call a bounded, indexed query.
 */

export interface EndpointRecord {
  webhookId: number;
  ownerId: number;
  url: string;
  events: WebhookEventType[];
  enabled: boolean;
  deleted: boolean;
  /** Current secret first; a rotated-out one while validUntil (epoch ms) is ahead. */
  secrets: { sealed: SealedSecret; validUntil: number | null }[];
  /** Log position of the last event folded into it (the guard: applyEndpoints ignores an older or equal position). */
  position: number;
}

/** `skipped`: the endpoint was disabled when the event came (kept, replayable). */
export type TaskState = 'pending' | 'succeeded' | 'dead' | 'skipped';
export const TASK_STATES: readonly TaskState[] = ['pending', 'succeeded', 'dead', 'skipped'];
/** The states prune may remove (a pending task is never pruned: it is still owed). */
export const SETTLED_STATES: readonly TaskState[] = ['succeeded', 'dead', 'skipped'];

export interface DeliveryTask {
  /** `${webhookId}:${messageId}` (schedule is idempotent by it): see `taskIdOf`. */
  id: string;
  webhookId: number;
  ownerId: number;
  messageId: string;
  eventId: string;
  /** A WebhookMessageType. */
  eventType: string;
  /** Epoch ms of the event (replay's since/until compare it). */
  eventTime: number;
  /** The event's log position (orders an endpoint's tasks). */
  position: number;
  /** The JSON payload, as signed and sent. */
  body: string;
  state: TaskState;
  /** Attempts made in this cycle. */
  attempts: number;
  /** 0, +1 per replay. */
  cycle: number;
  /** Epoch ms when due (pending). */
  nextAt: number;
  /** The dispatcher holding it, and until when (0: nobody). */
  leaseOwner: string | null;
  leaseUntil: number;
  lastError: string | null;
  lastStatus: number | null;
  /** Epoch ms of the last change (retention of settled tasks; a dead letter's `dead_at`). */
  updatedAt: number;
}

export interface DeliveryAttempt {
  /** Unique: see `attemptIdOf`. */
  id: string;
  webhookId: number;
  ownerId: number;
  messageId: string;
  eventId: string;
  eventType: string;
  /** 1-based within the cycle. */
  attempt: number;
  /** Epoch ms the attempt started. */
  at: number;
  /** `gone` counts as failed here. */
  outcome: 'succeeded' | 'failed';
  status: number | null;
  latencyMs: number;
  error: string | null;
}

/** `next`: an opaque cursor (base64url) for the following page, null at the end. */
export interface Page<T> { items: T[]; next: string | null }

export interface SettleNext {
  state: TaskState;
  attempts: number;
  nextAt: number;
  lastError: string | null;
  lastStatus: number | null;
  now: number;
  /**
   * The cycle the settling attempt belongs to: when given, the task's state moves only while it is
   * still in that cycle. A replay reopens a task (cycle + 1) even while an attempt of the previous
   * cycle is in flight; that attempt's settle must not overwrite the replayed state (its attempt is
   * still recorded).
   */
  cycle?: number;
}

export type ReopenSelector = { since: number; until: number } | { messageIds: readonly string[] };

export interface WebhookStore {
  // endpoints (a read model of the webhook events; guarded by position)
  /** Stores each record unless the one stored has the same or a later position. */
  applyEndpoints(records: readonly EndpointRecord[]): Promise<void>;
  endpoint(webhookId: number): Promise<EndpointRecord | null>;
  /** The endpoints of these owners that are not deleted. */
  endpointsOf(ownerIds: readonly number[]): Promise<EndpointRecord[]>;
  // tasks
  /** Inserts the tasks whose id is not there yet; existing ones stay as they are. Returns the ids inserted. */
  schedule(tasks: readonly DeliveryTask[]): Promise<string[]>;
  /**
   * Leases up to `limit` pending tasks due (nextAt ≤ now) whose lease has run out (leaseUntil ≤
   * now), lowest (nextAt, position) first, none of a webhook in `skip`; sets leaseOwner and
   * leaseUntil = now + leaseMs and returns them. Two callers never both get one task.
   */
  claimDue(now: number, limit: number, leaseMs: number, owner: string, skip: ReadonlySet<number>): Promise<DeliveryTask[]>;
  /**
   * Ends every lease `owner` holds on a pending task (claimable at once): what a dispatcher does as
   * it starts, under the owner id it had before a crash, so the tasks it held are sent again at
   * once instead of after their lease. Returns how many.
   */
  releaseLeases(owner: string): Promise<number>;
  /** Records one attempt and the task's next state in one step; the lease is cleared. An unknown task: only the attempt is recorded. */
  settle(taskId: string, next: SettleNext, attempt: DeliveryAttempt | null): Promise<void>;
  /**
   * Replay: the webhook's tasks (any state) whose eventTime is in [since, until), or whose
   * messageId is listed, become pending: attempts 0, cycle + 1, nextAt now, unleased. Returns how many.
   */
  reopen(webhookId: number, selector: ReopenSelector, now: number): Promise<number>;
  /** Pending tasks of a webhook (the queue-depth metric; cheap: an index count). */
  pendingCount(webhookId: number): Promise<number>;
  // listings for the API (newest first; a cursor this store did not give throws invalid M.invalidCursor)
  /** Attempts, newest (at, id) first, optionally of one outcome. */
  attempts(webhookId: number, options: { outcome?: 'succeeded' | 'failed'; cursor?: string; limit: number }): Promise<Page<DeliveryAttempt>>;
  /** Dead tasks, most recently dead (updatedAt, id) first. */
  deadLetters(webhookId: number, options: { cursor?: string; limit: number }): Promise<Page<DeliveryTask>>;
  // endpoint health (WEBHOOK_DISABLE_AFTER)
  failingSince(webhookId: number): Promise<number | null>;
  setFailingSince(webhookId: number, since: number | null): Promise<void>;
  // the dispatcher's own progress per bus partition: side effects (tasks, replays) only for events after it
  /** 0 when none. */
  checkpoint(group: string, partition: number): Promise<number>;
  /** Never moves back: a lower position than the stored one changes nothing. */
  setCheckpoint(group: string, partition: number, position: number): Promise<void>;
  /** Removes attempts older than `before` and settled (succeeded/dead/skipped) tasks updated before it. Returns how many. */
  prune(before: number): Promise<number>;
  /**
   * Account erasure: removes the tasks and attempts (any state, any age) of every endpoint of
   * `ownerId` (deleted or not; the endpoint records stay: they are the webhook events' read model,
   * and a deleted endpoint's record keeps no URL or secret).
   * Returns how many of each. A settle of a task in flight as it runs may still record its attempt:
   * call it once the owner's endpoints are deleted and no event of theirs is left to deliver.
   */
  removeOwner(ownerId: number): Promise<{ tasks: number; attempts: number }>;
  close(): Promise<void>;
}

/** A task's id: one task per (endpoint, message). */
export const taskIdOf = (webhookId: number, messageId: string): string => `${webhookId}:${messageId}`;
/** An attempt's id: unique per task, replay cycle and attempt. */
export const attemptIdOf = (taskId: string, cycle: number, attempt: number): string => `${taskId}:${cycle}:${attempt}`;
