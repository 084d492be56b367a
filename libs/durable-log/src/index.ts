import { mkdir, open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';

/*
 * The one durable file of the embedded mode: append-only records, each one line
 * `<crc32 of the payload, 8 hex digits> <payload JSON>\n`, group-committed (whatever is appended
 * while one write+fsync is in flight goes out in the next one) and acknowledged only once fsynced.
 * The event log (events.log), the claim store (claims.log) and the idempotency store
 * (idempotency.log) are each one such file; the format is the one they always wrote.
 *
 * The rules, the same for every file:
 * - Torn tail: the last line without its newline, or whose checksum or JSON fails, is what a crash
 *   mid-append leaves (never acknowledged): it is cut off at open, with a warning.
 * - Corruption: a bad line anywhere before the last one is damage no crash makes: the open refuses.
 *   So does a line whose checksum holds but whose content the owner rejects (`onRecord` throws).
 * - One writer: one process opens each file, once (a second open is refused until the first closes).
 *   Across processes by `<file>.lock`, holding the pid of the process that has the file open; a
 *   lock whose process is gone (a crash, a kill -9) is taken over.
 * - A failed write is cut back to the last durable length, so a reopen never revives an append
 *   whose caller was told it failed; then the log stops taking appends until it is reopened (or,
 *   with `keepWritingAfterFailure`, goes on with the next batch).
 * - Compaction (for keyed stores whose keys expire): the live records are written to a new file,
 *   fsynced, renamed over the old one and the directory fsynced; a crash leaves one or the other.
 */

/** The little the log needs from its file; injectable so tests can make writes fail. */
export interface AppendFile {
  /** Appends all of `data` at the end of the file. */
  write(data: Uint8Array): Promise<void>;
  /** Makes everything written so far durable. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** Where one record's line is in the file: its first byte and its length, newline included. */
export interface RecordAt {
  offset: number;
  length: number;
}

export interface DurableLogOptions {
  /** What messages call the file's owner: 'event log', 'claim store', ... */
  name: string;
  /** Told about recoverable trouble: a torn last line cut off at open, a failed cut-back. */
  onWarning?: (message: string) => void;
  /**
   * After a failed write (cut back successfully), take later appends (true) or refuse every
   * append until the log is reopened (false, the default: for owners that numbered what was queued).
   */
  keepWritingAfterFailure?: boolean;
  /** Called once after each group commit, when its appends are durable and their `onDurable` ran. */
  afterCommit?: () => void;
  openAppendFile?: (file: string) => Promise<AppendFile>;
}

/** One record found at open: its payload (parsed JSON), where it is, and how to name it in an error. */
export interface ScannedRecord {
  payload: unknown;
  at: RecordAt;
  /** `<name> <file>, line <n>`. */
  where: string;
}

export interface DurableLog {
  readonly file: string;
  /**
   * Appends one record (`payload`: JSON text, one line) and resolves once it is durable, with where
   * it is. `onDurable` runs when it is, before any append of its batch resolves: what it records is
   * in place when the callers and `afterCommit` run.
   */
  append(payload: string, onDurable?: (at: RecordAt) => void): Promise<RecordAt>;
  /** `length` bytes of the file from `offset` (whole records, decoded with `decodeRecord`). */
  readRange(offset: number, length: number): Promise<Buffer>;
  /**
   * Replaces the file by the records `live()` gives (called once no write is in flight; appends
   * made meanwhile go to the new file after them). A failure before the rename keeps the old file.
   */
  compact(live: () => Iterable<string>): Promise<void>;
  /** Throws what `append` would reject with now: the log stopped after a failed write, or closed. */
  assertWritable(): void;
  /** Records (lines) in the file and its durable length. */
  size(): { records: number; bytes: number };
  /** Waits for the appends in flight, then closes; later appends and reads are refused. */
  close(): Promise<void>;
}

const NEWLINE = 0x0a;
const SPACE = 0x20;
const HEX8 = /^[0-9a-f]{8}$/;
/** Bytes read per step while scanning at open: memory at open is a chunk and a record, not the file. */
const SCAN_CHUNK_BYTES = 1024 * 1024;

/** Files open in this process: two handles appending to one file would interleave lines. */
const openFiles = new Set<string>();

/** One record's line: `<crc32 hex8> <payload>\n`. */
export function encodeRecord(payload: string): Buffer {
  const body = Buffer.from(payload, 'utf8');
  const crc = Buffer.from(`${crc32(body).toString(16).padStart(8, '0')} `, 'latin1');
  return Buffer.concat([crc, body, Buffer.of(NEWLINE)]);
}

export type Decoded = { ok: true; payload: unknown } | { ok: false; reason: string };

/** The payload of the line at `buffer[start, end)` (newline excluded), or why it is unreadable. */
export function decodeRecord(buffer: Buffer, start: number, end: number): Decoded {
  if (end - start < 10 || buffer[start + 8] !== SPACE) return { ok: false, reason: 'bad framing' };
  const crcText = buffer.toString('latin1', start, start + 8);
  if (!HEX8.test(crcText)) return { ok: false, reason: 'bad checksum field' };
  if (crc32(buffer.subarray(start + 9, end)) !== Number.parseInt(crcText, 16)) return { ok: false, reason: 'checksum mismatch' };
  let payload: unknown;
  try {
    payload = JSON.parse(buffer.toString('utf8', start + 9, end));
  } catch {
    return { ok: false, reason: 'invalid JSON' };
  }
  return { ok: true, payload };
}

/**
 * Opens (creating it and its directory if needed) the log at `file`, giving each intact record to
 * `onRecord` in order (it throws to refuse a record: the open fails), cutting a torn last line off.
 */
export async function openDurableLog(
  file: string, onRecord: (record: ScannedRecord) => void, options: DurableLogOptions,
): Promise<DurableLog> {
  const resolved = path.resolve(file);
  const label = `${options.name} ${resolved}`;
  if (openFiles.has(resolved)) throw new Error(`${label} is already open in this process`);
  openFiles.add(resolved);
  let locked = false;
  try {
    await mkdir(path.dirname(resolved), { recursive: true });
    await lockAgainstOtherProcesses(resolved, label);
    locked = true;
    return await openLog(resolved, label, onRecord, options);
  } catch (error) {
    if (locked) await unlock(resolved);
    openFiles.delete(resolved);
    throw error;
  }
}

const lockFileOf = (file: string): string => `${file}.lock`;

/** Takes `<file>.lock` for this process; refuses while another live process holds it. */
async function lockAgainstOtherProcesses(file: string, label: string): Promise<void> {
  await lockForProcess(lockFileOf(file), (holder, lockFile) => new Error(`${label} is already open in process ${holder} (${lockFile}): one process per file`));
}

async function unlock(file: string): Promise<void> {
  await rm(lockFileOf(file), { force: true });
}

/**
 * Makes this process the only one holding `lockFile` (it holds the pid): refuses, with
 * `inUse(holder)`, while another live process holds it; takes over a lock left by a process that
 * is gone (a crash, a kill -9) or by this one's previous life (a container's pid 1). Resolves with
 * the release. The one process lock: the durable logs' and the embedded data dir's.
 */
export async function lockForProcess(lockFile: string, inUse: (holder: number, lockFile: string) => Error): Promise<() => Promise<void>> {
  // A stale lock is removed and taken anew with O_EXCL, so of two processes taking it over at
  // once one wins and the other finds it held.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(lockFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return () => rm(lockFile, { force: true });
    } catch (error) {
      if (!isErrno(error, 'EEXIST')) throw error;
    }
    const holder = Number.parseInt(await readFile(lockFile, 'utf8').catch(() => ''), 10);
    if (Number.isSafeInteger(holder) && holder > 0 && holder !== process.pid && processAlive(holder)) throw inUse(holder, lockFile);
    await rm(lockFile, { force: true });
  }
  throw new Error(`could not take ${lockFile}`);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isErrno(error, 'EPERM'); // alive, someone else's
  }
}

