/**
 * The blob garbage sweeper. An upload stores its bytes first and records `docs.file.uploaded.v1`
 * second, so a crash (or a refused append whose cleanup failed) between the two leaves a blob no
 * event refers to; so does a deletion whose blob removal failed. Such garbage is never data loss,
 * but it would pile up for ever: the sweeper removes blobs that no active file records, once they
 * are older than a grace period.
 *
 * Safe with several docs-command replicas and with uploads in flight:
 * - a blob is judged by its own file only (key `f<fileId>-<uuid>`): one read of that file's
 *   stream, never a scan of the log; keys of any other shape are left alone;
 * - an upload's blob is younger than the grace period until long after its event is recorded,
 *   so the sweeper never sees it as unreferenced;
 * - removal is idempotent: two replicas sweeping the same orphan both succeed.
 */
import type { BlobStore } from '@docshare/blob-store';
import { streamIds } from '@docshare/contracts';
import type { EventStore } from '@docshare/event-store';
import type { Logger } from '@docshare/http';
import type { FileState } from './domain/file.ts';
import { foldStream } from './command-handler.ts';
import { fileDecider } from './context.ts';

/** What the command side names blobs: `f<fileId>-<uuid v4>` (commands.ts). */
const BLOB_KEY = /^f([1-9]\d{0,15})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The file id a blob key belongs to, or null for a key the sweeper must not touch. */
export const fileIdOfBlobKey = (key: string): number | null => {
  const match = BLOB_KEY.exec(key);
  const id = match ? Number(match[1]) : NaN;
  return Number.isSafeInteger(id) ? id : null;
};

/** The file's state folded from its own stream. */
export const fileStateFrom = (events: EventStore) => (fileId: number): Promise<FileState> => foldStream(events, fileDecider, streamIds.file(fileId));

export interface BlobSweepDeps {
  blobs: BlobStore;
  /** The current state of a file (from its stream). */
  fileState: (fileId: number) => Promise<FileState>;
  logger: Logger;
  /** Blobs written less than this long ago are never removed. */
  graceMs: number;
  now?: () => Date;
}

export interface SweepResult {
  /** Blobs old enough to be judged. */
  examined: number;
  removed: number;
}

/** Whether the file records exactly this blob as its bytes. */
const references = (state: FileState, key: string): boolean => state.status === 'active' && state.file.blobKey === key;

/** One pass over the blob store: removes every unreferenced blob older than the grace period. */
export const sweepBlobs = async (deps: BlobSweepDeps): Promise<SweepResult> => {
  const cutoff = (deps.now?.() ?? new Date()).getTime() - deps.graceMs;
  let examined = 0;
  let removed = 0;
  for await (const { key, lastModified } of deps.blobs.list()) {
    if (lastModified.getTime() > cutoff) continue;
    const fileId = fileIdOfBlobKey(key);
    if (fileId === null) continue;
    examined++;
    const state = await deps.fileState(fileId);
    if (references(state, key)) continue;
    await deps.blobs.remove(key);
    removed++;
    deps.logger.info({ blobKey: key, fileId, file: state.status, lastModified: lastModified.toISOString() }, 'unreferenced blob removed');
  }
  return { examined, removed };
};

export interface BlobSweeperOptions extends BlobSweepDeps {
  /** Time between the end of one pass and the start of the next; 0 turns the sweeper off. */
  intervalMs: number;
  /** Delay of the first pass after start (default: the interval, at most a minute). */
  firstRunMs?: number;
  /** Hears how many blobs each pass removed (a metric). */
  onSwept?: (result: SweepResult) => void;
}

export interface BlobSweeper {
  /** Runs one pass now (waits for one already running). */
  runOnce(): Promise<SweepResult>;
  /** No more passes; resolves once a pass in progress has ended. */
  stop(): Promise<void>;
}

/** A pass run every so often by `startPeriodic`. */
export interface PeriodicOptions<R> {
  /** What the log calls it (`<name> done`, `<name> failed`). */
  name: string;
  pass: () => Promise<R>;
  logger: Logger;
  /** Time between the end of one pass and the start of the next; 0 turns it off. */
  intervalMs: number;
  /** Delay of the first pass after start (default: the interval, at most a minute). */
  firstRunMs?: number;
  /** Hears each pass's result (metrics). */
  onDone?: (result: R) => void;
}

/**
 * Runs `pass` every `intervalMs`, the first time shortly after start. A failed pass (the event
 * store or the blob store down) is logged and retried at the next interval; passes never overlap.
 */
export const startPeriodic = <R extends object>(options: PeriodicOptions<R>): { runOnce(): Promise<R>; stop(): Promise<void> } => {
  const { logger, intervalMs, name } = options;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<R> | undefined;
  let stopped = intervalMs === 0;

  const runOnce = (): Promise<R> => {
    running ??= (async () => {
      const started = performance.now();
      try {
        const result = await options.pass();
        options.onDone?.(result);
        logger.info({ ...(result as Record<string, unknown>), ms: Math.round(performance.now() - started) }, `${name} done`);
        return result;
      } finally {
        running = undefined;
      }
    })();
    return running;
  };

  const schedule = (delayMs: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      void runOnce()
        .catch((err: unknown) => logger.warn({ err }, `${name} failed; retrying at the next interval`))
        .finally(() => schedule(intervalMs));
    }, delayMs);
    // A pending pass never keeps the process alive.
    timer.unref();
  };
  schedule(options.firstRunMs ?? Math.min(intervalMs, 60_000));

  return {
    runOnce,
    stop: async () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
};

/** Sweeps blobs every `intervalMs` (startPeriodic). */
export const startBlobSweeper = (options: BlobSweeperOptions): BlobSweeper => startPeriodic({
  name: 'blob sweep', pass: () => sweepBlobs(options), logger: options.logger, intervalMs: options.intervalMs,
  ...(options.firstRunMs === undefined ? {} : { firstRunMs: options.firstRunMs }),
  ...(options.onSwept ? { onDone: options.onSwept } : {}),
});
