import type { CloudEvent, StoredEvent, WebhookDisableReason } from '@docshare/contracts';
import type { EventConsumer } from '@docshare/event-bus';
import type { Logger } from '@docshare/http';
import { consume } from '@docshare/runtime';
import type { WebhookSettings } from '@docshare/runtime/config';
import type { Deliverer, SecretSealer } from '@docshare/webhooks';
import type { WebhookStore } from '@docshare/webhooks/store';
import { makeDispatcher, type Dispatcher } from './dispatcher.ts';
import type { WebhookMetrics } from './metrics.ts';

/**
 * The webhook dispatcher, declared once for both modes (like the text extractor's module): its
 * name (service, consumer group) and its distributed port. It consumes the whole event log as one
 * group, keeps the endpoints' records, turns the events about a user's files into delivery tasks
 * for that user's endpoints, and delivers them (signed, retried, dead-lettered) with one queue
 * per endpoint (dispatcher.ts).
 */
export const webhookDispatcher = { name: 'webhook-dispatcher', port: 8086 } as const;
/**
 * The events whose personal fields the dispatcher reads (issue 24): the messages that carry a title,
 * file name, description, tags or comment (webhookMessageOf), and the endpoints' URLs and
 * descriptions. It opens no other (an extracted text is never sent).
 */
export const DISPATCHER_OPENS = [
  'docs.file.uploaded.v1', 'docs.file.updated.v1', 'docs.comment.posted.v1', 'docs.webhook.registered.v1', 'docs.webhook.updated.v1',
] as const;

/** Records `docs.webhook.disabled.v1` (docs-command: its use case in embedded mode, its internal route otherwise). */
export interface DisableRecorder {
  disable(webhookId: number, ownerId: number, reason: WebhookDisableReason): Promise<void>;
}

export interface DispatcherDeps {
  store: WebhookStore;
  sealer: SecretSealer;
  deliverer: Deliverer;
  recorder: DisableRecorder;
  settings: WebhookSettings;
  logger: Logger;
  /** Resolves once every projector has applied `position` (or gave up waiting, bounded by the caller). */
  readModelsReached: (position: number) => Promise<void>;
  /** The consumer group (its checkpoint's name). */
  group: string;
  /** Lease owner id (default: hostname:pid:random). */
  owner?: string;
  clock?: () => number;
  random?: () => number;
  /** registerWebhookMetrics(registry). */
  metrics?: WebhookMetrics;
  /** How often due tasks (retries, replays, the backlog, tasks a crashed dispatcher held) are claimed (default 1 000 ms). */
  pollMs?: number;
  /** How long a claimed task is this process's (default 5 min); an endpoint's queue is bounded so queue × timeout < lease. */
  leaseMs?: number;
  /** Tasks one endpoint holds in memory (default: 16, less when the lease would not cover them). */
  endpointQueue?: number;
  /** Tasks held in memory in all (default concurrency × 16). */
  maxQueued?: number;
  /** How often delivery state older than the retention is pruned (default hourly). */
  pruneEveryMs?: number;
}

export { makeDispatcher, type Dispatcher } from './dispatcher.ts';

export interface RunningDispatch {
  dispatcher: Dispatcher;
  stop(): Promise<void>;
}

/**
 * Starts a dispatcher and subscribes it as `deps.group` on `consumer` (embedded mode: the log
 * bus; distributed: main.ts does the same on Kafka). Stop ends the subscription first (no batch
 * half handled), then the dispatcher (its attempts in flight end, what waits is handed back).
 */
export const startWebhookDispatch = async (
  consumer: EventConsumer, deps: DispatcherDeps, onDeadLetter?: (record: StoredEvent<CloudEvent>) => void,
): Promise<RunningDispatch> => {
  const dispatcher = makeDispatcher(deps);
  dispatcher.start();
  try {
    const running = await consume(consumer, deps.group, dispatcher.handle, deps.logger, onDeadLetter);
    return {
      dispatcher,
      stop: async () => {
        await running.stop();
        await dispatcher.stop();
      },
    };
  } catch (error) {
    await dispatcher.stop();
    throw error;
  }
};
