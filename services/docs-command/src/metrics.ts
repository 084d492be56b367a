import { Gauge, Histogram, type Registry } from 'prom-client';
import { within, type Logger } from '@docshare/http';
import type { StoredChange } from './commands/recorded.ts';

/*
 * docs-command's own metrics (docs/observability.md): upload sizes, bytes stored, and the outbox.
 */

/** Upload size buckets: 1 KiB to 1 GiB, ×4 each (MAX_UPLOAD_BYTES is 100 MiB by default). */
export const UPLOAD_SIZE_BUCKETS: readonly number[] = Array.from({ length: 11 }, (_, i) => 1024 * 4 ** i);

/** How often the bytes-stored tally is recounted from the storage ledger. */
export const BYTES_STORED_RESYNC_MS = 10 * 60_000;

export interface StorageMetricsOptions {
  /**
   * The bytes every user stores, as the storage ledger counts them (the sum of its users'
   * settled bytes, what the storage quota enforces): one pass over the users' records.
   */
  totalStored: () => Promise<number>;
  logger: Pick<Logger, 'warn'>;
  /** Time between recounts (default BYTES_STORED_RESYNC_MS); the first is at start. */
  resyncMs?: number;
}

export interface StorageMetrics {
  /** What each recorded upload and deletion changed (DocsCommandsDeps.onStored). */
  recorded(change: StoredChange): void;
  /** Resolves once the tally has been counted from the read model at least once (tests). */
  counted(): Promise<void>;
  /** Stops the recounts. */
  stop(): void;
}

/**
 * `docshare_upload_size_bytes` (histogram of accepted uploads) and `docshare_stored_bytes`
 * (gauge; it falls with deletions, so no counter): the bytes the files not deleted take in the
 * blob store (`docshare_bytes_stored`, deprecated, the same value until 0.3.0). Never found by listing the
 * store: a tally that each upload (+size) and deletion (-size) recorded by this process moves at
 * once, recounted from the storage ledger (Σ users' settled bytes, the storage quota's count)
 * at start and every `resyncMs`. A scrape reads the tally; the recount costs one pass over the
 * users' ledger records (not over files or objects) per interval. With several replicas,
 * each adds its own writes between recounts, and every recount brings it back to the shared count.
 * Orphan blobs (a crash between bytes and event, swept later) are not counted: they are no file's.
 */
export const makeStorageMetrics = (registry: Registry, options: StorageMetricsOptions): StorageMetrics => {
  const uploads = new Histogram({
    name: 'docshare_upload_size_bytes',
    help: 'Sizes of accepted (recorded) uploads, in bytes',
    buckets: [...UPLOAD_SIZE_BUCKETS],
    registers: [registry],
  });
  /** Bytes stored, as far as this process knows; null until first counted. */
  let tally: number | null = null;
  /** What this process recorded since the recount in progress began (added to its result). */
  let sinceRecount = 0;
  new Gauge({
    name: 'docshare_stored_bytes',
    help: 'Bytes the files not deleted take in the blob store: the storage ledger\'s count, recounted periodically and moved by each upload and deletion in between',
    registers: [registry],
    collect() {
      if (tally !== null) this.set(tally);
    },
  });
  // The 0.1 name, the same value: kept through 0.2.x, removed in 0.3.0 (docs/observability.md).
  new Gauge({
    name: 'docshare_bytes_stored',
    help: 'DEPRECATED, removed in 0.3.0: use docshare_stored_bytes (the same value). Bytes the files not deleted take in the blob store',
    registers: [registry],
    collect() {
      if (tally !== null) this.set(tally);
    },
  });
  /** The recount in progress: one at a time. */
  let recounting: Promise<void> | null = null;
  const count = async (): Promise<void> => {
    sinceRecount = 0;
    try {
      const total = await options.totalStored();
      tally = Math.max(0, total + sinceRecount);
    } catch (err) {
      options.logger.warn({ err }, 'could not count the bytes stored; recounted later');
    }
  };
  const recount = (): Promise<void> => {
    recounting ??= count().finally(() => {
      recounting = null;
    });
    return recounting;
  };
  const first = recount();
  const timer = setInterval(() => void recount(), options.resyncMs ?? BYTES_STORED_RESYNC_MS);
  timer.unref();
  return {
    recorded({ kind, bytes }) {
      if (kind === 'upload') uploads.observe(bytes);
      const delta = kind === 'upload' ? bytes : -bytes;
      sinceRecount += delta;
      if (tally !== null) tally = Math.max(0, tally + delta);
    },
    counted: () => first,
    stop: () => clearInterval(timer),
  };
};

/** How long a scrape waits for the outbox's figures before keeping the last ones. */
export const OUTBOX_READ_TIMEOUT_MS = 2_000;

/** What the outbox gauges read (OutboxRelay). */
export interface OutboxBacklogSource {
  backlog(): Promise<{ events: number; oldestAgeMs: number }>;
  isLeader(): boolean;
}

/**
 * `docshare_outbox_backlog_events` and `docshare_outbox_oldest_unpublished_age_seconds` (the
 * relay's lag), read at each scrape: three lookups by id (the relay's checkpoint, the log's end
 * walked on from where the relay last read, the append after the checkpoint), never a scan. And
 * `docshare_outbox_relay_leader`: 1 on the replica whose relay publishes.
 */
export const registerOutboxMetrics = (registry: Registry, relay: OutboxBacklogSource): void => {
  // Both gauges of one scrape share one reading; a frozen MongoDB holds no scrape for more than 2 s.
  let reading: Promise<{ events: number; oldestAgeMs: number }> | null = null;
  const read = (): Promise<{ events: number; oldestAgeMs: number }> => reading ??= within(relay.backlog(), OUTBOX_READ_TIMEOUT_MS).finally(() => {
    reading = null;
  });
  new Gauge({
    name: 'docshare_outbox_backlog_events',
    help: 'Events recorded in the event store and not yet published to the bus',
    registers: [registry],
    async collect() {
      try {
        this.set((await read()).events);
      } catch {
        // MongoDB unreachable or frozen: the last value stays (readiness reports MongoDB).
      }
    },
  });
  new Gauge({
    name: 'docshare_outbox_oldest_unpublished_age_seconds',
    help: 'Age of the oldest event recorded and not yet published (0 when none): the outbox relay\'s lag; read with docshare_outbox_backlog_events',
    registers: [registry],
    async collect() {
      try {
        this.set((await read()).oldestAgeMs / 1000);
      } catch {
        // as above
      }
    },
  });
  new Gauge({
    name: 'docshare_outbox_relay_leader',
    help: '1 when this replica\'s outbox relay holds the lease and publishes, else 0',
    registers: [registry],
    collect() {
      this.set(relay.isLeader() ? 1 : 0);
    },
  });
};
