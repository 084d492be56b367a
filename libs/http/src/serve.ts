import { createServer, type RequestListener, type Server } from 'node:http';
import type { Logger } from 'pino';

/** Starts an HTTP server and resolves once it listens; returns it and the bound port. */
export const listen = async (handler: RequestListener, port: number, host: string): Promise<{ server: Server; port: number }> => {
  // No total request timeout (large uploads and downloads take long), but a connection idle for
  // two minutes (a stalled client trickling nothing) is closed.
  const server = createServer({ requestTimeout: 0 }, handler);
  server.keepAliveTimeout = 65_000;
  server.timeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : port };
};

/**
 * Stops accepting connections and resolves once in-flight requests have finished. Keep-alive
 * connections (the gateway's pool to every service) are closed as soon as they fall idle, and
 * whatever is still open after `drainMs` is closed outright.
 */
export const closeServer = (server: Server, drainMs = 10_000): Promise<void> => new Promise((resolve) => {
  const sweep = setInterval(() => server.closeIdleConnections(), 100);
  const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
  server.close(() => {
    clearInterval(sweep);
    clearTimeout(deadline);
    resolve();
  });
  server.closeIdleConnections();
});

/** Express `trust proxy` from an environment value: `true`/`false`, a hop count, or addresses/subnets. */
export const trustProxyOf = (raw: string | undefined): boolean | number | string | undefined => {
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  return /^\d+$/.test(raw) ? Number(raw) : raw;
};

/**
 * Graceful SIGTERM/SIGINT: runs `steps` in order (stop accepting, finish in-flight work, commit
 * offsets, close clients), then exits 0; exits 1 if they take longer than `graceMs`.
 */
export const exitGracefully = (logger: Logger, steps: (() => Promise<void>)[], graceMs = 20_000): void => {
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, graceMs).unref();
    void (async () => {
      for (const step of steps) {
        try {
          await step();
        } catch (err) {
          logger.error({ err }, 'shutdown step failed');
        }
      }
      logger.info('stopped');
      process.exit(0);
    })();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
};

/** Reads configuration from an environment object: the one place each service's main calls. */
export const envReader = (env: NodeJS.ProcessEnv) => ({
  string: (name: string, fallback?: string): string => {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
    if (fallback !== undefined) return fallback;
    throw new Error(`${name} is required`);
  },
  optional: (name: string): string | undefined => (env[name] === '' ? undefined : env[name]),
  int: (name: string, fallback: number, min = 0): number => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
    return value;
  },
});

/** `PUBLIC_BASE_URL` (decisions §13), defaulting to `http://localhost:<port>`, without a trailing slash. */
export const publicBaseUrlOf = (env: NodeJS.ProcessEnv, port: number): string =>
  (env.PUBLIC_BASE_URL || `http://localhost:${port}`).replace(/\/+$/, '');
