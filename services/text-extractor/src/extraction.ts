import type { CloudEvent, ExtractionReport, FileUploaded, StoredEvent } from '@docshare/contracts';
import type { BlobStore } from '@docshare/blob-store';
import { detectFormat, makeFairQueue, type ExtractOutcome, type Extractor, type FairQueueOptions, type FairQueueStats } from '@docshare/extract';
import type { Logger } from '@docshare/http';
import { known } from '@docshare/projection';

/**
 * Where the extractor's results go: docs-command, which records them on the file's stream
 * (in process in embedded mode, over HTTP in the distributed one).
 */
export interface ExtractionRecorder {
  /** `pending`: nothing recorded yet; `done`: text or a failure recorded; `gone`: deleted or unknown. */
  status(fileId: number): Promise<'pending' | 'done' | 'gone'>;
  /** `cause`: the upload event, whose id becomes the record's causation id and whose correlation id it keeps. */
  record(fileId: number, blobKey: string, report: ExtractionReport, cause: ExtractionCause): Promise<void>;
}

export interface ExtractionCause { eventId: string; correlationId: string }

export interface ExtractionDeps {
  blobs: Pick<BlobStore, 'get'>;
  extractor: Extractor;
  recorder: ExtractionRecorder;
  logger: Logger;
  /** Files larger than this are not read (EXTRACT_MAX_BYTES): recorded as `too_large`. */
  maxBytes: number;
  /** Files extracted at once: the extractor's pool size (default 1). */
  concurrency?: number;
  /** Most files of one owner taken up ahead of the settled position (EXTRACT_OWNER_BACKLOG; default 100). */
  ownerBacklog?: number;
  /** Demotion of repeat offenders, and the fair queue's clock (tests). */
  fairness?: Pick<FairQueueOptions, 'demoteAfter' | 'strikeWindowMs' | 'now'>;
  /** Told about each outcome (metrics). */
  onOutcome?: (outcome: ExtractOutcome) => void;
}

/** A file's extraction that was abandoned because the extractor is stopping: not done, so not acknowledged. */
export class ExtractionStopped extends Error {
  override readonly name = 'ExtractionStopped';
  constructor() {
    super('the text extractor is stopping');
  }
}

/** Files taken up ahead of the settled position, all owners together: a memory bound (each is an upload event's data). */
export const MAX_TAKEN_AHEAD = 10_000;
/** Status checks (docs-command) in flight at once per batch. */
const STATUS_WIDTH = 16;

/** The report docs-command records for an outcome. */
export const reportOf = (outcome: ExtractOutcome): ExtractionReport => outcome.ok
  ? { ok: true, format: outcome.format, extractor: outcome.extractor, text: outcome.text, truncated: outcome.truncated, language: outcome.language, durationMs: outcome.durationMs }
  : { ok: false, format: outcome.format, reason: outcome.reason, detail: outcome.detail, durationMs: outcome.durationMs };

/** Reads a blob whole, refusing to hold more than `maxBytes` (the event's size is checked first; this guards a lying one). */
const readAll = async (body: NodeJS.ReadableStream & { destroy(): void }, maxBytes: number): Promise<Buffer | null> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    size += buffer.length;
    if (size > maxBytes) {
      body.destroy();
      return null;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, size);
};

interface Upload { file: FileUploaded; cause: ExtractionCause }

/** The uploads among a batch's records, in order. */
const uploadsOf = (records: readonly StoredEvent<CloudEvent>[]): Upload[] => records.flatMap((record) => {
  const event = known(record.event);
  return event?.type === 'docs.file.uploaded.v1' ? [{ file: event.data, cause: { eventId: event.id, correlationId: event.correlationid } }] : [];
});

/** An upload taken up: `queued` once its status is known and it waits for its turn, `done` once it is recorded (or needs nothing). */
interface Taken { ownerId: number; queued: Promise<void>; done: Promise<void> }

/** Outcomes that count against the file's owner: the file held a child for a whole budget. */
const overBudget = (outcome: ExtractOutcome): boolean => !outcome.ok && (outcome.reason === 'timeout' || outcome.reason === 'memory');

export interface ExtractionWorkStats extends FairQueueStats {
  /** Uploads taken up and not yet done (status checks, waiting, running, recording). */
  taken: number;
}

/**
 * The extractor's work. For each `docs.file.uploaded.v1` still pending, it reads the file's bytes
 * from the blob store, extracts their text in the sandbox (libs/extract: a child process with time,
 * memory and size budgets), and records the outcome through docs-command. Every outcome is
 * recorded, failures included; only a dependency that is down (blob store, docs-command) fails.
 *
 * Files wait for the sandbox in a fair queue (libs/extract fair-queue.ts): one line per owner, round
 * robin, repeat offenders demoted. For the queue to see every owner's files at once, the bus is read
 * twice, by two consumer groups with one table of work between them:
 * - `settle` (the group whose position counts, `text-extractor`): takes up every upload of its batch
 *   and resolves once each is done, so its group acknowledges a position only when every upload
 *   up to it is recorded; after a crash or a stop the bus delivers the rest again.
 * - `takeUp` (the intake group, `text-extractor-intake`): takes up the uploads of its batch and
 *   resolves at once, reading ahead of `settle`. An owner with `ownerBacklog` files taken up (or
 *   the table holding MAX_TAKEN_AHEAD) gets no more from it: the rest wait in the log, in order,
 *   for `settle` to reach them, without holding anyone else's up.
 * An upload is taken up once however both groups see it (by file id); a file already done is
 * skipped (status check), and docs-command records one outcome per file whatever comes twice.
 */
