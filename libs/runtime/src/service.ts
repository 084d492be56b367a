import express, { type RequestHandler } from 'express';
import { retrying } from '@docshare/contracts';
import {
  closeServer, exitGracefully, listen, makeOps, requestLog, serveMetrics, type HttpLimits, type Logger, type MetricsListen, type Ops,
  type ReadinessCheck,
} from '@docshare/http';
import type { RunningConsumer } from './consume.ts';

export interface ConsumerServiceOptions {
  /** Service name (logs, the `service` label of its HTTP metrics). */
  name: string;
  /** What the service answers besides /healthz, /readyz and /metrics, made once its metrics registry exists. */
  app: (ops: Ops) => RequestHandler;
  /**
   * Joins the service's consumer group(s): run in the background after the HTTP port is open,
   * retried with backoff until it succeeds or the service stops.
   */
  join: (ops: Ops) => Promise<RunningConsumer>;
  /** What the service needs to answer: /readyz fails while one of these fails. */
  checks: Record<string, ReadinessCheck>;
  /** Reported by /readyz but never failing it (e.g. consumer lag sources). */
  softChecks?: Record<string, ReadinessCheck>;
  /** Adds metrics to the service's registry. */
  metrics?: (ops: Ops) => void;
  /** The metrics listener (`METRICS_PORT`): /metrics is served there and not on `port`. */
  metricsAt?: MetricsListen;
  port: number;
  host: string;
  /** The HTTP limits of both listeners (the service's configured `HTTP_*`). */
  http: HttpLimits;
  logger: Logger;
  /** Closes the service's clients, after the consumer has stopped. */
  close: () => Promise<void>;
  /** Backoff between attempts to join: from 200 ms doubling up to this (default 5 000). */
  joinRetryMaxMs?: number;
  /** Installs the SIGTERM/SIGINT handlers (default true; tests call `stop` instead). */
  handleSignals?: boolean;
}

export interface ConsumerService {
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
 * The lifecycle of one consumer service (a projector, the text extractor): serves its API with
 * /healthz, /readyz and /metrics (on the metrics listener when it has one, else on its own port),
 * joins its consumer group in the background, and stops gracefully on SIGTERM (stop accepting,
 * finish the event in hand, commit, close clients).
 *
 * The HTTP port opens first: joining can take a Kafka session timeout (the group waits for the old
 * member's session to expire) or longer while Kafka is down. /readyz fails only when a `checks`
 * dependency fails; the consumer's state is reported in its body (`consumer: joining | consuming`).
 */
export const startConsumerService = async (options: ConsumerServiceOptions): Promise<ConsumerService> => {
  const { name, logger } = options;
  let state: 'joining' | 'consuming' | 'stopped' = 'joining';
  const consumerCheck: ReadinessCheck = async () => {
    if (state !== 'consuming') throw new Error(`consumer ${state}`);
  };
  const ops = makeOps(name, options.checks, undefined, { consumer: consumerCheck, ...options.softChecks });
  options.metrics?.(ops);
  const app = express();
  app.disable('x-powered-by');
  app.use(ops.httpMetrics);
  app.use(ops.router);
  if (options.metricsAt === undefined) app.use(ops.metricsRouter);
  app.use(requestLog(logger));
  app.use(options.app(ops));

  const metrics = options.metricsAt === undefined ? undefined : await serveMetrics(ops, options.metricsAt, logger, options.http);
  const { server, port } = await listen(app, options.port, options.host, options.http, logger).catch(async (error: unknown) => {
    if (metrics) await closeServer(metrics.server, 0);
    throw error;
  });
  logger.info({ port }, `${name} listening`);

  let running: RunningConsumer | null = null;
  const stopping = new AbortController();
  const consuming = retrying(async (attempt) => {
    const joined = await options.join(ops);
    if (state !== 'joining') {
      // Stopped while joining.
      await joined.stop();
      return;
    }
    running = joined;
    state = 'consuming';
    logger.info({ attempt }, `${name} consuming`);
  }, {
    baseMs: 200, capMs: options.joinRetryMaxMs ?? 5_000, signal: stopping.signal,
    onRetry: (err, attempt, retryInMs) => logger.warn({ err, attempt, retryInMs }, 'could not join the consumer group; serving queries and retrying'),
  }).catch(() => {
    // Stopped before it could join: nothing to consume.
  });

  let stopped: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      await closeServer(server);
      if (metrics) await closeServer(metrics.server, 1_000);
      const was = state;
      state = 'stopped';
      stopping.abort();
      if (was === 'joining') await consuming;
      await running?.stop();
      await options.close();
    })();
    return stopped;
  };
  if (options.handleSignals !== false) exitGracefully(logger, [stop]);
  return { port, metricsPort: metrics?.port, consuming, consumerState: () => state, stop };
};