interface Pending {
  bytes: Buffer;
  onDurable: ((at: RecordAt) => void) | undefined;
  resolve(at: RecordAt): void;
  reject(error: unknown): void;
}

async function openLog(
  file: string, label: string, onRecord: (record: ScannedRecord) => void, options: DurableLogOptions,
): Promise<DurableLog> {
  const warn = (message: string): void => {
    try {
      options.onWarning?.(message);
    } catch {
      // A throwing warning hook must not break the log.
    }
  };
  const openAppend = options.openAppendFile ?? openAppendFile;
  const scanned = await scan(file, label, warn, onRecord);
  let records = scanned?.records ?? 0;
  /** Bytes of the file known to be durable: where a failed write is cut back to. */
  let durableLength = scanned?.goodLength ?? 0;
  if (scanned && scanned.goodLength < scanned.size) await truncateDurably(file, scanned.goodLength);
  let handle = await openAppend(file);
  if (!scanned) await fsyncDir(path.dirname(file));
  /** The one read handle, opened on the first read (a promise, so concurrent first reads share it). */
  let reader: Promise<FileHandle> | null = null;

  let queue: Pending[] = [];
  let flushing: Promise<void> | null = null;
  /** Writes (group commits, compactions) run one after another on this chain. */
  let writer: Promise<void> = Promise.resolve();
  let stopped: Error | null = null;
  let closing: Promise<void> | null = null;
  const reading = new Set<Promise<unknown>>();

  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const run = writer.then(work);
    writer = run.then(() => {}, () => {});
    return run;
  };
  const assertWritable = (): void => {
    if (stopped) throw stopped;
    if (closing) throw new Error(`${label} is closed`);
  };

  const flush = async (): Promise<void> => {
    await Promise.resolve(); // lets appends issued in the same tick join the first batch
    try {
      while (queue.length > 0) {
        const batch = queue;
        queue = [];
        if (stopped) {
          for (const entry of batch) entry.reject(stopped);
          continue;
        }
        const bytes = batch.length === 1 ? batch[0]!.bytes : Buffer.concat(batch.map((entry) => entry.bytes));
        try {
          await handle.write(bytes);
          await handle.sync();
        } catch (error) {
          const failure = new Error(`${label} failed to write (${String(error)})`, { cause: error });
          for (const entry of batch) entry.reject(failure);
          // Bytes written but not made durable must go: otherwise a reopen would revive appends whose
          // callers were told they failed, and later appends would land after garbage.
          const cut = await truncateDurably(file, durableLength).then(() => true, (cutError: unknown) => {
            warn(`${label}: could not cut a failed write back (${String(cutError)})`);
            return false;
          });
          if (!options.keepWritingAfterFailure || !cut) {
            stopped = new Error(`${label} failed to write and accepts no more writes until reopened`, { cause: error });
          }
          continue;
        }
        let at = durableLength;
        durableLength += bytes.length;
        records += batch.length;
        const places = batch.map((entry) => {
          const place = { offset: at, length: entry.bytes.length };
          at += entry.bytes.length;
          entry.onDurable?.(place);
          return place;
        });
        batch.forEach((entry, i) => entry.resolve(places[i]!));
        options.afterCommit?.();
      }
    } finally {
      // Cleared in the same synchronous step as the last empty-queue check, so an append queued
      // after it always starts a new flush rather than waiting on one that has ended.
      flushing = null;
    }
  };

  const readRange = (offset: number, length: number): Promise<Buffer> => {
    if (closing) return Promise.reject(new Error(`${label} is closed`));
    const read = (async () => {
      reader ??= open(file, 'r').catch((error: unknown) => {
        reader = null; // the next read tries again
        throw error;
      });
      return readFully(await reader, offset, length, label);
    })();
    reading.add(read);
    const forget = (): void => {
      reading.delete(read);
    };
    read.then(forget, forget);
    return read;
  };

  const compact = (live: () => Iterable<string>): Promise<void> => {
    assertWritable();
    return serially(async () => {
      if (stopped || closing) return;
      const lines = [...live()].map(encodeRecord);
      await replaceFile(file, Buffer.concat(lines));
      // The old handles point at a file no longer there: until the new one is open, nothing may append.
      try {
        const fresh = await openAppend(file);
        await handle.close().catch(() => {});
        handle = fresh;
        const oldReader = reader;
        reader = null;
        await Promise.allSettled([...reading]);
        await oldReader?.then((old) => old.close()).catch(() => {});
      } catch (error) {
        stopped = new Error(`${label} could not reopen after compaction and accepts no more writes until reopened`, { cause: error });
        throw stopped;
      }
      records = lines.length;
      durableLength = lines.reduce((sum, line) => sum + line.length, 0);
    });
  };

  return {
    file,
    append(payload, onDurable) {
      try {
        assertWritable();
      } catch (error) {
        return Promise.reject(error);
      }
      return new Promise<RecordAt>((resolve, reject) => {
        queue.push({ bytes: encodeRecord(payload), onDurable, resolve, reject });
        flushing ??= serially(flush);
      });
    },
    readRange,
    compact,
    assertWritable,
    size: () => ({ records, bytes: durableLength }),
    close() {
      closing ??= (async () => {
        while (flushing) await flushing.catch(() => {});
        await writer;
        try {
          await handle.close();
          await Promise.allSettled([...reading]);
          await (await reader?.catch(() => null))?.close();
        } finally {
          await unlock(file);
          openFiles.delete(file);
        }
      })();
      return closing;
    },
  };
}

