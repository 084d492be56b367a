import { mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { VersionConflict } from './port.ts';
import type { AppendResult, EventStore } from './port.ts';
import { appendListeners, safeWarning } from './append-listeners.ts';
import { validateAppend } from './validate.ts';

/** The embedded event store, plus a hook the in-process bus uses to wake up on new events. */
export type FileEventLog = EventStore & {
  /** Calls `listener` with the new last position after every durable append; returns an unsubscribe. */
  onAppend(listener: (lastPosition: number) => void): () => void;
};

/** The little the log needs from its file; injectable so tests can make writes fail. */
export interface AppendFile {
  /** Appends all of `data` at the end of the file. */
  write(data: Uint8Array): Promise<void>;
  /** Makes everything written so far durable. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

export interface FileEventLogOptions {
  /** Told about recoverable trouble: a torn last line truncated at open, a throwing listener. */
  onWarning?: (message: string) => void;
  /** Ids reserved per id-reservation record (default 100). */
  idBlockSize?: number;
  openAppendFile?: (file: string) => Promise<AppendFile>;
}

/**
 * One line per record: `<crc32 of payload, 8 hex digits> <payload JSON>\n`. One whole `append`
 * call is one line, so a torn write can never leave half of an append behind.
 */
type LogRecord =
  | { type: 'append'; position: number; stream: string; events: CloudEvent[] }
  | { type: 'ids'; kind: string; upTo: number };

interface PendingWrite {
  bytes: Buffer;
  /** Called once the line is durable, with where it is in the file. */
  commit(offset: number, length: number): void;
  resolve(): void;
  reject(error: unknown): void;
}

interface IdBlock {
  next: number;
  /** Highest id whose reservation is durable. */
  limit: number;
  reserving: Promise<void> | null;
}

const LOG_FILE_NAME = 'events.log';
const NEWLINE = 0x0a;
const SPACE = 0x20;
const HEX8 = /^[0-9a-f]{8}$/;

/** Two handles appending to one file would interleave lines, so a process opens each log once. */
const openFiles = new Set<string>();

/** Opens (creating if needed) the durable event log in `dir`, recovering from a torn last line. */
export async function openFileEventLog(dir: string, options: FileEventLogOptions = {}): Promise<FileEventLog> {
  const file = path.resolve(dir, LOG_FILE_NAME);
  if (openFiles.has(file)) throw new Error(`event log ${file} is already open in this process`);
  openFiles.add(file);
  try {
    return await openLog(file, options);
  } catch (error) {
    openFiles.delete(file);
    throw error;
  }
}

/**
 * Where the durable events are in the file: one entry per append record (a line), in log order.
 * Payloads are read back from the file on demand, so memory grows by a few numbers per event and
 * per stream, never by what the events carry (extracted text can be 100 KB an event).
 */
interface LogIndex {
  /** Byte offset of each append record's line. */
  starts: number[];
  /** Byte length of each append record's line, newline included. */
  lengths: number[];
  /** Global position of each append record's first event. */
  firstPositions: number[];
  /** Per stream, the global position of each of its events (version v at index v - 1). */
  streams: Map<string, number[]>;
  /** Positions recorded so far (the last position). */
  positions: number;
}

/** Reads of the file are made in ranges of at most this many bytes (one record may be larger). */
const READ_RANGE_BYTES = 4 * 1024 * 1024;
/** Two records of one stream at most this far apart are read with one read, the gap discarded. */
const READ_GAP_BYTES = 64 * 1024;
/**
 * Decoded records kept for the readers that follow, at most this many bytes of their lines: the
 * bus's groups read each new record in turn, and replay the log at start side by side, so most
 * reads after the first are served without reading and parsing the line again. Bounded, so memory
 * does not follow the log (a record larger than this is never kept).
 */
const RECENT_RECORD_BYTES = 2 * 1024 * 1024;

async function openLog(file: string, options: FileEventLogOptions): Promise<FileEventLog> {
  const warn = safeWarning(options);
  const idBlockSize = options.idBlockSize ?? 100;
  if (!Number.isInteger(idBlockSize) || idBlockSize < 1) throw new Error(`idBlockSize must be a positive integer, got ${idBlockSize}`);

  const index: LogIndex = { starts: [], lengths: [], firstPositions: [], streams: new Map(), positions: 0 };
  const reservedIds = new Map<string, number>();

  await mkdir(path.dirname(file), { recursive: true });
  /** Bytes of the file known to be durable: where a failed write is cut back to. */
  let durableLength = 0;
  const existed = await scanLog(file, warn, (record, start, length, where) => applyLoaded(record, start, length, { index, reservedIds }, where));
  if (existed !== null) {
    if (existed.goodLength < existed.size) await truncateDurably(file, existed.goodLength);
    durableLength = existed.goodLength;
  }
  const handle = await (options.openAppendFile ?? openAppendFile)(file);
  if (existed === null) await syncDirectory(path.dirname(file));
  let reader: FileHandle;
  try {
    reader = await open(file, 'r');
  } catch (error) {
    await handle.close();
    throw error;
  }

  // Versions and positions include appends still being written, so conflicts are decided at call time;
  // the index only ever holds durable events, so readers never see what might be lost.
  const pendingVersions = new Map<string, number>();
  for (const [stream, positions] of index.streams) pendingVersions.set(stream, positions.length);
  let nextPosition = index.positions + 1;
  const idBlocks = new Map<string, IdBlock>();
  for (const [kind, upTo] of reservedIds) idBlocks.set(kind, { next: upTo + 1, limit: upTo, reserving: null });

  const listeners = appendListeners(`event log ${file}`, warn);
  let queue: PendingWrite[] = [];
  let flushing: Promise<void> | null = null;
  let failure: Error | null = null;
  let closing: Promise<void> | null = null;
  /** Reads in flight: close() waits for them before it closes the file they read. */
  const reading = new Set<Promise<unknown>>();
  /** The most recently decoded or appended records (by record index), frozen: every reader shares them. */
  const recent = new Map<number, readonly CloudEvent[]>();
  let recentBytes = 0;
  /** Records being read from the file right now, by record index: the read that decodes them. */
  const inFlight = new Map<number, Promise<Map<number, readonly CloudEvent[]>>>();
  const keepRecent = (record: number, events: readonly CloudEvent[]): void => {
    const size = index.lengths[record]!;
    if (size > RECENT_RECORD_BYTES || recent.has(record)) return;
    recent.set(record, events);
    recentBytes += size;
    for (const oldest of recent.keys()) {
      if (recentBytes <= RECENT_RECORD_BYTES) break;
      recent.delete(oldest);
      recentBytes -= index.lengths[oldest]!;
    }
  };

  const assertWritable = (): void => {
    if (failure) throw failure;
    if (closing) throw new Error(`event log ${file} is closed`);
  };

  const writeDurably = (payload: string, commit: PendingWrite['commit']): Promise<void> =>
    new Promise((resolve, reject) => {
      queue.push({ bytes: encodeLine(payload), commit, resolve, reject });
      flushing ??= flush();
    });

  // Group commit: whatever queues up while one write+sync is in flight goes out in the next one.
  const flush = async (): Promise<void> => {
    await Promise.resolve(); // lets appends issued in the same tick join the first batch
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      const bytes = batch.length === 1 ? batch[0]!.bytes : Buffer.concat(batch.map((entry) => entry.bytes));
      const offset = durableLength;
      try {
        await handle.write(bytes);
        await handle.sync();
        durableLength += bytes.length;
      } catch (error) {
        failure = new Error(`event log ${file} failed to write and accepts no more writes until reopened`, { cause: error });
        for (const entry of [...batch, ...queue]) entry.reject(failure);
        queue = [];
        // Bytes written but not made durable must go: otherwise a reopen would revive appends whose
        // callers were told they failed. If even that fails, the next open's checks still apply.
        await truncateDurably(file, durableLength).catch((truncateError: unknown) => {
          warn(`event log ${file}: could not cut a failed write back (${String(truncateError)})`);
        });
        break;
      }
      const before = index.positions;
      let at = offset;
      for (const entry of batch) {
        entry.commit(at, entry.bytes.length);
        at += entry.bytes.length;
      }
      for (const entry of batch) entry.resolve();
      if (index.positions > before) listeners.notify(index.positions);
    }
    flushing = null;
  };

  const append = async (streamId: string, expectedVersion: number, events: readonly CloudEvent[]): Promise<AppendResult> => {
    assertWritable();
    validateAppend(streamId, expectedVersion, events);
    const actual = pendingVersions.get(streamId) ?? 0;
    if (actual !== expectedVersion) throw new VersionConflict(streamId, expectedVersion, actual);

    const first = nextPosition;
    const record: LogRecord = { type: 'append', position: first, stream: streamId, events: [...events] };
    const payload = JSON.stringify(record);
    nextPosition += events.length;
    const version = expectedVersion + events.length;
    pendingVersions.set(streamId, version);

    await writeDurably(payload, (offset, length) => {
      // Where the line is, for reading it back; and the JSON round-tripped copy, frozen, for the
      // readers right behind (the bus's groups): exactly what a reopen gives, unalterable.
      index.starts.push(offset);
      index.lengths.push(length);
      index.firstPositions.push(first);
      let stream = index.streams.get(streamId);
      if (!stream) index.streams.set(streamId, (stream = []));
      for (let i = 0; i < events.length; i++) stream.push(first + i);
      index.positions = first + events.length - 1;
      if (length <= RECENT_RECORD_BYTES) keepRecent(index.starts.length - 1, deepFreeze((JSON.parse(payload) as { events: CloudEvent[] }).events));
    });
    return { version, position: first + events.length - 1 };
  };

  const nextId = async (kind: string): Promise<number> => {
    if (typeof kind !== 'string' || kind === '') throw new Error('nextId needs a non-empty kind');
    assertWritable();
    let block = idBlocks.get(kind);
    if (!block) idBlocks.set(kind, (block = { next: 1, limit: 0, reserving: null }));
    for (;;) {
      if (block.next <= block.limit) return block.next++;
      assertWritable();
      if (!block.reserving) {
        const upTo = block.limit + idBlockSize;
        const reservingBlock = block;
        const record: LogRecord = { type: 'ids', kind, upTo };
        block.reserving = writeDurably(JSON.stringify(record), () => {
          reservingBlock.limit = upTo;
        }).finally(() => {
          reservingBlock.reserving = null;
        });
      }
      await block.reserving;
    }
  };

  /** The index of the append record that holds `position` (1..index.positions). */
  const recordOf = (position: number): number => {
    const firsts = index.firstPositions;
    let low = 0;
    let high = firsts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if (firsts[mid]! <= position) low = mid;
      else high = mid - 1;
    }
    return low;
  };

  /**
   * The events of the append records `records` (ascending record indexes): recent ones as kept,
   * the others read from the file, neighbouring records with one read (up to READ_RANGE_BYTES, gaps
   * up to READ_GAP_BYTES). `keep` picks the events wanted of each record.
   */
  const readRecords = async (
    records: readonly number[], keep: (position: number) => boolean,
  ): Promise<StoredEvent<CloudEvent>[]> => {
    if (closing) throw new Error(`event log ${file} is closed`);
    const out: StoredEvent<CloudEvent>[] = [];
    const emit = (record: number, events: readonly CloudEvent[]): void => {
      events.forEach((event, k) => {
        const position = index.firstPositions[record]! + k;
        if (keep(position)) out.push({ position, event });
      });
    };
    for (let from = 0; from < records.length;) {
      const first = records[from]!;
      const kept = recent.get(first) ?? (await inFlight.get(first))?.get(first);
      if (kept) {
        emit(first, kept);
        from++;
        continue;
      }
      let to = from;
      const start = index.starts[first]!;
      const endOf = (i: number): number => index.starts[records[i]!]! + index.lengths[records[i]!]!;
      while (to + 1 < records.length && !recent.has(records[to + 1]!) && !inFlight.has(records[to + 1]!)) {
        const next = index.starts[records[to + 1]!]!;
        if (next - endOf(to) > READ_GAP_BYTES || endOf(to + 1) - start > READ_RANGE_BYTES) break;
        to++;
      }
      const wanted = records.slice(from, to + 1);
      const read = decodeRange(wanted, start, endOf(to) - start);
      // Readers asking for these records meanwhile (the bus's groups replay side by side) wait for this read.
      for (const r of wanted) inFlight.set(r, read);
      try {
        const decoded = await read;
        for (const r of wanted) emit(r, decoded.get(r)!);
      } finally {
        for (const r of wanted) if (inFlight.get(r) === read) inFlight.delete(r);
      }
      from = to + 1;
    }
    return out;
  };

  /** Reads `length` bytes from `start` and decodes the append records `wanted` in them, keeping them as recent. */
  const decodeRange = async (wanted: readonly number[], start: number, length: number): Promise<Map<number, readonly CloudEvent[]>> => {
    const bytes = await readRange(reader, start, length);
    const out = new Map<number, readonly CloudEvent[]>();
    for (const r of wanted) {
      const lineStart = index.starts[r]! - start;
      const decoded = decodeLine(bytes, lineStart, lineStart + index.lengths[r]! - 1);
      if (typeof decoded === 'string' || decoded.type !== 'append' || decoded.position !== index.firstPositions[r]) {
        throw new Error(`event log ${file} changed under the process at byte ${index.starts[r]} (${typeof decoded === 'string' ? decoded : 'another record'})`);
      }
      const events = deepFreeze(decoded.events);
      keepRecent(r, events);
      out.set(r, events);
    }
    return out;
  };

  const tracked = <T>(read: Promise<T>): Promise<T> => {
    reading.add(read);
    const forget = (): void => {
      reading.delete(read);
    };
    read.then(forget, forget);
    return read;
  };

  return {
    readStream(streamId, afterVersion = 0) {
      const positions = index.streams.get(streamId)?.slice(Math.max(0, afterVersion)) ?? [];
      if (positions.length === 0) return Promise.resolve([]);
      const records: number[] = [];
      for (const position of positions) {
        const r = recordOf(position);
        if (records.at(-1) !== r) records.push(r);
      }
      const from = positions[0]!;
      return tracked(readRecords(records, (position) => position >= from));
    },
    append,
    readAll(afterPosition, limit) {
      const from = Math.max(0, afterPosition);
      const to = Math.min(index.positions, from + Math.max(0, limit));
      if (to <= from) return Promise.resolve([]);
      const records: number[] = [];
      for (let r = recordOf(from + 1); r < index.firstPositions.length && index.firstPositions[r]! <= to; r++) records.push(r);
      return tracked(readRecords(records, (position) => position > from && position <= to));
    },
    async lastPosition() {
      return index.positions;
    },
    nextId,
    onAppend: listeners.onAppend,
    close() {
      closing ??= (async () => {
        while (flushing) await flushing;
        await handle.close();
        await Promise.allSettled([...reading]);
        await reader.close();
        openFiles.delete(file);
      })();
      return closing;
    },
  };
}

