import type { Express } from 'express';
import type { EventConsumer } from '@docshare/event-bus';
import { counter } from '@docshare/http';
import { honourConsistency, makeConsistencyGate, type Checkpoints } from '@docshare/consistency';
import { startConsumerService, type ConsumerService, type ConsumerServiceOptions } from '@docshare/runtime';
import { projectorMetrics, runProjector, type BatchApply } from './runner.ts';

/**
 * A projector service: a consumer service (its checks, metrics, listeners, close; @docshare/runtime)
 * whose app is its query API behind the read-your-writes gate and whose consumer is the projector.
 */
export interface ProjectorServiceOptions extends Omit<ConsumerServiceOptions, 'app' | 'join'> {
  /** Kafka consumer group (default: the name). */
  group?: string;
  consumer: EventConsumer;
  /**
   * Runs before each attempt to join the group (e.g. making sure the topics exist). Like the
   * subscription it runs in the background, retried until it succeeds.
   */
  prepare?: () => Promise<void>;
  /** Applies a batch of events to the read model; must be idempotent. */
  handle: BatchApply;
  /** Where the group's progress is recorded, and where its queries read it to honour consistency tokens. */
  checkpoints: Checkpoints;
  /** Partitions of the event topic: a token is reached when every one of them is through it. */
  partitions: number;
  /** Longest a query carrying a consistency token waits for the read model (default 5 000 ms). */
  consistencyWaitMs?: number;
  /** The service's query API. */
  queryApp: Express;
}

export type ProjectorService = ConsumerService;

/**
 * One projector process (@docshare/runtime's `startConsumerService`): serves its query API behind the
 * read-your-writes gate (queries that carry a consistency token wait until the group's checkpoints
 * have reached it), and runs the projector (`runProjector`, the runner embedded mode uses too) as
 * its consumer, joined in the background: the read model is already in the database, so queries
 * are served at once after a restart. On stop, the last checkpoints are written before the
 * service's clients close.
 */
export const startProjectorService = (options: ProjectorServiceOptions): Promise<ProjectorService> => {
  const { logger } = options;
  const group = options.group ?? options.name;
  return startConsumerService({
    name: options.name, logger, port: options.port, host: options.host, http: options.http,
    checks: options.checks, softChecks: options.softChecks, metricsAt: options.metricsAt,
    joinRetryMaxMs: options.joinRetryMaxMs, handleSignals: options.handleSignals,
    metrics: (ops) => {
      projectorMetrics(ops.registry);
      options.metrics?.(ops);
    },
    app: (ops) => {
      const lagging = counter(ops.registry, 'docshare_consistency_timeouts_total', 'Queries answered before the read model reached their consistency token');
      const honour = honourConsistency(makeConsistencyGate(options.checkpoints, group, options.partitions), options.consistencyWaitMs ?? 5_000, () => lagging.inc());
      return (req, res, next) => honour(req, res, (err?: unknown) => (err ? next(err) : options.queryApp(req, res, next)));
    },
    join: async (ops) => {
      await options.prepare?.();
      return runProjector({ consumer: options.consumer, group, apply: options.handle, checkpoints: options.checkpoints, logger, registry: ops.registry });
    },
    close: async () => {
      await options.checkpoints.flush?.().catch((err: unknown) => logger.warn({ err }, 'could not write the last checkpoints'));
      await options.close();
    },
  });
};