export const makeExtractionWork = (deps: ExtractionDeps) => {
  const { blobs, extractor, recorder, logger, maxBytes } = deps;
  const ownerBacklog = Math.max(1, deps.ownerBacklog ?? 100);
  const queue = makeFairQueue({ concurrency: deps.concurrency ?? 1, ...deps.fairness });
  const taken = new Map<number, Taken>();
  const takenPerOwner = new Map<number, number>();
  let closed = false;

  const extractFile = async (file: FileUploaded): Promise<ExtractOutcome | null> => {
    const hint = { contentType: file.contentType, fileName: file.originalFileName };
    if (file.size > maxBytes) {
      return { ok: false, format: detectFormat(hint, new Uint8Array()), reason: 'too_large', detail: `${file.size} bytes, over the limit of ${maxBytes}`, durationMs: 0 };
    }
    const blob = await blobs.get(file.blobKey);
    // Deleted since (its bytes go with it): nothing to record, the status check will say gone.
    if (!blob) return null;
    const bytes = await readAll(blob.body, maxBytes);
    if (!bytes) return { ok: false, format: detectFormat(hint, new Uint8Array()), reason: 'too_large', detail: `over the limit of ${maxBytes} bytes`, durationMs: 0 };
    return extractor.extract(bytes, hint);
  };

  /** One file's turn: its bytes are read only now, so at most `concurrency` files are held in memory. */
  const extractAndRecord = async ({ file, cause }: Upload): Promise<void> => {
    const outcome = await extractFile(file);
    // Cut short by the stop (the sandbox was closed): not done, the next start does it.
    if (closed) throw new ExtractionStopped();
    if (!outcome) return;
    if (overBudget(outcome)) queue.strike(file.ownerId);
    deps.onOutcome?.(outcome);
    const log = { fileId: file.fileId, ownerId: file.ownerId, format: outcome.format, durationMs: outcome.durationMs };
    if (outcome.ok) logger.info({ ...log, characters: outcome.characters, truncated: outcome.truncated }, 'text extracted');
    // Not the detail: a library's message may quote the document (personal data; it is in the event, sealed).
    else logger.info({ ...log, reason: outcome.reason, demoted: queue.demoted(file.ownerId) }, 'text extraction failed');
    await recorder.record(file.fileId, file.blobKey, reportOf(outcome), cause);
  };

  const count = (ownerId: number, by: number): void => {
    const next = (takenPerOwner.get(ownerId) ?? 0) + by;
    if (next > 0) takenPerOwner.set(ownerId, next);
    else takenPerOwner.delete(ownerId);
  };

  /** Takes up an upload (once: a second call returns the first's). Synchronous up to the status check, so the table is exact. */
  const take = (upload: Upload): Taken => {
    const { fileId, ownerId } = upload.file;
    const already = taken.get(fileId);
    if (already) return already;
    let markQueued = (): void => {};
    const entry: Taken = { ownerId, queued: new Promise<void>((resolve) => { markQueued = resolve; }), done: Promise.resolve() };
    taken.set(fileId, entry);
    count(ownerId, 1);
    entry.done = (async () => {
      try {
        let turn: Promise<void> | undefined;
        try {
          if (closed) throw new ExtractionStopped();
          if ((await recorder.status(fileId)) === 'pending') turn = queue.run(ownerId, () => extractAndRecord(upload));
        } finally {
          markQueued();
        }
        await turn;
      } finally {
        taken.delete(fileId);
        count(ownerId, -1);
      }
    })();
    entry.done.catch((error: unknown) => {
      // Whoever waits for it (settle) hears the error too; a file only the intake took up is done again when settle reaches it.
      if (!(error instanceof ExtractionStopped)) logger.warn({ err: error, fileId, ownerId }, 'text extraction could not be recorded; retried');
    });
    return entry;
  };

  /** Takes up `uploads` (those `admit` lets through), a few status checks at a time; resolves once each waits for its turn. */
  const takeAll = async (uploads: readonly Upload[], admit: (upload: Upload) => boolean): Promise<Taken[]> => {
    const all: Taken[] = [];
    for (let i = 0; i < uploads.length; i += STATUS_WIDTH) {
      const some: Taken[] = [];
      // One at a time: each take counts towards the bounds the next admit reads.
      for (const upload of uploads.slice(i, i + STATUS_WIDTH)) if (admit(upload)) some.push(take(upload));
      all.push(...some);
      await Promise.all(some.map((entry) => entry.queued));
    }
    return all;
  };

  return {
    /** The settling group's handler: resolves once every upload in `records` is done (see above). */
    async settle(records: readonly StoredEvent<CloudEvent>[]): Promise<void> {
      const all = await takeAll(uploadsOf(records), () => true);
      await Promise.all(all.map((entry) => entry.done));
    },

    /** The intake group's handler: takes up what the bounds allow and resolves without waiting for the work. */
    async takeUp(records: readonly StoredEvent<CloudEvent>[]): Promise<void> {
      await takeAll(uploadsOf(records), ({ file }) => taken.has(file.fileId)
        || ((takenPerOwner.get(file.ownerId) ?? 0) < ownerBacklog && taken.size < MAX_TAKEN_AHEAD));
    },

    stats: (): ExtractionWorkStats => ({ ...queue.stats(), taken: taken.size }),

    /**
     * Stops: files waiting and files being read are abandoned (ExtractionStopped: never recorded,
     * never acknowledged), the sandbox's children killed. Stop the subscriptions first (so a handler
     * failing now is not redelivered), then call this so they stop without waiting for the files.
     */
    async close(): Promise<void> {
      closed = true;
      queue.close(new ExtractionStopped());
      await extractor.close();
    },
  };
};

export type ExtractionWork = ReturnType<typeof makeExtractionWork>;
