import path from 'node:path';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { decodeRecord, openDurableLog, type AppendFile, type DurableLog, type ScannedRecord } from '@docshare/durable-log';
import { VersionConflict } from './port.ts';
import type { AppendResult, EventStore } from './port.ts';
import { appendListeners, safeWarning } from './append-listeners.ts';
import { idAllocator } from './id-blocks.ts';
import { isCloudEvent } from './parse-events.ts';
import { validateAppend, validateUnversioned } from './validate.ts';

export type { AppendFile } from '@docshare/durable-log';

/** The embedded event store, plus a hook the in-process bus uses to wake up on new events. */
export type FileEventLog = EventStore & {
  /** Calls `listener` with the new last position after every durable append; returns an unsubscribe. */
  onAppend(listener: (lastPosition: number) => void): () => void;
};

export interface FileEventLogOptions {
  /** Told about recoverable trouble: a torn last line truncated at open, a throwing listener. */
  onWarning?: (message: string) => void;
  /** Ids reserved per id-reservation record (default 100). */
  idBlockSize?: number;
  openAppendFile?: (file: string) => Promise<AppendFile>;
}

/**
 * One record of the durable log (libs/durable-log: one line, checksummed) per `append` or
 * `appendUnversioned` call, so a torn write can never leave half of one behind; and one per block
 * of ids reserved. An unversioned record names no stream: its events (`streamversion` 0) are in
 * the global order only, never in a stream's.
 */
type AppendRecord = { type: 'append'; position: number; stream: string; events: CloudEvent[] };
type UnversionedRecord = { type: 'unversioned'; position: number; events: CloudEvent[] };
type EventsRecord = AppendRecord | UnversionedRecord;
type IdsRecord = { type: 'ids'; kind: string; upTo: number };

const LOG_FILE_NAME = 'events.log';

/** Opens (creating if needed) the durable event log in `dir`, recovering from a torn last line. */
export async function openFileEventLog(dir: string, options: FileEventLogOptions = {}): Promise<FileEventLog> {
  const warn = safeWarning(options);
  const idBlockSize = options.idBlockSize ?? 100;
  if (!Number.isInteger(idBlockSize) || idBlockSize < 1) throw new Error(`idBlockSize must be a positive integer, got ${idBlockSize}`);
  const index: LogIndex = { starts: [], lengths: [], firstPositions: [], streams: new Map(), positions: 0 };
  const reservedIds = new Map<string, number>();
  let afterCommit = (): void => {};
  const log = await openDurableLog(path.join(dir, LOG_FILE_NAME), (record) => applyLoaded(record, index, reservedIds), {
    name: 'event log',
    onWarning: warn,
    openAppendFile: options.openAppendFile,
    afterCommit: () => afterCommit(),
  });
  return serveLog(log, index, reservedIds, idBlockSize, warn, (notify) => (afterCommit = notify));
}

/**
 * Where the durable events are in the file: one entry per events record (a line: an append or an
 * unversioned append), in log order. Payloads are read back from the file on demand, so memory
 * grows by a few numbers per record and per versioned event and stream (unversioned events have
 * no stream to index), never by what the events carry (extracted text can be 100 KB an event).
 */
