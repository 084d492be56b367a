import express, { type Express } from 'express';
import { backoffMs } from '@docshare/contracts';
import type { EventBatch, EventConsumer } from '@docshare/event-bus';
import {
  closeServer, counter, exitGracefully, listen, makeOps, requestLog, serveMetrics, type Logger, type MetricsListen, type Ops, type ReadinessCheck,
} from '@docshare/http';
import { projectBatches, runProjector, type BatchApply, type RunningProjector } from './runner.ts';
import { honourConsistency, makeConsistencyGate, type Checkpoints } from './consistency.ts';
import { deadLetterCounter } from './metrics.ts';

export interface ProjectorServiceOptions {
  /** Service name. */
  name: string;
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
  /** What the queries need (the read store): /readyz fails while one of these fails. */
  checks: Record<string, ReadinessCheck>;
  /** Reported by /readyz but never failing it (e.g. consumer lag sources). */
  softChecks?: Record<string, ReadinessCheck>;
  /** Adds metrics to the service's registry (consumer lag, read-model generation). */
  metrics?: (ops: Ops) => void;
  /**
   * The metrics listener (`METRICS_PORT`): /metrics is served there and not on `port`. Without
   * one, /metrics stays on the service's own (internal) port.
   */
  metricsAt?: MetricsListen;
  port: number;
  host: string;
  logger: Logger;
  /** Closes the service's clients, after the consumer has stopped. */
  close: () => Promise<void>;
  /** Backoff between attempts to join the consumer group: from 200 ms doubling up to this (default 5 000). */
  joinRetryMaxMs?: number;
  /** Installs the SIGTERM/SIGINT handlers (default true; tests call `stop` instead). */
  handleSignals?: boolean;
}

export interface ProjectorService {
  port: number;
  /** The metrics listener's port, when it has one. */
  metricsPort?: number;
  /** Resolves once the consumer has joined its group (tests, tools). */
  consuming: Promise<void>;
  /** `joining` until the consumer has joined its group, then `consuming`; `stopped` after stop. */
  consumerState(): 'joining' | 'consuming' | 'stopped';
  /** The graceful stop: stop accepting, finish the event in hand, commit, close clients. */
  stop(): Promise<void>;
}

/**
 * One projector process: serves its query API with /healthz, /readyz and /metrics (on the
 * metrics listener when it has one, else on its own internal port), consumes its group's events
 * in batches (acknowledging each after the read-model write and the checkpoint), holds queries
 * that carry a consistency token until the read model has reached it, and stops gracefully on
 * SIGTERM (stop accepting, finish the event in hand, commit, close clients).
 *
 * The HTTP port opens first and the consumer joins its group in the background: the read model
 * is already in the database, so queries are served at once after a restart, while joining can
 * take a Kafka session timeout (the group waits for the old member's session to expire) or
 * longer while Kafka is down. /readyz follows what the service can serve: it fails only when a
 * `checks` dependency (the read store) fails; the consumer's state is reported in its body
 * (`consumer: joining | consuming`) without failing it.
 */
export const startProjectorService = async (options: ProjectorServiceOptions): Promise<ProjectorService> => {
  const { name, logger } = options;
  const group = options.group ?? name;
  const joinRetryMaxMs = options.joinRetryMaxMs ?? 5_000;
  let state: 'joining' | 'consuming' | 'stopped' = 'joining';
  const consumerCheck: ReadinessCheck = async () => {
    if (state !== 'consuming') throw new Error(`consumer ${state}`);
  };
  const ops = makeOps(name, options.checks, undefined, { consumer: consumerCheck, ...options.softChecks });
  const projected = counter(ops.registry, 'docshare_events_projected_total', 'Events applied to the read model', ['type']);
  const lagging = counter(ops.registry, 'docshare_consistency_timeouts_total', 'Queries answered before the read model reached their consistency token');
  const deadLetters = deadLetterCounter(ops.registry);
  options.metrics?.(ops);
  const app = express();
  app.disable('x-powered-by');
  app.use(ops.httpMetrics);
  app.use(ops.router);
  if (options.metricsAt === undefined) app.use(ops.metricsRouter);
  app.use(requestLog(logger));
  const gate = makeConsistencyGate(options.checkpoints, group, options.partitions);
  app.use(honourConsistency(gate, options.consistencyWaitMs ?? 5_000, () => lagging.inc()));
  app.use(options.queryApp);

  const metrics = options.metricsAt === undefined ? undefined : await serveMetrics(ops, options.metricsAt, logger);
  const { server, port } = await listen(app, options.port, options.host).catch(async (error: unknown) => {
    if (metrics) await closeServer(metrics.server, 0);
    throw error;
  });
  logger.info({ port }, `${name} listening`);

  let projector: RunningProjector | null = null;
  let wake: (() => void) | null = null;
  const project = projectBatches(options.handle, options.checkpoints, group);
  const handle = async (batch: EventBatch): Promise<void> => {
    await project(batch);
    for (const { event } of batch.records) projected.inc({ type: event.type });
    if (batch.records.length > 0) {
      logger.debug({
        partition: batch.partition, events: batch.records.length, first: batch.records[0]!.position, through: batch.through,
      }, 'batch projected');
    }
  };
  const consuming = (async () => {
    for (let attempt = 1; state === 'joining'; attempt++) {
      try {
        await options.prepare?.();
        const running = await runProjector(options.consumer, group, handle, logger, () => deadLetters.inc({ group }));
        if (state !== 'joining') {
          // Stopped while joining.
          await running.stop();
          return;
        }
        projector = running;
        state = 'consuming';
        logger.info({ group, attempt }, `${name} consuming`);
        return;
      } catch (err) {
        const delay = backoffMs(attempt, 200, joinRetryMaxMs);
        logger.warn({ err, group, attempt, retryInMs: delay }, 'could not join the consumer group; serving queries and retrying');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, delay);
          function done(): void {
            clearTimeout(timer);
            wake = null;
            resolve();
          }
          wake = done;
        });
      }
    }
  })();

  let stopped: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      await closeServer(server);
      if (metrics) await closeServer(metrics.server, 1_000);
      const was = state;
      state = 'stopped';
      wake?.();
      if (was === 'joining') await consuming;
      await projector?.stop();
      await options.checkpoints.flush?.().catch((err: unknown) => logger.warn({ err }, 'could not write the last checkpoints'));
      await options.close();
    })();
    return stopped;
  };
  if (options.handleSignals !== false) exitGracefully(logger, [stop]);
  return { port, metricsPort: metrics?.port, consuming, consumerState: () => state, stop };
};
