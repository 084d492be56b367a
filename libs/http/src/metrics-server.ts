import type { Server } from 'node:http';
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { M } from '@docshare/contracts';
import { errorHandler, sendError } from './errors.ts';
import { requestDeadline, requestId } from './middleware.ts';
import type { Ops } from './ops.ts';
import { httpLimitsOf, listen, type HttpLimits, type MetricsListen } from './serve.ts';

/*
 * The metrics listener: a second, small HTTP server of a service on `METRICS_PORT`, for
 * Prometheus on the internal network. It answers GET /metrics, /healthz and /readyz, and the JSON
 * 404 envelope for anything else. It is made like every other listener (listen(): header, idle
 * and keep-alive timeouts, unparseable requests answered in the envelope, never a crash) with a
 * total deadline per request (a collect that waits on a frozen server cannot hold a scrape) and
 * few connections: a handful of scrapers, never a crowd.
 */

/** Open connections the metrics listener keeps at most. */
export const METRICS_MAX_CONNECTIONS = 64;

/** The express app of the metrics listener. */
export const metricsApp = (ops: Ops, logger: Logger, requestTimeoutMs: number): Express => {
  const app = express();
  app.set('case sensitive routing', true);
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestId());
  app.use(requestDeadline(requestTimeoutMs, () => false, logger));
  app.use(ops.router);
  app.use(ops.metricsRouter);
  app.use((_req, res) => sendError(res, 404, M.notFound));
  app.use(errorHandler(logger));
  return app;
};

/** Starts the metrics listener at `at`; resolves once it listens, with the bound port. */
export const serveMetrics = async (
  ops: Ops, at: MetricsListen, logger: Logger, limits: HttpLimits = httpLimitsOf({}),
): Promise<{ server: Server; port: number }> => {
  const app = metricsApp(ops, logger, limits.requestTimeoutMs);
  const served = await listen(app, at.port, at.host, { ...limits, maxConnections: Math.min(limits.maxConnections, METRICS_MAX_CONNECTIONS) }, logger);
  logger.info({ port: served.port, host: at.host }, 'metrics listening');
  return served;
};
