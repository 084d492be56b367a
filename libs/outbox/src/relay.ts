import { MongoServerError } from 'mongodb';
import type { Db } from 'mongodb';
import { backoffMs, makeWakeableSleep, sleep, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import type { EventPublisher } from '@docshare/event-bus';
import { mongoOutbox } from '@docshare/event-store/mongo';
import { makeLease } from './lease.ts';

/*
 * The outbox relay: puts every event of the MongoDB event store on the bus, at least once, in
 * global (so per-stream) order. The events ARE the outbox: `events` is written before a command
 * is acknowledged, so whatever was acknowledged is in the log; the relay walks the log from its
 * checkpoint (`outbox_checkpoints`, the position of the last event the bus has durably accepted):
 *
 *   hold the lease → read whole appends after the checkpoint → publish → advance the checkpoint
 *
 * A failed publish is retried with backoff, never skipped. A relay that dies between a publish and
 * its checkpoint publishes that batch again after the restart (or its successor does): consumers
 * see an event twice, which idempotent projections absorb. The checkpoint never moves backwards.
 *
 * One relay of many replicas publishes at a time (lease.ts); the others stand by and take over
 * when its lease lapses or is released. Even two relays publishing at once (a stalled holder) keep
 * each stream's order as consumers see it: each publishes a prefix of the log in order, so the
 * first copy of every event comes after the first copy of the event before it.
 */

const CHECKPOINTS = 'outbox_checkpoints';

interface CheckpointDoc {
  _id: string;
  position: number;
  owner: string;
  updatedAt: Date;
}

/** The little of a logger the relay uses (pino's Logger fits). */
export interface RelayLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface OutboxRelayOptions {
  db: Db;
  publisher: EventPublisher;
  logger: RelayLogger;
  /**
   * This relay's identity for the lease: unique among live processes, and the same for a restart
   * of one instance (e.g. `${hostname()}:${port}` or an INSTANCE_ID), so a restarted relay takes
   * its own term back at once instead of waiting for it to lapse.
   */
  owner: string;
  /** Events per publish, about (whole appends; default 256). */
  batchSize?: number;
  /**
   * Poll interval when the log has nothing new and nobody called notify (default 50), doubling
   * while the log stays quiet up to idleMaxMs (default 200): how late, at most, a quiet relay sees
   * an append of another replica (its own replica's appends notify it at once).
   */
  idleMs?: number;
  idleMaxMs?: number;
  /**
   * The durable checkpoint is written at most this often while events flow (default 1000), and
   * once the log is quiet: a relay that dies publishes again what it published since (consumers
   * absorb repeats), instead of one checkpoint write per publish.
   */
  checkpointEveryMs?: number;
  /** Lease length; a standby checks for a lapsed lease every leaseMs/4 (default 10000). */
  leaseMs?: number;
  /**
   * Backoff after a failure: from retryMinMs, doubling, up to retryMaxMs (defaults 100, 2000): the
   * most a relay waits after its database or Kafka came back before it tries again.
   */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Names the lease and the checkpoint: relays of one name share them (default 'outbox'). */
  name?: string;
}

export interface OutboxRelay {
  /** Wakes an idle relay now (call it after an append: low latency without a hot poll). */
  notify(): void;
  /** Finishes the batch in hand (publish and checkpoint), then stops and releases the lease. */
  stop(): Promise<void>;
  /**
   * Events in the log not yet known to be published: after what this relay has published while it
   * leads, else after the durable checkpoint.
   */
  lag(): Promise<number>;
  /**
   * The backlog: `events` as `lag()`, and `oldestAgeMs`, how long ago the oldest of them was
   * stored (0 when there is none).
   */
  backlog(): Promise<{ events: number; oldestAgeMs: number }>;
  /**
   * The error of this relay's last attempt to publish or to reach the database, or null when the
   * last attempt worked (a standby that has nothing to do reports null).
   */
  lastError(): unknown;
  /** Whether this relay held the lease at its last check. */
  isLeader(): boolean;
  /** Events this relay has published (a repeat after a failure counts again). */
  publishedCount(): number;
}

/** Starts the relay loop; it runs until `stop`. */
export function startOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const { db, publisher, logger, owner } = options;
  const batchSize = options.batchSize ?? 256;
  const idleMs = options.idleMs ?? 50;
  const idleMaxMs = Math.max(idleMs, options.idleMaxMs ?? 200);
  const checkpointEveryMs = options.checkpointEveryMs ?? 1_000;
  const leaseMs = options.leaseMs ?? 10_000;
  const retryMinMs = options.retryMinMs ?? 100;
  const retryMaxMs = options.retryMaxMs ?? 2_000;
  const name = options.name ?? 'outbox';
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new Error(`batchSize must be a positive integer, got ${batchSize}`);

  const outbox = mongoOutbox(db);
  const checkpoints = db.collection<CheckpointDoc>(CHECKPOINTS);
  const lease = makeLease({ db, name: `outbox-relay:${name}`, owner, leaseMs });

  const loadCheckpoint = async (): Promise<number> => (await checkpoints.findOne({ _id: name }))?.position ?? 0;

  /** Moves the durable checkpoint forward to `position` (never back: a stale relay's write is dropped). */
  const saveCheckpoint = async (position: number): Promise<void> => {
    try {
      await checkpoints.updateOne(
        { _id: name, position: { $lt: position } },
        { $set: { position, owner, updatedAt: new Date() } },
        { upsert: true },
      );
    } catch (error) {
      // The checkpoint is already at or past `position`.
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
    }
  };

  let stopping = false;
  // notify() wakes the idle waits (or the next one); stop() ends every wait.
  const notified = makeWakeableSleep();
  const halt = new AbortController();
  let publishedEvents = 0;
  /** Where this relay, as leader, has published up to; null when it must be (re)read. */
  let checkpoint: number | null = null;
  /** Published but not yet saved (not yet due, or the save failed). */
  let unsaved = false;
  /** When the checkpoint was last saved (performance.now()). */
  let savedAt = -Infinity;
  /** Consecutive polls that found nothing (the idle backoff). */
  let quiet = 0;

  const save = async (position: number): Promise<void> => {
    await saveCheckpoint(position);
    unsaved = false;
    savedAt = performance.now();
  };

  /** Waits `ms`, or less when stopped (or notified, if `notifiable`). */
  const pause = (ms: number, notifiable: boolean): Promise<void> => {
    if (stopping) return Promise.resolve();
    return notifiable ? notified.sleep(ms) : sleep(ms, halt.signal);
  };

  const backoff = (failures: number): number => backoffMs(failures, retryMinMs, retryMaxMs);
  let failure: unknown = null;

  const run = async (): Promise<void> => {
    let failures = 0;
    while (!stopping) {
      try {
        if (!(await lease.hold())) {
          // The database answers; a standby has nothing else to fail at.
          failures = 0;
          failure = null;
          if (checkpoint !== null) logger.info({ owner }, 'outbox relay lost the lease; standing by');
          // The next leader carries on from the durable checkpoint (re-publishing what this one did not save).
          checkpoint = null;
          unsaved = false;
          await pause(Math.max(idleMs, leaseMs / 4), false);
          continue;
        }
        if (checkpoint === null) {
          checkpoint = await loadCheckpoint();
          logger.info({ owner, checkpoint }, 'outbox relay holds the lease; publishing');
        }
        const records: StoredEvent<CloudEvent>[] = await outbox.readAfter(checkpoint, batchSize);
        if (records.length === 0) {
          // Everything read is published: whatever failed before has passed.
          failures = 0;
          failure = null;
          if (unsaved && performance.now() - savedAt >= checkpointEveryMs) await save(checkpoint);
          quiet++;
          await pause(Math.min(idleMaxMs, idleMs * 2 ** Math.min(quiet - 1, 16)), true);
          continue;
        }
        quiet = 0;
        // A slow bus must not let the lease lapse mid-publish (a standby would publish the same batch).
        const keepAlive = setInterval(() => void lease.hold().catch(() => {}), leaseMs / 3);
        try {
          await publisher.publish(records);
        } catch (error) {
          failures++;
          failure = error;
          logger.warn(
            { err: error, failures, from: records[0]?.position, count: records.length },
            'outbox relay could not publish; retrying the same events',
          );
          await pause(backoff(failures), false);
          continue;
        } finally {
          clearInterval(keepAlive);
        }
        failures = 0;
        failure = null;
        publishedEvents += records.length;
        checkpoint = records.at(-1)!.position;
        unsaved = true;
        if (performance.now() - savedAt >= checkpointEveryMs) await save(checkpoint);
        // A short read took everything there was: unless notified since, the next read would find
        // nothing, so wait as on an empty one (the first step of the idle backoff).
        if (records.length < batchSize) await pause(idleMs, true);
      } catch (error) {
        // The database (lease, log or checkpoint): back off and carry on from the checkpoint in hand.
        failures++;
        failure = error;
        logger.error({ err: error, failures }, 'outbox relay failed; retrying');
        await pause(backoff(failures), false);
      }
    }
    if (checkpoint !== null && unsaved) await saveCheckpoint(checkpoint).catch(() => {});
    await lease.release().catch((error: unknown) => logger.warn({ err: error }, 'outbox relay could not release its lease'));
  };

  const running = run();
  /** Where publishing has got to: this leader's position (no read), else the durable checkpoint. */
  const published = async (): Promise<number> => (checkpoint !== null && lease.held() ? checkpoint : loadCheckpoint());

  return {
    notify() {
      notified.wake();
    },
    async stop() {
      stopping = true;
      halt.abort();
      notified.wake();
      await running;
    },
    async lag() {
      const [last, durable] = await Promise.all([outbox.lastPosition(), published()]);
      return Math.max(0, last - durable);
    },
    async backlog() {
      const durable = await published();
      const [last, oldest] = await Promise.all([outbox.lastPosition(), outbox.appendedAfter(durable)]);
      return { events: Math.max(0, last - durable), oldestAgeMs: oldest ? Math.max(0, Date.now() - oldest.getTime()) : 0 };
    },
    lastError: () => failure,
    isLeader: () => lease.held(),
    publishedCount: () => publishedEvents,
  };
}
