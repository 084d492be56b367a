import express, { type Router, type RequestHandler } from 'express';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { M } from '@docshare/contracts';
import { sendError } from './errors.ts';

export type ReadinessCheck = () => Promise<void>;

export interface Ops {
  registry: Registry;
  /** /healthz and /readyz. */
  router: Router;
  /**
   * GET /metrics (Prometheus text): served on the metrics listener (`METRICS_PORT`, serveMetrics),
   * or, by an internal service without one, on its own port. Never on a public port.
   */
  metricsRouter: Router;
  /** Records each request's duration and status by route. */
  httpMetrics: RequestHandler;
}

/** Operational endpoints of one service (decisions §13): liveness, readiness of its dependencies, Prometheus metrics. */
export const makeOps = (
  service: string, checks: Record<string, ReadinessCheck>, registry = new Registry(),
  /** Dependencies the service can work without (degraded): reported, but never make /readyz fail. */
  softChecks: Record<string, ReadinessCheck> = {},
): Ops => {
  if (registry.getSingleMetric('process_cpu_seconds_total') === undefined) collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route, method and status',
    labelNames: ['service', 'method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  // Paths are case-sensitive everywhere (docs/api-decisions.md): `/HEALTHZ` is `Not found`.
  const router = express.Router({ caseSensitive: true });
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'success', service });
  });
  router.get('/readyz', async (_req, res) => {
    const results: Record<string, string> = {};
    let ready = true;
    await Promise.all([
      ...Object.entries(checks).map(async ([name, check]) => {
        try {
          await check();
          results[name] = 'ok';
        } catch {
          results[name] = 'unavailable';
          ready = false;
        }
      }),
      ...Object.entries(softChecks).map(async ([name, check]) => {
        try {
          await check();
          results[name] = 'ok';
        } catch {
          results[name] = 'degraded';
        }
      }),
    ]);
    res.status(ready ? 200 : 503).json(ready
      ? { status: 'success', service, checks: results }
      : { status: 'error', message: 'Not ready', service, checks: results });
  });
  // Any other method (OPTIONS, POST, TRACE, ...) answers in the envelope, not express's plain-text Allow list.
  const otherMethods: RequestHandler = (_req, res) => {
    res.setHeader('Allow', 'GET, HEAD');
    sendError(res, 405, M.invalidMethod);
  };
  router.all(['/healthz', '/readyz'], otherMethods);
  const metricsRouter = express.Router({ caseSensitive: true });
  metricsRouter.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', registry.contentType);
    res.send(await registry.metrics());
  });
  metricsRouter.all('/metrics', otherMethods);
  const httpMetrics: RequestHandler = (req, res, next) => {
    const end = duration.startTimer({ service, method: req.method });
    res.on('finish', () => {
      // The gateway names its route; a service's own router knows the matched path.
      const matched = (req.route as { path?: unknown } | undefined)?.path;
      const route = typeof res.locals.route === 'string' ? res.locals.route : typeof matched === 'string' ? matched : 'unmatched';
      end({ route, status: String(res.statusCode) });
    });
    next();
  };
  return { registry, router, metricsRouter, httpMetrics };
};

/** A counter registered once per registry. */
export const counter = (registry: Registry, name: string, help: string, labelNames: string[] = []): Counter => {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter;
  return new Counter({ name, help, labelNames, registers: [registry] });
};

/**
 * Resolves as `work`, or rejects after `ms`: a metric collected from a server (Kafka, MongoDB)
 * must never hold a scrape for longer than that when the server is slow or frozen.
 */
export const within = <T>(work: Promise<T>, ms: number): Promise<T> => new Promise<T>((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  work.then((value) => {
    clearTimeout(timer);
    resolve(value);
  }, (error: unknown) => {
    clearTimeout(timer);
    reject(error instanceof Error ? error : new Error(String(error)));
  });
});
