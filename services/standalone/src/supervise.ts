/**
 * `npm start`: runs the embedded server (main.ts) as a child process and restarts it when it
 * dies, so one crash is a short gap instead of an API that stays down.
 *
 * - A restart waits SUPERVISOR_BACKOFF_MS (250) doubled per restart in a row, at most
 *   SUPERVISOR_BACKOFF_MAX_MS (30 000); a child that ran SUPERVISOR_STABLE_MS (60 000) resets it.
 *   Each restart is a JSON log line (service, pid, exit code or signal, restart in N ms).
 * - A child that exits with 78 (configuration error, e.g. `PORT=abc`) is not restarted, nor one
 *   that died SUPERVISOR_MAX_START_FAILURES (5) times in a row before it was ready (e.g. its port
 *   is taken): the supervisor exits with the child's code.
 * - SIGTERM or SIGINT stops it: the child gets SIGTERM (with Ctrl-C it got SIGINT from the
 *   terminal already, and a second SIGINT would find no handler left and kill it mid-drain), the
 *   supervisor waits for its graceful exit and exits with its code, never restarting meanwhile.
 *   Under npm, a signal to npm's own pid stops it too (npm start execs it: see below).
 * The child tells it is ready over the IPC channel (main.ts sends `{ type: 'ready' }`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { makeLogger } from '@docshare/http';
import { loadConfigOrExit, logging, supervisor } from '@docshare/runtime/config';
import { CONFIG_ERROR_EXIT_CODE, supervise } from './supervisor.ts';

const NAME = 'docshare';
const MAIN = join(import.meta.dirname, 'main.ts');

/** The supervisor's own variables (libs/runtime config/embedded.ts), read once. */
const settings = loadConfigOrExit(process.env, { logLevel: logging(), policy: supervisor() }, (message) =>
  makeLogger(NAME).fatal({ component: 'supervisor' }, `bad supervisor configuration: ${message}`));
const logger = makeLogger(NAME, settings.logLevel);
const policy = { ...settings.policy, giveUpOnExitCodes: [CONFIG_ERROR_EXIT_CODE] };

/** Resolves when the child says it listens. */
const readiness = (child: ChildProcess): Promise<void> => new Promise((resolve) => {
  child.on('message', (message: unknown) => {
    if (typeof message === 'object' && message !== null && (message as { type?: unknown }).type === 'ready') resolve();
  });
});

const supervised = supervise({
  name: NAME,
  logger,
  policy,
  readiness,
  // Same process group as the supervisor: Ctrl-C reaches both, and killing the group kills both.
  spawn: () => spawn(process.execPath, [...process.execArgv, MAIN], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  onStart: (child) => logger.info({ component: 'supervisor', pid: child.pid }, `${NAME} started`),
});

const stop = (reason: NodeJS.Signals | 'parent-exited'): void => {
  logger.info({ component: 'supervisor', reason }, 'stopping');
  // The child's own graceful exit is bounded (15 s); this only guards against a stuck child.
  void supervised.stop('SIGTERM', 30_000);
};
process.once('SIGTERM', () => stop('SIGTERM'));
process.once('SIGINT', () => stop('SIGINT'));
// A second Ctrl-C while draining must not kill the supervisor and orphan the child.
process.on('SIGINT', () => undefined);

// `npm start` runs `exec node ...` (package.json): npm's `sh -c` becomes this process, so the
// SIGTERM or SIGINT a process manager sends to npm's pid, which npm forwards to its child, lands
// here. Without the exec, dash took the signal, died of SIGTERM or sat on SIGINT, and never passed
// it on: the supervisor lived on with the server and its port.

const end = await supervised.ended;
process.exit(end.code ?? (end.signal === null ? 0 : 1));