/** `length` bytes of `handle` from `start`; a short read means the file lost bytes it had. */
async function readRange(handle: FileHandle, start: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let read = 0;
  while (read < length) {
    const { bytesRead } = await handle.read(buffer, read, length - read, start + read);
    if (bytesRead === 0) throw new Error(`event log ended at byte ${start + read}, before the ${length} bytes at ${start}`);
    read += bytesRead;
  }
  return buffer;
}

function encodeLine(payload: string): Buffer {
  const body = Buffer.from(payload, 'utf8');
  const crc = Buffer.from(`${crc32(body).toString(16).padStart(8, '0')} `, 'latin1');
  return Buffer.concat([crc, body, Buffer.of(NEWLINE)]);
}

/** The record on one line, or why the line is unreadable. */
function decodeLine(buffer: Buffer, start: number, end: number): LogRecord | string {
  if (end - start < 10 || buffer[start + 8] !== SPACE) return 'bad framing';
  const crcText = buffer.toString('latin1', start, start + 8);
  if (!HEX8.test(crcText)) return 'bad checksum field';
  if (crc32(buffer.subarray(start + 9, end)) !== Number.parseInt(crcText, 16)) return 'checksum mismatch';
  try {
    return JSON.parse(buffer.toString('utf8', start + 9, end)) as LogRecord;
  } catch {
    return 'invalid JSON';
  }
}

