import type { Archiver, ZipEntryData } from 'archiver';
import { once } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ExportContents, ExportedOriginal, ExportManifest, ExportResult } from './contents.ts';
import { DigestTap } from './digest-tap.ts';
import { makeOriginalNamer } from './entry-names.ts';

/**
 * How the ZIP is made. ZIP64 records are always written: an export has no size limit, and a reader
 * that meets a ZIP past 4 GiB (or 65,535 entries) without them reads garbage; every current unzip
 * reads them. Each entry picks its own compression (see `appendEntry`); this level is for the JSON.
 */
export const ZIP_OPTIONS = { forceZip64: true, zlib: { level: 6 } } as const;

/** The JSON parts, in the order they are written, and the entry each goes to. */
const JSON_PARTS = [
  ['account.json', 'account'],
  ['files.json', 'files'],
  ['comments_written.json', 'commentsWritten'],
  ['purchases.json', 'purchases'],
  ['stats.json', 'stats'],
] as const satisfies ReadonlyArray<readonly [string, keyof ExportContents]>;

/** Pretty-printed as the API answers (2 spaces), newline-terminated. */
const jsonBytes = (value: unknown): Buffer => Buffer.from(`${JSON.stringify(value, null, 2)}\n`);

/**
 * Adds one entry and waits until the archive has taken all of it, so the next source is opened only
 * then (one original open at a time). Rejects when the archive fails on it, or when the sink's side
 * of the pipeline fails (then the entry would never complete).
 */
const appendEntry = async (archive: Archiver, written: Promise<void>, source: Readable | Buffer, data: ZipEntryData): Promise<void> => {
  const taken = once(archive, 'entry');
  archive.append(source, data);
  await Promise.race([taken, written]);
};

/**
 * Streams a user's export as a ZIP into `sink` (e.g. a blob store's put stream): the JSON parts
 * (deflated), `daily.json` when there are daily statistics, every original under `originals/`
 * (stored as they are: they are mostly compressed already, and deflating them again costs CPU for
 * nothing), and last `manifest.json` with each original's SHA-256 and length, computed as it went in.
 *
 * Memory stays bounded whatever the size: originals are opened one at a time and read only as fast as
 * the sink takes the ZIP (backpressure through archiver and every stream between). The ZIP's own
 * SHA-256 and length are computed on the way to the sink. Resolves once the sink has finished; if an
 * original (or its `open`, or the sink) fails, rejects with that error and destroys the sink, so a
 * half-written ZIP is never reported as done.
 *
 * Into a blob store (whose `put` takes a Readable): a PassThrough is the sink, and the export is
 * stored once both are done; a failure destroys the PassThrough, so the put stores nothing:
 * `const body = new PassThrough(); const [result] = await Promise.all([writeAccountExport(contents, body), blobs.put(key, body, undefined, 'application/zip')]);`
 */
export const writeAccountExport = async (
  contents: ExportContents,
  sink: Writable,
  options: { now?: () => Date } = {},
): Promise<ExportResult> => {
  const exportedAt = (options.now ?? (() => new Date()))();
  // Loaded on the first export, not at every start of docs-command (archiver and its dependencies
  // cost ~100 ms of start-up CPU, and most processes never export).
  const { default: archiver } = await import('archiver');
  const archive = archiver('zip', { ...ZIP_OPTIONS, zlib: { ...ZIP_OPTIONS.zlib } });
  // A late error (the entry in progress failing after the pipeline was torn down by the first) must
  // not become an uncaught 'error' event: the pipeline already reports the first one.
  archive.on('error', () => undefined);
  const whole = new DigestTap();
  const written = pipeline(archive, whole, sink);
  const originals: ExportedOriginal[] = [];
  const manifest: ExportManifest = { exported_at: exportedAt.toISOString(), originals: [] };
  const nameOf = makeOriginalNamer();
  /** The original being read, and its read: on a failure, destroyed and waited for, so its source is closed when this rejects. */
  let reading: { meter: DigestTap; read: Promise<void> } | undefined;
  try {
    for (const [name, key] of JSON_PARTS) await appendEntry(archive, written, jsonBytes(contents[key]), { name, date: exportedAt });
    if (contents.daily !== null) await appendEntry(archive, written, jsonBytes(contents.daily), { name: 'daily.json', date: exportedAt });
    for await (const original of contents.originals) {
      const path = nameOf(original.fileId, original.fileName);
      const source = await original.open();
      const meter = new DigestTap();
      // `pipeline` carries the source's error to the meter (and so into the archive), and closes the
      // source when the meter is destroyed.
      const read = pipeline(source, meter);
      reading = { meter, read };
      await Promise.all([read, appendEntry(archive, written, meter, { name: path, date: exportedAt, store: true })]);
      reading = undefined;
      originals.push({ path, sha256: meter.sha256, bytes: meter.bytes });
      manifest.originals.push({ path, file_id: original.fileId, sha256: meter.sha256, bytes: meter.bytes });
    }
    await appendEntry(archive, written, jsonBytes(manifest), { name: 'manifest.json', date: exportedAt });
    await Promise.all([archive.finalize(), written]);
  } catch (error) {
    const cause = error instanceof Error ? error : new Error(String(error));
    // Destroying the archive with the error makes the pipeline destroy the sink (never end it).
    reading?.meter.destroy(cause);
    archive.destroy(cause);
    await Promise.allSettled([written, reading?.read]);
    sink.destroy(cause);
    throw error;
  }
  return { sha256: whole.sha256, bytes: whole.bytes, originals };
};
