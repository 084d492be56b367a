import {
  HTTP_VARS, httpLimitsOf, intVar, MAX_CONNECTIONS_CAP, metricsListenOf, optionalVar, publicBaseUrlOf, stringVar, type HttpLimits, type MetricsListen,
} from '@docshare/http';
import { concern } from './concern.ts';

/** The HTTP side of a service: where it listens, its limits, its metrics listener, its logs and its public address. */
export interface ServiceSettings {
  port: number;
  host: string;
  /** pino level (LOG_LEVEL, `info`). */
  logLevel: string;
  /** The base of every link the API returns (PUBLIC_BASE_URL, else http://localhost:<the public port>). */
  publicBaseUrl: string;
  /** Header, idle and total timeouts and the connection limit (`HTTP_*`). */
  http: HttpLimits;
  /** Where /metrics is served (METRICS_PORT, METRICS_HOST); undefined: on no separate listener. */
  metrics: MetricsListen | undefined;
}

export interface ServiceOptions {
  /** The service's own port: the default of PORT (each service has its own, README: the services). */
  port: number;
  /**
   * Whose port the public address falls back on: `own` for the edge and `npm start` (they are the
   * public port), `edge` (GATEWAY_PORT) for a service behind the edge.
   */
  publicPort: 'own' | 'edge';
}

const LOGGING_VARS = {
  /** pino level; logs are JSON lines on stdout. */
  LOG_LEVEL: stringVar('info'),
};

/** LOG_LEVEL alone (`npm start`'s supervisor). */
export const logging = () => concern(LOGGING_VARS, (v) => v.LOG_LEVEL);

/** PORT, HOST, LOG_LEVEL, PUBLIC_BASE_URL, GATEWAY_PORT, METRICS_* and the HTTP_* limits (libs/http HTTP_VARS). */
export const service = (options: ServiceOptions) => concern({
  ...HTTP_VARS,
  PORT: intVar(options.port, 0),
  ...LOGGING_VARS,
  HOST: stringVar('0.0.0.0'),
  PUBLIC_BASE_URL: optionalVar(),
  /** The public port (the edge's), for the public address of a service behind it. */
  GATEWAY_PORT: intVar(8080),
}, (v, env): ServiceSettings => ({
  port: v.PORT,
  host: v.HOST,
  logLevel: v.LOG_LEVEL,
  publicBaseUrl: publicBaseUrlOf({ PUBLIC_BASE_URL: v.PUBLIC_BASE_URL }, options.publicPort === 'own' ? v.PORT : v.GATEWAY_PORT),
  http: httpLimitsOf(env),
  metrics: metricsListenOf(env, v.PORT),
}), {
  // Lower where the open-file limit is (defaultMaxConnections); the README gives both.
  HTTP_MAX_CONNECTIONS: MAX_CONNECTIONS_CAP,
});