interface LoadState {
  index: LogIndex;
  reservedIds: Map<string, number>;
}

/** Bytes read per step while scanning the log at open: memory at open is a chunk and a record, not the file. */
const SCAN_CHUNK_BYTES = 1024 * 1024;

/**
 * Reads the log at `file` record by record, giving each intact one to `onRecord` with where its
 * line is. Null when there is no file; else the file's size and the byte length of the intact
 * prefix to keep (a torn or corrupt last line is left out, with a warning).
 */
async function scanLog(
  file: string, warn: (message: string) => void,
  onRecord: (record: LogRecord, start: number, length: number, where: string) => void,
): Promise<{ size: number; goodLength: number } | null> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
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
        const more = await readRange(handle, base + pending.length, Math.min(SCAN_CHUNK_BYTES, size - base - pending.length));
        pending = pending.length === 0 ? more : Buffer.concat([pending, more]);
        continue;
      }
      line++;
      if (newline === -1) {
        // The newline is the last byte of every record, so a line without one was never fully written, let alone synced.
        warn(`event log ${file}: truncating torn last line ${line} (${pending.length} bytes, no newline)`);
        return { size, goodLength: base };
      }
      const record = decodeLine(pending, 0, newline);
      if (typeof record === 'string') {
        if (base + newline + 1 === size) {
          warn(`event log ${file}: truncating corrupt last line ${line} (${record})`);
          return { size, goodLength: base };
        }
        throw new Error(`event log ${file} is corrupt at line ${line} (${record}); refusing to open it`);
      }
      onRecord(record, base, newline + 1, `event log ${file}, line ${line}`);
      base += newline + 1;
      pending = pending.subarray(newline + 1);
    }
    return { size, goodLength: base };
  } finally {
    await handle.close();
  }
}

