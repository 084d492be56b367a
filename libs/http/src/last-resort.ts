import type { Logger } from 'pino';

export interface LastResortOptions {
  /** Extra fields for the fatal log line: what the process was doing (its own view of it). */
  context?: () => Record<string, unknown>;
  /**
   * Upper bound from the fatal error to the exit (default 20 s, the graceful exit's own bound).
   * A process whose state is unknown must not linger longer than a normal shutdown would.
   */
  graceMs?: number;
}

type Origin = 'uncaughtException' | 'unhandledRejection';

/** Counts of the handles and requests keeping the process alive (sockets, timers, file reads...). */
const activeResources = (): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
};

/**
 * The last line of defence: an error nothing caught (an `uncaughtException`, or an
 * `unhandledRejection`, which Node would also turn into a crash) is logged at `fatal` with the
 * error and what the process was doing, and the process then leaves through its graceful exit,
 * the same steps as SIGTERM (stop accepting, finish what is in flight, close), with exit code 1.
 * A supervisor (npm start's, npm run stack's, an orchestrator) then restarts it.
 *
 * Why not stay up: after an uncaught error the process's state is unknown (a half-applied
 * change, a stream without an error listener, a lock never released), so carrying on risks
 * serving wrong answers for ever. Why not die at once: the other requests in flight are healthy
 * and have a client waiting; draining them costs at most the grace period.
 *
 * The graceful exit is whatever listens to SIGTERM (`exitGracefully`): it is run by emitting
 * SIGTERM in process, and the exit code is forced to 1 whatever it exits with. Before any
 * SIGTERM listener exists (the service is still starting, nothing to drain) the process exits
 * at once; when a shutdown is already under way it is left to finish, still bounded by
 * `graceMs`. Install it first thing in a main, before anything can fail.
 */
export const installLastResort = (logger: Logger, options: LastResortOptions = {}): void => {
  const graceMs = options.graceMs ?? 20_000;
  let sawGracefulExit = false;
  let fatal = false;
  // exitGracefully registers its SIGTERM listener with `once`: seen once and gone later means a
  // shutdown has begun (the listener is removed as it runs).
  const watch = (event: string | symbol): void => {
    if (event === 'SIGTERM') sawGracefulExit = true;
  };
  process.on('newListener', watch);
  if (process.listenerCount('SIGTERM') > 0) sawGracefulExit = true;

  const onFatal = (origin: Origin, err: unknown): void => {
    if (fatal) {
      logger.fatal({ err, origin }, 'another uncaught error while exiting');
      return;
    }
    fatal = true;
    const listening = process.listenerCount('SIGTERM') > 0;
    const phase = listening ? 'running' : sawGracefulExit ? 'stopping' : 'starting';
    let extra: Record<string, unknown> = {};
    try {
      extra = options.context?.() ?? {};
    } catch (contextErr) {
      extra = { contextError: String(contextErr) };
    }
    logger.fatal({
      err, origin, phase, pid: process.pid, uptimeSeconds: Math.round(process.uptime()),
      activeResources: activeResources(), ...extra,
    }, `${origin}: exiting through the graceful shutdown`);
    // Whatever the graceful path exits with, this process failed.
    process.exitCode = 1;
    process.on('exit', () => {
      process.exitCode = 1;
    });
    setTimeout(() => {
      logger.fatal({ graceMs }, 'graceful exit after an uncaught error took too long; exiting');
      process.exit(1);
    }, graceMs).unref();
    if (listening) process.emit('SIGTERM', 'SIGTERM');
    else if (phase === 'starting') process.exit(1);
  };

  process.on('uncaughtException', (err) => onFatal('uncaughtException', err));
  process.on('unhandledRejection', (reason) => onFatal('unhandledRejection', reason));
};
