import { mkdir, open, readFile } from 'node:fs/promises';
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
  commit(): void;
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

async function openLog(file: string, options: FileEventLogOptions): Promise<FileEventLog> {
  const warn = safeWarning(options);
  const idBlockSize = options.idBlockSize ?? 100;
  if (!Number.isInteger(idBlockSize) || idBlockSize < 1) throw new Error(`idBlockSize must be a positive integer, got ${idBlockSize}`);

  const all: StoredEvent<CloudEvent>[] = [];
  const streams = new Map<string, StoredEvent<CloudEvent>[]>();
  const reservedIds = new Map<string, number>();

  await mkdir(path.dirname(file), { recursive: true });
  const existing = await readIfExists(file);
  /** Bytes of the file known to be durable: where a failed write is cut back to. */
  let durableLength = 0;
  if (existing !== null) {
    const goodLength = loadLog(existing, file, warn, { all, streams, reservedIds });
    if (goodLength < existing.length) await truncateDurably(file, goodLength);
    durableLength = goodLength;
  }
  const handle = await (options.openAppendFile ?? openAppendFile)(file);
  if (existing === null) await syncDirectory(path.dirname(file));

  // Versions and positions include appends still being written, so conflicts are decided at call time;
  // `all` and `streams` only ever hold durable events, so readers never see what might be lost.
  const pendingVersions = new Map<string, number>();
  for (const [stream, events] of streams) pendingVersions.set(stream, events.length);
  let nextPosition = all.length + 1;
  const idBlocks = new Map<string, IdBlock>();
  for (const [kind, upTo] of reservedIds) idBlocks.set(kind, { next: upTo + 1, limit: upTo, reserving: null });

  const listeners = appendListeners(`event log ${file}`, warn);
  let queue: PendingWrite[] = [];
  let flushing: Promise<void> | null = null;
  let failure: Error | null = null;
  let closing: Promise<void> | null = null;

  const assertWritable = (): void => {
    if (failure) throw failure;
    if (closing) throw new Error(`event log ${file} is closed`);
  };

  const writeDurably = (payload: string, commit: () => void): Promise<void> =>
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
      const before = all.length;
      for (const entry of batch) entry.commit();
      for (const entry of batch) entry.resolve();
      if (all.length > before) listeners.notify(all.length);
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
    // Keep the JSON round-tripped copy, frozen: readers get exactly what a reopen would give them and cannot alter the log.
    const stored = (JSON.parse(payload) as { events: CloudEvent[] }).events.map((event, i) =>
      deepFreeze({ position: first + i, event }),
    );
    nextPosition += events.length;
    const version = expectedVersion + events.length;
    pendingVersions.set(streamId, version);

    await writeDurably(payload, () => {
      let stream = streams.get(streamId);
      if (!stream) streams.set(streamId, (stream = []));
      for (const entry of stored) {
        all.push(entry);
        stream.push(entry);
      }
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

  return {
    async readStream(streamId, afterVersion = 0) {
      return streams.get(streamId)?.slice(Math.max(0, afterVersion)) ?? [];
    },
    append,
    async readAll(afterPosition, limit) {
      const from = Math.max(0, afterPosition);
      return all.slice(from, from + Math.max(0, limit));
    },
    async lastPosition() {
      return all.length;
    },
    nextId,
    onAppend: listeners.onAppend,
    close() {
      closing ??= (async () => {
        while (flushing) await flushing;
        await handle.close();
        openFiles.delete(file);
      })();
      return closing;
    },
  };
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
  all: StoredEvent<CloudEvent>[];
  streams: Map<string, StoredEvent<CloudEvent>[]>;
  reservedIds: Map<string, number>;
}

/** Loads every record into `state`; returns the byte length of the intact prefix to keep. */
function loadLog(buffer: Buffer, file: string, warn: (message: string) => void, state: LoadState): number {
  let offset = 0;
  let line = 0;
  while (offset < buffer.length) {
    line++;
    const newline = buffer.indexOf(NEWLINE, offset);
    if (newline === -1) {
      // The newline is the last byte of every record, so a line without one was never fully written, let alone synced.
      warn(`event log ${file}: truncating torn last line ${line} (${buffer.length - offset} bytes, no newline)`);
      return offset;
    }
    const record = decodeLine(buffer, offset, newline);
    if (typeof record === 'string') {
      if (newline + 1 === buffer.length) {
        warn(`event log ${file}: truncating corrupt last line ${line} (${record})`);
        return offset;
      }
      throw new Error(`event log ${file} is corrupt at line ${line} (${record}); refusing to open it`);
    }
    applyLoaded(record, state, `event log ${file}, line ${line}`);
    offset = newline + 1;
  }
  return offset;
}

/** Intact checksums but inconsistent content means a bug or a foreign writer, never a crash: refuse rather than truncate. */
function applyLoaded(record: LogRecord, state: LoadState, where: string): void {
  if (record?.type === 'append') {
    const { position, stream, events } = record;
    if (position !== state.all.length + 1) throw new Error(`${where}: position ${position}, expected ${state.all.length + 1}`);
    if (typeof stream !== 'string' || !Array.isArray(events) || events.length === 0) throw new Error(`${where}: malformed append record`);
    let streamEvents = state.streams.get(stream);
    if (!streamEvents) state.streams.set(stream, (streamEvents = []));
    for (const event of events) {
      if (event?.subject !== stream || event.streamversion !== streamEvents.length + 1) {
        throw new Error(`${where}: event of ${String(event?.subject)} v${String(event?.streamversion)} does not continue stream ${stream} at v${streamEvents.length}`);
      }
      const entry = deepFreeze({ position: state.all.length + 1, event });
      state.all.push(entry);
      streamEvents.push(entry);
    }
  } else if (record?.type === 'ids') {
    if (typeof record.kind !== 'string' || !Number.isInteger(record.upTo)) throw new Error(`${where}: malformed ids record`);
    state.reservedIds.set(record.kind, Math.max(record.upTo, state.reservedIds.get(record.kind) ?? 0));
  } else {
    throw new Error(`${where}: unknown record type ${String((record as { type?: unknown } | null)?.type)}`);
  }
}

async function readIfExists(file: string): Promise<Buffer | null> {
  try {
    return await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
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