/** Intact checksums but inconsistent content means a bug or a foreign writer, never a crash: refuse rather than truncate. */
function applyLoaded(record: LogRecord, start: number, length: number, { index, reservedIds }: LoadState, where: string): void {
  if (record?.type === 'append') {
    const { position, stream, events } = record;
    if (position !== index.positions + 1) throw new Error(`${where}: position ${position}, expected ${index.positions + 1}`);
    if (typeof stream !== 'string' || !Array.isArray(events) || events.length === 0) throw new Error(`${where}: malformed append record`);
    let positions = index.streams.get(stream);
    if (!positions) index.streams.set(stream, (positions = []));
    for (const event of events) {
      if (event?.subject !== stream || event.streamversion !== positions.length + 1) {
        throw new Error(`${where}: event of ${String(event?.subject)} v${String(event?.streamversion)} does not continue stream ${stream} at v${positions.length}`);
      }
      positions.push(++index.positions);
    }
    index.starts.push(start);
    index.lengths.push(length);
    index.firstPositions.push(position);
  } else if (record?.type === 'ids') {
    if (typeof record.kind !== 'string' || !Number.isInteger(record.upTo)) throw new Error(`${where}: malformed ids record`);
    reservedIds.set(record.kind, Math.max(record.upTo, reservedIds.get(record.kind) ?? 0));
  } else {
    throw new Error(`${where}: unknown record type ${String((record as { type?: unknown } | null)?.type)}`);
  }
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

/** A new file's directory entry is only durable once the directory itself is synced. */
async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // Some platforms cannot open or sync a directory; the file itself is still synced on every write.
  } finally {
    await handle?.close();
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

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}