/**
 * Reads the log record by record, giving each intact one to `onRecord`. Null when there is no
 * file; else its size, the records kept and the byte length of the intact prefix (a torn or
 * corrupt last line is left out, with a warning).
 */
async function scan(
  file: string, label: string, warn: (message: string) => void, onRecord: (record: ScannedRecord) => void,
): Promise<{ size: number; goodLength: number; records: number } | null> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return null;
    throw error;
  }
  try {
    const { size } = await handle.stat();
    /** Bytes read but not yet consumed, starting at file offset `base`. */
    let pending: Buffer = Buffer.alloc(0);
    let base = 0;
    let line = 0;
    while (base + pending.length < size || pending.length > 0) {
      const newline = pending.indexOf(NEWLINE);
      if (newline === -1 && base + pending.length < size) {
        // Not a whole line yet: read on (a line longer than a chunk grows the buffer to hold it).
        const more = await readFully(handle, base + pending.length, Math.min(SCAN_CHUNK_BYTES, size - base - pending.length), label);
        pending = pending.length === 0 ? more : Buffer.concat([pending, more]);
        continue;
      }
      line++;
      if (newline === -1) {
        // The newline is the last byte of every record, so a line without one was never fully written, let alone synced.
        warn(`${label}: truncating torn last line ${line} (${pending.length} bytes, no newline)`);
        return { size, goodLength: base, records: line - 1 };
      }
      const decoded = decodeRecord(pending, 0, newline);
      if (!decoded.ok) {
        if (base + newline + 1 === size) {
          warn(`${label}: truncating corrupt last line ${line} (${decoded.reason})`);
          return { size, goodLength: base, records: line - 1 };
        }
        throw new Error(`${label} is corrupt at line ${line} (${decoded.reason}); refusing to open it`);
      }
      onRecord({ payload: decoded.payload, at: { offset: base, length: newline + 1 }, where: `${label}, line ${line}` });
      base += newline + 1;
      pending = pending.subarray(newline + 1);
    }
    return { size, goodLength: base, records: line };
  } finally {
    await handle.close();
  }
}

