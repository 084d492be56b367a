import type { CloudEvent, ExtractionReport, FileUploaded, StoredEvent } from '@docshare/contracts';
import type { BlobStore } from '@docshare/blob-store';
import { detectFormat, type ExtractOutcome, type Extractor } from '@docshare/extract';
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
  /** Files extracted at once (the extractor's pool size). */
  concurrency?: number;
  /** Told about each outcome (metrics). */
  onOutcome?: (outcome: ExtractOutcome) => void;
}

/** The report docs-command records for an outcome. */
export const reportOf = (outcome: ExtractOutcome): ExtractionReport => outcome.ok
  ? { ok: true, format: outcome.format, extractor: outcome.extractor, text: outcome.text, truncated: outcome.truncated, language: outcome.language, durationMs: outcome.durationMs }
  : { ok: false, format: outcome.format, reason: outcome.reason, detail: outcome.detail, durationMs: outcome.durationMs };

/** Reads a blob whole, refusing to hold more than `maxBytes` (the event's size is checked first; this guards a lying one). */
const readAll = async (body: NodeJS.ReadableStream & { destroy(): void }, maxBytes: number): Promise<Buffer | null> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buffer.length;
    if (size > maxBytes) {
      body.destroy();
      return null;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks, size);
};

/**
 * The extractor's event handler: for each `docs.file.uploaded.v1` still pending, reads the file's
 * bytes from the blob store, extracts its text in the sandbox (a child process with time, memory
 * and size budgets: libs/extract), and records the outcome through docs-command. Every outcome is
 * recorded, failures included; only a dependency that is down (blob store, docs-command) fails
 * the batch, which is then retried. At least once: the status check skips files already done,
 * and docs-command records one report per file whatever comes twice.
 */
export const extractionHandler = (deps: ExtractionDeps) => {
  const { blobs, extractor, recorder, logger, maxBytes } = deps;

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

  const handleUpload = async ({ file, cause }: { file: FileUploaded; cause: ExtractionCause }): Promise<void> => {
    if ((await recorder.status(file.fileId)) !== 'pending') return;
    const outcome = await extractFile(file);
    if (!outcome) return;
    deps.onOutcome?.(outcome);
    const log = { fileId: file.fileId, format: outcome.format, durationMs: outcome.durationMs };
    if (outcome.ok) logger.info({ ...log, characters: outcome.characters, truncated: outcome.truncated }, 'text extracted');
    else logger.info({ ...log, reason: outcome.reason, detail: outcome.detail }, 'text extraction failed');
    await recorder.record(file.fileId, file.blobKey, reportOf(outcome), cause);
  };

  return async (records: readonly StoredEvent<CloudEvent>[]): Promise<void> => {
    const uploads = records.flatMap((record) => {
      const event = known(record.event);
      return event?.type === 'docs.file.uploaded.v1' ? [{ file: event.data, cause: { eventId: event.id, correlationId: event.correlationid } }] : [];
    });
    // A few at a time: the sandbox runs `concurrency` children and queues the rest.
    const width = Math.max(1, deps.concurrency ?? 1);
    for (let i = 0; i < uploads.length; i += width) {
      await Promise.all(uploads.slice(i, i + width).map(handleUpload));
    }
  };
};
