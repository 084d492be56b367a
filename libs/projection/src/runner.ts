import type { CloudEvent, DocshareEvent, EventType, StoredEvent } from '@docshare/contracts';
import type { EventBatch, EventConsumer } from '@docshare/event-bus';
import type { GuardedUpdate, Update } from '@docshare/read-store';
import type { Checkpoints } from '@docshare/consistency';
import { counter, type Logger } from '@docshare/http';
import { consume, deadLetterCounter, type RunningConsumer } from '@docshare/runtime';
import type { Registry } from 'prom-client';

/** One change to one read-model document; applied under the position of the event it comes from. */
export interface ReadOp {
  collection: string;
  id: string;
  update: Update;
}

const KNOWN: ReadonlySet<string> = new Set<EventType>([
  'docs.user.registered.v1', 'docs.category.created.v1', 'docs.file.uploaded.v1', 'docs.file.updated.v1',
  'docs.file.deleted.v1', 'docs.file.downloaded.v1', 'docs.file.viewed.v1', 'docs.file.purchased.v1',
  'docs.comment.posted.v1', 'docs.file.content-extracted.v1', 'docs.file.content-extraction-failed.v1',
  'docs.file.viewed.v2', 'docs.file.downloaded.v2',
  // The account's erasure and export: the files projector redacts on `erased`; the requests reach every handler, which ignore them.
  'docs.user.erasure_requested.v1', 'docs.user.erased.v1', 'docs.user.export_requested.v1',
]);

/** The event as a known docshare event, or null for types this version does not know (skipped, never fatal). */
export const known = (event: CloudEvent): DocshareEvent | null =>
  KNOWN.has(event.type) && typeof event.subject === 'string' && Number.isSafeInteger(event.streamversion)
    ? (event as DocshareEvent)
    : null;

/** A read model's handler: applies a batch of events (idempotently: a batch may come again). */
export type BatchApply = (records: readonly StoredEvent<CloudEvent>[]) => Promise<void>;

/** The ops of `record` under its position (the store's per-document guard). */
export const guarded = (record: StoredEvent<CloudEvent>, ops: readonly ReadOp[]): GuardedUpdate[] =>
  ops.map((op) => ({ ...op, position: record.position }));

/**
 * The batch handler of a projector group: applies the batch to the read model, then records the
 * group's checkpoint for the batch's partition (what consistency tokens wait on).
 *
 * The checkpoint is recorded after the apply and not waited for: the store writes the records of
 * every partition and group of the process together (makeMongoCheckpoints), which it could not if
 * each batch held its partition until its own write. The bus's offsets, not the checkpoints, say
 * where a restarted projector resumes, so a checkpoint lost in a crash costs no event: it only
 * holds a consistency token until the partition's next batch or watermark records a later one.
 */
export const projectBatches = (apply: BatchApply, checkpoints: Checkpoints, group: string) =>
  async (batch: EventBatch): Promise<void> => {
    if (batch.records.length > 0) await apply(batch.records);
    // A failed write is retried by the store with what comes after it.
    checkpoints.record(group, batch.partition, batch.through).catch(() => {});
  };

/** The runner's counters in `registry` (registered once; a service registers them before its consumer joins). */
export const projectorMetrics = (registry: Registry) => ({
  projected: counter(registry, 'docshare_events_projected_total', 'Events applied to the read model', ['type']),
  deadLetters: deadLetterCounter(registry),
});

export interface ProjectorRun {
  /** Where the events come from: the Kafka bus's consumer, or the embedded log bus. */
  consumer: EventConsumer;
  /** Consumer group, and the group its checkpoints are recorded under. */
  group: string;
  /** Applies a batch to the read model (the projector module's handler, fenced by generation in distributed mode). */
  apply: BatchApply;
  checkpoints: Checkpoints;
  logger: Logger;
  /** Where `docshare_events_projected_total` and `docshare_dead_letters_total` are counted. */
  registry: Registry;
}

/**
 * THE projector runner, in both modes (the distributed service, startProjectorService, and
 * embedded mode): subscribes `group`, applies each batch (transient failures retried in place,
 * @docshare/runtime's `consume`), records the group's checkpoint, and counts the events applied
 * (`docshare_events_projected_total{type}`) and those given up on (`docshare_dead_letters_total{group}`).
 */
export const runProjector = (run: ProjectorRun): Promise<RunningConsumer> => {
  const { projected, deadLetters } = projectorMetrics(run.registry);
  const project = projectBatches(run.apply, run.checkpoints, run.group);
  const handle = async (batch: EventBatch): Promise<void> => {
    await project(batch);
    for (const { event } of batch.records) projected.inc({ type: event.type });
    if (batch.records.length > 0) {
      run.logger.debug({
        partition: batch.partition, events: batch.records.length, first: batch.records[0]!.position, through: batch.through,
      }, 'batch projected');
    }
  };
  return consume(run.consumer, run.group, handle, run.logger, () => deadLetters.inc({ group: run.group }));
};