interface LogIndex {
  /** Byte offset of each events record's line. */
  starts: number[];
  /** Byte length of each events record's line, newline included. */
  lengths: number[];
  /** Global position of each events record's first event. */
  firstPositions: number[];
  /** Per stream, the global position of each of its events (version v at index v - 1); unversioned events are in none. */
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

function serveLog(
  log: DurableLog, index: LogIndex, reservedIds: ReadonlyMap<string, number>, idBlockSize: number,
  warn: (message: string) => void, setAfterCommit: (notify: () => void) => void,
): FileEventLog {
  const file = log.file;
  // Versions and positions include appends still being written, so conflicts are decided at call time;
  // the index only ever holds durable events, so readers never see what might be lost.
  const pendingVersions = new Map<string, number>();
  for (const [stream, positions] of index.streams) pendingVersions.set(stream, positions.length);
  let nextPosition = index.positions + 1;

  const listeners = appendListeners(`event log ${file}`, warn);
  let notified = index.positions;
  setAfterCommit(() => {
    if (index.positions > notified) listeners.notify((notified = index.positions));
  });
  let closing: Promise<void> | null = null;
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

  const append = async (streamId: string, expectedVersion: number, events: readonly CloudEvent[]): Promise<AppendResult> => {
    log.assertWritable();
    validateAppend(streamId, expectedVersion, events);
    const actual = pendingVersions.get(streamId) ?? 0;
    if (actual !== expectedVersion) throw new VersionConflict(streamId, expectedVersion, actual);

    const version = expectedVersion + events.length;
    pendingVersions.set(streamId, version);
    const position = await write({ type: 'append', position: nextPosition, stream: streamId, events: [...events] });
    return { version, position };
  };

  /** Unversioned events: no stream, so no version to check nor to index; a record like any append's. */
  const appendUnversioned = async (events: readonly CloudEvent[]): Promise<{ position: number }> => {
    log.assertWritable();
    validateUnversioned(events);
    return { position: await write({ type: 'unversioned', position: nextPosition, events: [...events] }) };
  };

  /**
   * Writes `record` (which takes the positions from `nextPosition` on) with the log's group commit
   * and indexes it once durable; resolves to the position of its last event. Takes its positions
   * before it yields, so records reach the log in position order.
   */
  const write = async (record: EventsRecord): Promise<number> => {
    const { position: first, events } = record;
    const payload = JSON.stringify(record);
    nextPosition += events.length;
    await log.append(payload, ({ offset, length }) => {
      // Where the line is, for reading it back; and the JSON round-tripped copy, frozen, for the
      // readers right behind (the bus's groups): exactly what a reopen gives, unalterable.
      index.starts.push(offset);
      index.lengths.push(length);
      index.firstPositions.push(first);
      if (record.type === 'append') {
        let stream = index.streams.get(record.stream);
        if (!stream) index.streams.set(record.stream, (stream = []));
        for (let i = 0; i < events.length; i++) stream.push(first + i);
      }
      index.positions = first + events.length - 1;
      if (length <= RECENT_RECORD_BYTES) {
        const again: unknown = JSON.parse(payload);
        if (isEventsRecord(again)) keepRecent(index.starts.length - 1, deepFreeze(again.events));
      }
    });
    return first + events.length - 1;
  };

  const ids = idAllocator(async (kind, lastUpTo) => {
    const record: IdsRecord = { type: 'ids', kind, upTo: lastUpTo + idBlockSize };
    await log.append(JSON.stringify(record));
    return { from: lastUpTo + 1, upTo: record.upTo };
  }, () => log.assertWritable());
  for (const [kind, upTo] of reservedIds) ids.resume(kind, upTo);

  /** The index of the events record that holds `position` (1..index.positions). */
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
   * The events of the events records `records` (ascending record indexes): recent ones as kept,
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

  /** Reads `length` bytes from `start` and decodes the events records `wanted` in them, keeping them as recent. */
  const decodeRange = async (wanted: readonly number[], start: number, length: number): Promise<Map<number, readonly CloudEvent[]>> => {
    const bytes = await log.readRange(start, length);
    const out = new Map<number, readonly CloudEvent[]>();
    for (const r of wanted) {
      const lineStart = index.starts[r]! - start;
      const decoded = decodeRecord(bytes, lineStart, lineStart + index.lengths[r]! - 1);
      if (!decoded.ok || !isEventsRecord(decoded.payload) || decoded.payload.position !== index.firstPositions[r]) {
        throw new Error(`event log ${file} changed under the process at byte ${index.starts[r]} (${decoded.ok ? 'another record' : decoded.reason})`);
      }
      const events = deepFreeze(decoded.payload.events);
      keepRecent(r, events);
      out.set(r, events);
    }
    return out;
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
      return readRecords(records, (position) => position >= from);
    },
    append,
    appendUnversioned,
    readAll(afterPosition, limit) {
      const from = Math.max(0, afterPosition);
      const to = Math.min(index.positions, from + Math.max(0, limit));
      if (to <= from) return Promise.resolve([]);
      const records: number[] = [];
      for (let r = recordOf(from + 1); r < index.firstPositions.length && index.firstPositions[r]! <= to; r++) records.push(r);
      return readRecords(records, (position) => position > from && position <= to);
    },
    async lastPosition() {
      return index.positions;
    },
    nextId: ids.nextId,
    onAppend: listeners.onAppend,
    close() {
      closing ??= log.close();
      return closing;
    },
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** An append record as the log writes it. */
function isAppendRecord(value: unknown): value is AppendRecord {
  return isRecord(value) && value['type'] === 'append' && Number.isInteger(value['position']) && typeof value['stream'] === 'string'
    && Array.isArray(value['events']) && value['events'].length > 0 && value['events'].every(isCloudEvent);
}

/** An unversioned record as the log writes it. */
function isUnversionedRecord(value: unknown): value is UnversionedRecord {
  return isRecord(value) && value['type'] === 'unversioned' && Number.isInteger(value['position'])
    && Array.isArray(value['events']) && value['events'].length > 0 && value['events'].every(isCloudEvent);
}

const isEventsRecord = (value: unknown): value is EventsRecord => isAppendRecord(value) || isUnversionedRecord(value);

function isIdsRecord(value: unknown): value is IdsRecord {
  return isRecord(value) && value['type'] === 'ids' && typeof value['kind'] === 'string' && Number.isInteger(value['upTo']);
}

/** Intact checksums but inconsistent content means a bug or a foreign writer, never a crash: refuse rather than truncate. */
function applyLoaded({ payload, at, where }: ScannedRecord, index: LogIndex, reservedIds: Map<string, number>): void {
  if (isAppendRecord(payload)) {
    const { position, stream, events } = payload;
    if (position !== index.positions + 1) throw new Error(`${where}: position ${position}, expected ${index.positions + 1}`);
    let positions = index.streams.get(stream);
    if (!positions) index.streams.set(stream, (positions = []));
    for (const event of events) {
      if (event.subject !== stream || event.streamversion !== positions.length + 1) {
        throw new Error(`${where}: event of ${event.subject} v${event.streamversion} does not continue stream ${stream} at v${positions.length}`);
      }
      positions.push(++index.positions);
    }
    index.starts.push(at.offset);
    index.lengths.push(at.length);
    index.firstPositions.push(position);
  } else if (isUnversionedRecord(payload)) {
    const { position, events } = payload;
    if (position !== index.positions + 1) throw new Error(`${where}: position ${position}, expected ${index.positions + 1}`);
    for (const event of events) {
      if (event.subject === '' || event.streamversion !== 0) {
        throw new Error(`${where}: unversioned event of ${event.subject} has streamversion ${event.streamversion}`);
      }
    }
    index.positions += events.length;
    index.starts.push(at.offset);
    index.lengths.push(at.length);
    index.firstPositions.push(position);
  } else if (isIdsRecord(payload)) {
    reservedIds.set(payload.kind, Math.max(payload.upTo, reservedIds.get(payload.kind) ?? 0));
  } else {
    const type = isRecord(payload) ? payload['type'] : undefined;
    throw new Error(`${where}: ${type === 'append' || type === 'unversioned' || type === 'ids' ? `malformed ${type} record` : `unknown record type ${String(type)}`}`);
  }
}

function deepFreeze<T>(value: T): T {
  if (isRecord(value) && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze(value[key]);
  }
  return value;
}
