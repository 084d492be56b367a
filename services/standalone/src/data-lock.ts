import { lockForProcess } from '@docshare/durable-log';

/**
 * Makes this process the only one using a data dir: two writers on one event log would corrupt it.
 * A lock left by a process that died (kill -9) is taken over (durable-log's process lock).
 * Returns the release function.
 */
export const lockDataDir = (path: string): Promise<() => Promise<void>> =>
  lockForProcess(path, (holder) => new Error(`data dir is in use by process ${holder} (${path}); stop it or use another DATA_DIR`));
