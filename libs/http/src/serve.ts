import { createServer, type RequestListener, type Server } from 'node:http';
import type { Logger } from 'pino';

/** Starts an HTTP server and resolves once it listens; returns it and the bound port. */
export const listen = async (handler: RequestListener, port: number, host: string): Promise<{ server: Server; port: number }> => {
  const server = createServer({ requestTimeout: 0 }, handler);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : port };
};

/** Stops accepting connections and resolves once in-flight requests have finished. */
export const closeServer = (server: Server): Promise<void> => new Promise((resolve) => {
  server.close(() => resolve());
  server.closeIdleConnections();
});

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
