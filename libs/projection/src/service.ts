import express, { type Express } from 'express';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import type { EventConsumer } from '@docshare/event-bus';
import { closeServer, counter, exitGracefully, listen, makeOps, requestLog, type Logger, type ReadinessCheck } from '@docshare/http';
import { runProjector } from './runner.ts';
import type { Progress } from './progress.ts';

export interface ProjectorServiceOptions {
  /** Service name; the name its progress is recorded under. */
  name: string;
  /** Kafka consumer group (default: the name). */
  group?: string;
  consumer: EventConsumer;
  /** Applies one event to the read model; must be idempotent. */
  handle: (record: StoredEvent<CloudEvent>) => Promise<void>;
  progress: Progress;
  /** The service's query API. */
  queryApp: Express;
  checks: Record<string, ReadinessCheck>;
  port: number;
  host: string;
  logger: Logger;
  /** Closes the service's clients, after the consumer has stopped. */
  close: () => Promise<void>;
}

/**
 * One projector process: consumes its group's events (acknowledging each after the read-model
 * write and the progress record), serves its query API with /healthz, /readyz and /metrics, and
 * stops gracefully on SIGTERM (stop accepting, finish the event in hand, commit, close clients).
 */
export const startProjectorService = async (options: ProjectorServiceOptions): Promise<{ port: number }> => {
  const { name, logger } = options;
  const ops = makeOps(name, options.checks);
  const projected = counter(ops.registry, 'docshare_events_projected_total', 'Events applied to the read model', ['type']);
  const app = express();
  app.disable('x-powered-by');
  app.use(ops.httpMetrics);
  app.use(ops.router);
  app.use(requestLog(logger));
  app.use(options.queryApp);

  const projector = await runProjector(options.consumer, options.group ?? name, async (record) => {
    const { event } = record;
    await options.handle(record);
    await options.progress.record(name, event.subject, event.streamversion);
    projected.inc({ type: event.type });
    logger.info({
      correlationId: event.correlationid, causationId: event.causationid, eventId: event.id, type: event.type,
      subject: event.subject, version: event.streamversion,
    }, 'event projected');
  }, logger);
  const { server, port } = await listen(app, options.port, options.host);
  logger.info({ port }, `${name} listening`);
  exitGracefully(logger, [() => closeServer(server), () => projector.stop(), options.close]);
  return { port };
};