/** `length` bytes of `handle` from `start`; a short read means the file lost bytes it had. */
async function readFully(handle: FileHandle, start: number, length: number, label: string): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let read = 0;
  while (read < length) {
    const { bytesRead } = await handle.read(buffer, read, length - read, start + read);
    if (bytesRead === 0) throw new Error(`${label} ended at byte ${start + read}, before the ${length} bytes at ${start}`);
    read += bytesRead;
  }
  return buffer;
}

async function truncateDurably(file: string, length: number): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.truncate(length);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Makes a directory's entries (a file created, renamed or removed in it) durable. Platforms that
 * cannot open or sync a directory (Windows) are let be: the files themselves are still synced.
 */
export async function fsyncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (error) {
    if (!isErrno(error, 'EISDIR', 'EPERM', 'EACCES', 'EINVAL')) throw error;
  } finally {
    await handle?.close();
  }
}

/** Replaces `file` by `data`, crash-safely: a new file, fsynced, renamed over it, the directory fsynced. */
export async function replaceFile(file: string, data: Uint8Array): Promise<void> {
  const fresh = `${file}.${process.pid}.tmp`;
  try {
    const out = await open(fresh, 'w');
    try {
      await out.writeFile(data);
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(fresh, file);
    await fsyncDir(path.dirname(file));
  } finally {
    await rm(fresh, { force: true });
  }
}

async function openAppendFile(file: string): Promise<AppendFile> {
  const handle = await open(file, 'a');
  return {
    async write(data) {
      let written = 0;
      while (written < data.length) {
        const { bytesWritten } = await handle.write(data, written, data.length - written);
        written += bytesWritten;
      }
    },
    // fdatasync is enough: appending changes the size, which fdatasync does flush.
    sync: () => handle.datasync(),
    close: () => handle.close(),
  };
}

function isErrno(error: unknown, ...codes: string[]): boolean {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' && codes.includes(error.code);
}
