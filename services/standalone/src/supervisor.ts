/**
 * Keeps one child process running: restarts it when it dies, with exponential backoff, and
 * stops it gracefully on request. Used by `npm start` (services/standalone/src/supervise.ts) and
 * by the distributed stack (infra/stack/services.ts), one supervisor per service.
 */
import type { ChildProcess } from 'node:child_process';
import { backoffMs } from '@docshare/contracts';
import type { Logger } from '@docshare/http';

/**
 * The exit code meaning "bad configuration" (EX_CONFIG of sysexits.h): a restart cannot help, so
 * a supervisor gives up at once and exits with it.
 */
export { CONFIG_ERROR_EXIT_CODE } from '@docshare/http';

export interface RestartPolicy {
  /** Delay before the first restart; doubles with each restart in a row. */
  initialDelayMs: number;
  /** Largest delay between restarts. */
  maxDelayMs: number;
  /** A child that ran this long resets the delay to `initialDelayMs` when it dies. */
  stableMs: number;
  /**
   * Give up after this many deaths in a row of children that never became ready (Infinity:
   * never). A child that cannot even start (a port taken, a data dir in use) would otherwise
   * restart for ever, hiding the cause in a stream of restarts.
   */
  maxStartFailures: number;
  /** Exit codes that end supervision at once (a configuration error). */
  giveUpOnExitCodes: readonly number[];
}

/** Delay before the restart that follows `restartsInARow` earlier ones. */
export const restartDelayMs = (policy: RestartPolicy, restartsInARow: number): number =>
  backoffMs(restartsInARow + 1, policy.initialDelayMs, policy.maxDelayMs);

export interface SuperviseOptions {
  /** Name of the supervised service, in every log line. */
  name: string;
  /** Where the supervisor logs (JSON lines). */
  logger: Logger;
  /** Starts one child. */
  spawn: () => ChildProcess;
  /** Hears each new child as it starts (its pid file, its output). */
  onStart?: (child: ChildProcess) => void;
  /**
   * Resolves once a child is ready to serve (for start-failure counting); never settling means
   * "not ready yet". Without it every child counts as ready at once.
   */
  readiness?: (child: ChildProcess) => Promise<void>;
  policy: RestartPolicy;
  /** Clock, for tests. */
  now?: () => number;
}

export interface SupervisionEnd {
  /** The last child's exit. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when supervision ended because the child kept failing (or reported a config error). */
  gaveUp: boolean;
}

export interface Supervised {
  /** The running child, if one runs now (none while waiting to restart). */
  current(): ChildProcess | undefined;
  /** How many times the child was restarted. */
  restarts(): number;
  /** Settles when supervision ends: after `stop`, or when it gave up. */
  readonly ended: Promise<SupervisionEnd>;
  /**
   * Stops supervising: no more restarts; sends `signal` to the running child and waits for it to
   * exit, with SIGKILL after `graceMs`.
   */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<SupervisionEnd>;
}

const alive = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

/** Starts the child now and keeps it running until `stop` or until the policy gives up. */
export const supervise = (options: SuperviseOptions): Supervised => {
  const { name, logger, policy } = options;
  const now = options.now ?? (() => performance.now());
  let child: ChildProcess | undefined;
  let startedAt = 0;
  let ready = false;
  let restartsInARow = 0;
  let startFailures = 0;
  let restarts = 0;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let finish!: (end: SupervisionEnd) => void;
  const ended = new Promise<SupervisionEnd>((resolve) => { finish = resolve; });
  let last: SupervisionEnd = { code: null, signal: null, gaveUp: false };

  const start = (): void => {
    timer = undefined;
    const started = options.spawn();
    child = started;
    startedAt = now();
    ready = options.readiness === undefined;
    let exitSeen = false;
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (exitSeen) return;
      exitSeen = true;
      exited(started, code, signal);
    };
    started.once('exit', onExit);
    // A child that could not be spawned at all emits 'error' and no 'exit'.
    started.once('error', (err) => {
      if (started.pid === undefined) {
        logger.error({ err, component: 'supervisor' }, `${name} could not be started`);
        onExit(null, null);
      }
    });
    options.readiness?.(started).then(() => {
      if (child !== started || !alive(started)) return;
      ready = true;
      startFailures = 0;
    }, () => undefined);
    options.onStart?.(started);
  };

  const exited = (which: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void => {
    if (which !== child) return;
    child = undefined;
    last = { code, signal, gaveUp: false };
    if (stopping) {
      finish(last);
      return;
    }
    const upMs = Math.round(now() - startedAt);
    if (upMs >= policy.stableMs) restartsInARow = 0;
    if (!ready) startFailures++;
    const facts = { component: 'supervisor', pid: which.pid, exitCode: code, signal, upMs, ready };
    if (code !== null && policy.giveUpOnExitCodes.includes(code)) {
      logger.fatal(facts, `${name} exited with code ${code} (configuration error); not restarting`);
      finish({ ...last, gaveUp: true });
      return;
    }
    if (startFailures >= policy.maxStartFailures) {
      logger.fatal({ ...facts, startFailures }, `${name} died ${startFailures} times in a row before it was ready; not restarting`);
      finish({ ...last, gaveUp: true });
      return;
    }
    const delay = restartDelayMs(policy, restartsInARow);
    restartsInARow++;
    restarts++;
    logger.error({ ...facts, restartInMs: delay, restarts }, `${name} exited (${code ?? signal}); restarting in ${delay} ms`);
    timer = setTimeout(start, delay);
  };

  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 30_000): Promise<SupervisionEnd> => {
    if (!stopping) {
      stopping = true;
      if (timer !== undefined) clearTimeout(timer);
      const running = child;
      if (running === undefined || !alive(running)) {
        finish(last);
      } else {
        running.kill(signal);
        const killer = setTimeout(() => {
          logger.error({ component: 'supervisor', pid: running.pid, graceMs }, `${name} did not stop in time; killing it`);
          running.kill('SIGKILL');
        }, graceMs);
        void ended.then(() => clearTimeout(killer));
      }
    }
    return ended;
  };

  start();
  return { current: () => child, restarts: () => restarts, ended, stop };
};
