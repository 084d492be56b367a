import { link, mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { decodeRecord, encodeRecord, fsyncDir, openDurableLog, type RecordAt } from '@docshare/durable-log';

/*
 * Rewrites one durable log (libs/durable-log: events.log, claims.log) record by record, crash-safely:
 *
 *   1. the old file is opened as its owner opens it (its process lock held, a torn last line cut
 *      off), and where each record is noted: a few numbers per record, never the payloads;
 *   2. the records are read back in ranges of READ_BYTES, each range's payloads handed to
 *      `rewrite` at once (so the caller can seal a range's events with one key fetch); a record
 *      it leaves alone is copied byte for byte, so whatever else the log holds (id reservations)
 *      stays as it was, in its place;
 *   3. the new file is written beside the old, in `<file>.migrating/`, fsynced, and opened by its
 *      owner's reader (`verify`) before anything is replaced;
 *   4. with `keepBackup` the old file is hard-linked to `<file>.plain-backup`; then the new file is
 *      renamed over the old one and the directory fsynced. Without it, the rename is what takes the
 *      plain text off the disk (no name is left pointing at the old bytes).
 *
 * A crash before step 4 leaves the old file untouched (the next run removes the leftover
 * directory and starts again); after it, the new file is complete. A run that finds nothing to
 * change writes nothing: running it twice changes nothing.
 */

/** Bytes of consecutive records read (and handed to `rewrite`) at once; a larger record is read alone. */
const READ_BYTES = 4 * 1024 * 1024;
/** Bytes of new lines buffered before they are written. */
const WRITE_BYTES = 4 * 1024 * 1024;

export interface RewriteLogOptions {
  /** The log file (e.g. DATA_DIR/events/events.log). */
  file: string;
  /** What errors call it ('event log', 'claim store'): the owner's name, so a held lock reads the same. */
  name: string;
  /** For the payloads of consecutive records, in order: each one's new payload, undefined to keep it as it is, or null to drop it. */
  rewrite(payloads: readonly unknown[]): Promise<ReadonlyArray<unknown>>;
  /** Opens the new file (`file`, in a directory of its own) as its owner would, and throws if it is not sound. */
  verify?(file: string): Promise<void>;
  /** Keep the old file as `<file>.plain-backup` (else it is gone once the new one is in). */
  keepBackup: boolean;
}

export interface RewriteLogResult {
  /** Records in the log. */
  records: number;
  /** Records rewritten or dropped. */
  changed: number;
  /** Whether the file was replaced (false: nothing to change, or no file). */
  replaced: boolean;
  /** Where the old file is kept, with `keepBackup`. */
  backup: string | null;
}

export const backupOf = (file: string): string => `${file}.plain-backup`;
const workDirOf = (file: string): string => `${file}.migrating`;

const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);

/** Rewrites `options.file` as the header says; returns what it did. */
export async function rewriteLog(options: RewriteLogOptions): Promise<RewriteLogResult> {
  const { file, name } = options;
  const work = workDirOf(file);
  // A leftover of a run that died before its rename: the old file is intact, start again.
  await rm(work, { recursive: true, force: true });
  if (!(await exists(file))) return { records: 0, changed: 0, replaced: false, backup: null };

  const places: RecordAt[] = [];
  const old = await openDurableLog(file, ({ at }) => void places.push(at), { name });
  let changed = 0;
  try {
    await mkdir(work, { recursive: true });
    const fresh = join(work, basename(file));
    const out = await open(fresh, 'wx', 0o600);
    try {
      changed = await copyRewritten(places, old.readRange, options.rewrite, out, name);
      await out.sync();
    } finally {
      await out.close();
    }
    if (changed === 0) {
      await rm(work, { recursive: true, force: true });
      return { records: places.length, changed, replaced: false, backup: null };
    }
    await options.verify?.(fresh);
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  } finally {
    await old.close();
  }

  let backup: string | null = null;
  if (options.keepBackup) {
    backup = backupOf(file);
    await rm(backup, { force: true });
    await link(file, backup);
  }
  await rename(join(work, basename(file)), file);
  await fsyncDir(dirname(file));
  await rm(work, { recursive: true, force: true });
  return { records: places.length, changed, replaced: true, backup };
}

/** Writes every record to `out`, rewritten where `rewrite` says; returns how many were rewritten. */
async function copyRewritten(
  places: readonly RecordAt[], readRange: (offset: number, length: number) => Promise<Buffer>,
  rewrite: RewriteLogOptions['rewrite'], out: FileHandle, name: string,
): Promise<number> {
  let changed = 0;
  let buffered: Buffer[] = [];
  let bufferedBytes = 0;
  const flush = async (): Promise<void> => {
    if (bufferedBytes === 0) return;
    await out.writeFile(Buffer.concat(buffered, bufferedBytes));
    buffered = [];
    bufferedBytes = 0;
  };
  for (let from = 0; from < places.length;) {
    // Records are contiguous in the file: one read for as many as fit in READ_BYTES (at least one).
    const start = places[from]!.offset;
    let to = from + 1;
    while (to < places.length && places[to]!.offset + places[to]!.length - start <= READ_BYTES) to++;
    const bytes = await readRange(start, places[to - 1]!.offset + places[to - 1]!.length - start);
    const lines: Buffer[] = [];
    const payloads: unknown[] = [];
    for (let r = from; r < to; r++) {
      const lineStart = places[r]!.offset - start;
      const lineEnd = lineStart + places[r]!.length;
      const decoded = decodeRecord(bytes, lineStart, lineEnd - 1);
      if (!decoded.ok) throw new Error(`${name} changed under the migration at byte ${places[r]!.offset} (${decoded.reason})`);
      lines.push(bytes.subarray(lineStart, lineEnd));
      payloads.push(decoded.payload);
    }
    const next = await rewrite(payloads);
    if (next.length !== payloads.length) throw new Error(`rewrite gave ${next.length} payloads for ${payloads.length}`);
    next.forEach((payload, i) => {
      let line = lines[i]!;
      if (payload !== undefined) changed++;
      if (payload === null) return;
      if (payload !== undefined) line = encodeRecord(JSON.stringify(payload));
      buffered.push(line);
      bufferedBytes += line.length;
    });
    if (bufferedBytes >= WRITE_BYTES) await flush();
    from = to;
  }
  await flush();
  return changed;
}
