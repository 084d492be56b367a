import { MongoBulkWriteError, MongoServerError } from 'mongodb';
import type { Collection, Db, Document } from 'mongodb';
import { retrying, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { VersionConflict } from './port.ts';
import type { AppendResult, EventStore } from './port.ts';
import { appendListeners, safeWarning } from './append-listeners.ts';
import { idAllocator, type IdRange } from './id-blocks.ts';
import { parseEvent, parseEvents } from './parse-events.ts';
import { validateAppend, validateUnversioned } from './validate.ts';

/*
 * The event store on MongoDB (and on its stand-in, FerretDB 2 on PostgreSQL + DocumentDB; see
 * docs/mongodb.md). It relies only on what both guarantee: a single-document insert is atomic,
 * and a unique index lets exactly one of several concurrent inserts of one key through. No
 * transactions (the stand-in accepts one and fails its commit), no change streams (it has none).
 * A duplicate key is told by its code (11000) alone: MongoDB names the index that refused it
 * (`keyPattern`), the stand-in does not, so where the store must know which index refused an
 * insert it looks at what is stored instead, on both servers.
 *
 * `events`: the log, and the outbox. ONE document per append, keyed by global position:
 *   _id           String(position)   the position of the append's first event
 *   position      that position as a number
 *   count         events in the append; the next append starts at position + count
 *   stream        the stream id
 *   firstVersion  streamversion of the first event; unique with `stream`
 *   version       the stream's version after the append; unique with `stream`
 *   events        the CloudEvents, as documents: exactly what JSON.parse(JSON.stringify(events))
 *                 gives, which is what the file log gives back. An append whose JSON a document
 *                 cannot hold exactly (a lone surrogate, a key starting with '$' or holding NUL,
 *                 nesting deeper than MAX_EVENT_DEPTH) keeps it as JSON text, as every append
 *                 stored before events were documents does; readers take both (eventsOf)
 *   appendedAt    when it was stored
 * One insert decides the append: it takes the next free position (`_id`) and the stream's next
 * versions (`stream`+`firstVersion` unique) at once, or neither. A multi-event append is one
 * document, so no crash and no concurrent writer can leave half of one behind.
 *
 * An unversioned append (`appendUnversioned`: events of no stream, `streamversion` 0) is one such
 * document too, with `stream` '' (UNVERSIONED: never a stream, the port refuses an empty stream id)
 * and `firstVersion` = `version` = minus its position: unique with '' because positions are, and
 * never a stream's version, so it satisfies both unique indexes as they are (no index changes, no
 * migration) and can only lose the race for a position, never conflict. It has no `stream_index`
 * entries: readStream never returns it, while readAll and the outbox read it like any append.
 *
 * Positions are gap-free: a writer inserts at the position after the newest append it knows of
 * and, when another writer took that position first, steps over that append and tries again.
 * So a reader that sees position n sees every position below it: the relay can read the log
 * from its checkpoint without missing an append still being written.
 *
 * `stream_index`: one document per event of a stream, keyed "<stream>:<version>", with the event (in its
 * append's form), its position and the version its append reached. Reading a stream and checking
 * its head are lookups by `_id` there. It is derived from `events`: the writer inserts it after
 * the append and before acknowledging; were the writer to die in between, the outbox relay
 * (which inserts the index entries of every append it passes) or the next conflicting append
 * fills it in. Inserting an entry that exists is a no-op, and every writer of an entry writes the
 * same thing.
 *
 * `id_blocks`: `nextId` hands out ids from blocks reserved by inserting `{ _id: "<kind>:<n>" }`:
 * the unique `_id` gives every block to exactly one store, whichever replica it runs in.
 */

const EVENTS = 'events';
/** The `stream` of an unversioned append (see the header): no stream id is empty. */
export const UNVERSIONED = '';
const STREAM_INDEX = 'stream_index';
const ID_BLOCKS = 'id_blocks';
/** Appends per insertMany of one group commit. */
const MAX_BATCH = 256;
/** Lookups issued at once when reading a stream (the window doubles from 1 up to this). */
const MAX_WINDOW = 64;
/** Driver limits are int32s. */
const MAX_LIMIT = 2 ** 31 - 1;
/** Times a batch may lose the race for a position before its appends fail. */
const MAX_POSITION_RACES = 1000;
/** Streams whose newest known append end a store remembers. */
const KNOWN_ENDS = 10_000;

/** An `events` document: one append. */
export interface AppendDoc {
  _id: string;
  position: number;
  count: number;
  stream: string;
  firstVersion: number;
  version: number;
  /** The events as documents, or as JSON text (see the header). */
  events: CloudEvent[] | string;
  appendedAt: Date;
}

/** A `stream_index` document: one event of a stream. */
export interface StreamIndexDoc {
  _id: string;
  stream: string;
  version: number;
  position: number;
  /** The version the event's append reached: a stream is only "at" a version that ends an append. */
  last: number;
  /** The event as a document, or as JSON text when its append keeps its events so. */
  event: CloudEvent | string;
}

interface IdBlockDoc {
  _id: string;
  kind: string;
  block: number;
  /** The block holds the ids after the previous block's `upTo`, up to this one. */
  upTo: number;
  reservedAt: Date;
}

/** What the outbox relay reads: the log from a checkpoint. */
export interface MongoOutbox {
  /**
   * The appends after `afterPosition` (which must end an append, as every position the relay
   * checkpoints does), whole and in global order: up to `limit` events, but at least one append
   * when there is one. Fills in any stream-index entries of theirs that are missing.
   */
  readAfter(afterPosition: number, limit: number): Promise<StoredEvent<CloudEvent>[]>;
  /** Position of the newest event (0 when empty). */
  lastPosition(): Promise<number>;
  /** When the append right after `afterPosition` (an append's end) was stored; null when there is none (read only). */
  appendedAfter(afterPosition: number): Promise<Date | null>;
}

export type MongoEventStore = EventStore & {
  /** Calls `listener` with the new last position after every append batch; returns an unsubscribe. */
  onAppend(listener: (lastPosition: number) => void): () => void;
};

export interface MongoEventStoreOptions {
  /** Ids reserved per `id_blocks` document (default 20). Unused ids of a block are lost on close: gaps are allowed. */
  idBlockSize?: number;
  /** Told about recoverable trouble (a throwing listener, a stream index left to the relay). */
  onWarning?: (message: string) => void;
  /**
   * An insert that failed after it may have reached the server (the connection dropped, the
   * server died or stopped answering) has an unknown outcome. The store then reads back whether
   * it was stored, retrying while the server is unreachable, for up to this long (default 30 000
   * ms): stored → the append resolves as any other; not stored → it rejects with the original
   * (transient, a 503) error, safe to retry; still unknown → `AppendOutcomeUnknown`, never a
   * transient error, because a client retrying it could record the command twice.
   */
  outcomeTimeoutMs?: number;
  /** Pause between read-backs of an unknown outcome (default 250 ms). */
  outcomeRetryMs?: number;
}

/**
 * An append whose insert may or may not be stored, and the store could not find out in time.
 * Not a transient error: answering it as "try again" could duplicate the command.
 */
export class AppendOutcomeUnknown extends Error {
  override readonly name = 'AppendOutcomeUnknown';
  /** What the insert met. Deliberately not `cause`: that would make this error look transient. */
  readonly failure: unknown;
  constructor(stream: string, failure: unknown) {
    super(`append to ${stream}: the database did not say whether it was stored (${String(failure)})`);
    this.failure = failure;
  }
}

/**
 * Errors raised before an operation is sent (no server to send it to, the pool or client
 * closed): nothing was written. With retryable writes off (docs-command's connection), server
 * selection only ever precedes the one attempt.
 */
const NOT_SENT = new Set(['MongoServerSelectionError', 'MongoNotConnectedError', 'MongoTopologyClosedError', 'PoolClearedError']);
export const neverSent = (error: unknown, depth = 0): boolean => {
  if (typeof error !== 'object' || error === null || depth > 4) return false;
  const field = (key: string): unknown => (key in error ? Reflect.get(error, key) : undefined);
  const name = field('name');
  if (typeof name === 'string' && NOT_SENT.has(name)) return true;
  // A connection that failed while being opened (TCP connect refused or reset, or before its
  // handshake) carried nothing. insertMany wraps that MongoNetworkError in a MongoBulkWriteError
  // (as `errorResponse`), whose `cause` is the socket's error.
  if (field('beforeHandshake') === true || field('syscall') === 'connect') return true;
  const response = field('errorResponse');
  const cause = field('cause');
  return (response !== error && neverSent(response, depth + 1)) || (cause !== error && neverSent(cause, depth + 1));
};

/** Secondary indexes of `events`. The stream ones are what makes a conflicting append fail. */
export const EVENT_INDEXES = [
  { key: { stream: 1, firstVersion: 1 }, name: 'stream_first_version', unique: true },
  { key: { stream: 1, version: 1 }, name: 'stream_version', unique: true },
  { key: { position: 1 }, name: 'position', unique: true },
] as const;

const isDuplicateKey = (error: unknown): boolean => error instanceof MongoServerError && error.code === 11000;

const indexId = (stream: string, version: number): string => `${stream}:${version}`;

/** The first write error of a bulk write, if the error is one. */
function firstWriteError(error: unknown): { index: number; code: number | undefined } | undefined {
  if (!(error instanceof MongoBulkWriteError)) return undefined;
  const [first] = [error.writeErrors].flat();
  return first ? { index: first.index, code: first.code } : undefined;
}

/** Creates the missing ones of `indexes`, in one command. */
async function ensureIndexes<T extends Document>(
  collection: Collection<T>,
  indexes: readonly { key: Readonly<Record<string, 1 | -1>>; name: string; unique?: boolean }[],
): Promise<void> {
  const existing = new Set<string>();
  try {
    for (const index of await collection.indexes()) if (typeof index.name === 'string') existing.add(index.name);
  } catch (error) {
    // A collection that does not exist yet has no indexes.
    if (!(error instanceof MongoServerError && error.code === 26)) throw error;
  }
  const missing = indexes.filter((index) => !existing.has(index.name));
  if (missing.length === 0) return;
  await collection.createIndexes(missing.map((index) => ({ key: { ...index.key }, name: index.name, unique: index.unique ?? false })));
}

/** Nesting (objects and arrays) an event may have and still be stored as a document (MongoDB allows 100 levels in all). */
export const MAX_EVENT_DEPTH = 64;

/**
 * Whether `value` (JSON.parse's output) comes back from BSON exactly as it is: strings without
 * lone surrogates (BSON holds UTF-8), keys that neither start with '$' (the driver reads
 * `{ $ref, $id }` back as a DBRef) nor hold NUL (BSON cannot), and at most MAX_EVENT_DEPTH levels.
 * Numbers always do (JSON.parse never gives -0), as do booleans and null.
 */
function exactInBson(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return value.isWellFormed();
  if (value === null || typeof value !== 'object') return true;
  if (depth >= MAX_EVENT_DEPTH) return false;
  if (Array.isArray(value)) return value.every((item) => exactInBson(item, depth + 1));
  for (const [key, item] of Object.entries(value)) {
    if (key.startsWith('$') || key.includes('\u0000') || !key.isWellFormed() || !exactInBson(item, depth + 1)) return false;
  }
  return true;
}

/** How an append stores `json` (its events' JSON text): as documents when they come back exactly, else as that text. */
function storedForm(json: string): CloudEvent[] | string {
  const events = parseEvents(json);
  return events.every((event) => exactInBson(event, 1)) ? events : json;
}

/** The events of an `events` document, either form. */
export function eventsOf(doc: Pick<AppendDoc, 'events'>): CloudEvent[] {
  return typeof doc.events === 'string' ? parseEvents(doc.events) : doc.events;
}

/** Whether two stored forms hold the same events (an append read back against the one written). */
const sameEvents = (a: CloudEvent[] | string, b: CloudEvent[] | string): boolean =>
  (typeof a === 'string' ? a : JSON.stringify(a)) === (typeof b === 'string' ? b : JSON.stringify(b));

function storedEvents(doc: AppendDoc): StoredEvent<CloudEvent>[] {
  return eventsOf(doc).map((event, i) => ({ position: doc.position + i, event }));
}

/** The stream-index entries of an append; none for an unversioned one (it belongs to no stream). */
function indexDocs(doc: AppendDoc): StreamIndexDoc[] {
  if (doc.stream === UNVERSIONED) return [];
  const text = typeof doc.events === 'string';
  return eventsOf(doc).map((event, i) => ({
    _id: indexId(doc.stream, doc.firstVersion + i),
    stream: doc.stream,
    version: doc.firstVersion + i,
    position: doc.position + i,
    last: doc.version,
    event: text ? JSON.stringify(event) : event,
  }));
}

/** Inserts the stream-index entries of `appends`; entries already there are left as they are (they hold the same). */
async function insertIndexEntries(index: Collection<StreamIndexDoc>, appends: readonly AppendDoc[]): Promise<void> {
  const docs = appends.flatMap(indexDocs);
  if (docs.length === 0) return;
  try {
    await index.insertMany(docs, { ordered: false });
  } catch (error) {
    if (!(error instanceof MongoBulkWriteError) || [error.writeErrors].flat().some((e) => e.code !== 11000)) throw error;
  }
}

/**
 * The appends from position `start` on (which must be where an append begins), whole and in order,
 * up to `limit` events (at least one append when there is any). One range query on the `position`
 * index. Stops at a gap, which only an append being inserted right now can open (positions are
 * otherwise gap-free).
 */
async function readLog(events: Collection<AppendDoc>, start: number, limit: number): Promise<AppendDoc[]> {
  const take = Math.max(1, Math.min(limit, MAX_LIMIT));
  // Bounded above: appends are gap-free, so those holding the next `take` events begin below
  // start + take (the stand-in reads a whole open range before sorting it).
  const docs = await events.find({ position: { $gte: start, $lt: start + take } }).sort({ position: 1 }).limit(take).toArray();
  const found: AppendDoc[] = [];
  let next = start;
  let taken = 0;
  for (const doc of docs) {
    if (doc.position !== next || (taken > 0 && taken + doc.count > limit)) break;
    found.push(doc);
    taken += doc.count;
    next = doc.position + doc.count;
  }
  return found;
}

/** Where the log ends, i.e. the next free position: walks on from `known`, which must be where an append begins or the end. */
async function logEnd(events: Collection<AppendDoc>, known: number): Promise<number> {
  let end = known;
  for (;;) {
    const doc = await events.findOne({ _id: String(end) }, { projection: { position: 1, count: 1 } });
    if (!doc) return end;
    end = doc.position + doc.count;
  }
}

/** How many positions one probe of `scanLogEnd` covers: far more than any append's event count. */
const END_PROBE_WINDOW = 1024;

/**
 * The next free position (used at open and after an unknown outcome). Not "the newest append by
 * `position`, descending": MongoDB reads that off the index's end, but the stand-in (DocumentDB)
 * never serves a sort in index order and scans and sorts the whole log. Positions are gap-free,
 * so an append begins in every window of END_PROBE_WINDOW positions below the end and in none
 * past it: an exponential, then binary, search of such windows (each a bounded range of the
 * `position` index) finds the last window in about 2·log2(end / window) lookups, the newest
 * append of that window is read, and `logEnd` walks on from it (which also makes the answer right
 * if some append were longer than a window).
 */
async function scanLogEnd(events: Collection<AppendDoc>): Promise<number> {
  const probe = (from: number, width = END_PROBE_WINDOW): Promise<AppendDoc | null> =>
    events.findOne({ position: { $gte: from, $lt: from + width } }, { sort: { position: -1 }, projection: { position: 1, count: 1 } });
  let low = await probe(1);
  if (!low) return 1;
  let lowAt = 1;
  let highAt = 0;
  for (let at = END_PROBE_WINDOW; ; at *= 2) {
    const found = await probe(at);
    if (!found) { highAt = at; break; }
    low = found;
    lowAt = at;
  }
  while (highAt - lowAt > END_PROBE_WINDOW) {
    const mid = Math.floor((lowAt + highAt) / 2);
    const found = await probe(mid);
    if (found) { low = found; lowAt = mid; } else highAt = mid;
  }
  const newest = (await probe(lowAt, highAt - lowAt + END_PROBE_WINDOW)) ?? low;
  return logEnd(events, newest.position + newest.count);
}

export function mongoOutbox(db: Db): MongoOutbox {
  const events = db.collection<AppendDoc>(EVENTS);
  const index = db.collection<StreamIndexDoc>(STREAM_INDEX);
  let end: number | null = null;
  return {
    async readAfter(afterPosition, limit) {
      const start = Math.max(0, afterPosition) + 1;
      // Idle relays ask this all the time: one lookup answers "nothing new".
      if (!(await events.findOne({ _id: String(start) }, { projection: { _id: 1 } }))) return [];
      const appends = await readLog(events, start, Math.max(1, Math.floor(limit)));
      // The relay passes every append: it repairs the stream index a writer that died left unwritten.
      await insertIndexEntries(index, appends);
      const last = appends.at(-1);
      if (last) end = Math.max(end ?? 0, last.position + last.count);
      return appends.flatMap(storedEvents);
    },
    async lastPosition() {
      end = await logEnd(events, end ?? (await scanLogEnd(events)));
      return end - 1;
    },
    async appendedAfter(afterPosition) {
      const doc = await events.findOne({ _id: String(Math.max(0, afterPosition) + 1) }, { projection: { appendedAt: 1 } });
      return doc ? doc.appendedAt : null;
    },
  };
}

interface PendingAppend {
  /** The stream id, or UNVERSIONED. */
  stream: string;
  /** Unused for an unversioned append. */
  expected: number;
  count: number;
  /** The events as stored (storedForm). */
  events: CloudEvent[] | string;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

/** Opens the event store on `db`, creating its indexes. `close` leaves the client open: its owner closes it. */
export async function openMongoEventStore(db: Db, options: MongoEventStoreOptions = {}): Promise<MongoEventStore> {
  const idBlockSize = options.idBlockSize ?? 20;
  if (!Number.isInteger(idBlockSize) || idBlockSize < 1) throw new Error(`idBlockSize must be a positive integer, got ${idBlockSize}`);
  const warn = safeWarning(options);
  const outcomeTimeoutMs = options.outcomeTimeoutMs ?? 30_000;
  const outcomeRetryMs = options.outcomeRetryMs ?? 250;

  const events = db.collection<AppendDoc>(EVENTS);
  const index = db.collection<StreamIndexDoc>(STREAM_INDEX);
  const idBlocks = db.collection<IdBlockDoc>(ID_BLOCKS);
  await ensureIndexes(events, EVENT_INDEXES);
  /** Where this store believes the log ends: always where an append begins or the true end. */
  let knownEnd = await scanLogEnd(events);

  let closing: Promise<void> | null = null;
  const assertOpen = (): void => {
    if (closing) throw new Error('mongo event store is closed');
  };

  const listeners = appendListeners('mongo event store', warn);

  /**
   * The stream's version when an append at `expected` conflicted, from `events` itself (the
   * `stream_version` index). Appends the stream index lacks get their entries, so the caller's
   * next read sees what it conflicted with.
   */
  const conflictVersion = async (stream: string, expected: number): Promise<number> => {
    const newer = await events.find({ stream, version: { $gt: expected } }).sort({ stream: 1, version: 1 }).toArray();
    const last = newer.at(-1);
    if (last) {
      await insertIndexEntries(index, newer);
      return last.version;
    }
    const head = await events.findOne({ stream }, { sort: { stream: -1, version: -1 }, projection: { version: 1 } });
    return head?.version ?? 0;
  };

  // Group commit: appends whose head check passed queue up; one insertMany stores them all.
  let queue: PendingAppend[] = [];
  let flushing: Promise<void> | null = null;

  const flush = async (): Promise<void> => {
    await Promise.resolve(); // lets appends issued in the same tick join the first batch
    try {
      while (queue.length > 0) {
        const batch = queue.slice(0, MAX_BATCH);
        queue = queue.slice(MAX_BATCH);
        await storeBatch(batch);
      }
    } finally {
      flushing = null;
    }
  };

  /**
   * How many of `docs` (a prefix, as an ordered insert stores them) are in the log as written
   * here, asked until the server answers or `outcomeTimeoutMs` passes (null: still unknown).
   */
  const outcomeOf = async (docs: AppendDoc[]): Promise<number | null> => {
    const deadline = Date.now() + outcomeTimeoutMs;
    const count = async (): Promise<number> => {
      const found = await events.find({ _id: { $in: docs.map((d) => d._id) } }).toArray();
      const byId = new Map(found.map((d) => [d._id, d]));
      let stored = 0;
      for (const doc of docs) {
        const there = byId.get(doc._id);
        // Another writer's append at that position is not ours.
        if (!there || there.stream !== doc.stream || there.firstVersion !== doc.firstVersion || !sameEvents(there.events, doc.events)) break;
        stored++;
      }
      return stored;
    };
    return retrying(count, {
      baseMs: outcomeRetryMs,
      capMs: outcomeRetryMs,
      delayMs: () => outcomeRetryMs,
      retryIf: () => Date.now() + outcomeRetryMs < deadline,
    }).catch(() => null);
  };

  /** Stores `batch` in order, settling every entry: resolved, VersionConflict, or the error that stopped it. */
  const storeBatch = async (batch: PendingAppend[]): Promise<void> => {
    const stored: { entry: PendingAppend; doc: AppendDoc }[] = [];
    let races = 0;
    let pending = batch;
    while (pending.length > 0) {
      let position = knownEnd;
      const appendedAt = new Date();
      const pairs = pending.map((entry): { entry: PendingAppend; doc: AppendDoc } => {
        const unversioned = entry.stream === UNVERSIONED;
        const doc: AppendDoc = {
          _id: String(position),
          position,
          count: entry.count,
          stream: entry.stream,
          firstVersion: unversioned ? -position : entry.expected + 1,
          version: unversioned ? -position : entry.expected + entry.count,
          events: entry.events,
          appendedAt,
        };
        position += entry.count;
        return { entry, doc };
      });
      const docs = pairs.map((pair) => pair.doc);

      let inserted = docs.length;
      let failure: unknown = null;
      try {
        await events.insertMany(docs, { ordered: true });
      } catch (error) {
        const writeError = firstWriteError(error);
        if (!writeError && neverSent(error)) {
          // Nothing reached the server: nothing is stored, and a retry is safe.
          for (const entry of pending) entry.reject(error);
          break;
        }
        if (!writeError) {
          // No per-document report (network trouble, server gone): which appends were stored is
          // unknown. Ask the server which of ours are there (an ordered insert stores a prefix).
          const storedCount = await outcomeOf(docs);
          if (storedCount === null) {
            for (const entry of pending) entry.reject(new AppendOutcomeUnknown(entry.stream === UNVERSIONED ? '(unversioned)' : entry.stream, error));
            knownEnd = await scanLogEnd(events).catch(() => knownEnd);
            break;
          }
          inserted = storedCount;
          if (storedCount < docs.length) {
            // The rest were not stored: safe to answer as the transient failure they met.
            for (const entry of pending.slice(storedCount)) entry.reject(error);
          }
          stored.push(...pairs.slice(0, inserted));
          knownEnd = await scanLogEnd(events).catch(() => knownEnd);
          break;
        }
        inserted = writeError.index;
        failure = writeError.code === 11000 ? 'duplicate' : error;
      }
      stored.push(...pairs.slice(0, inserted));
      const last = pairs[inserted - 1]?.doc;
      if (last) knownEnd = last.position + last.count;
      const [failed, ...rest] = pending.slice(inserted);
      if (failure === null || failed === undefined) break;

      if (failure !== 'duplicate') {
        failed.reject(failure);
        pending = rest;
        continue;
      }
      // The duplicate is either the position (another writer appended there first: step over its
      // append and retry) or the stream's next version (a conflict). Not every server names the
      // index (see the header), so look: the position is taken iff an append sits there.
      try {
        const end = await logEnd(events, knownEnd);
        if (end !== knownEnd) {
          knownEnd = end;
          if (++races > MAX_POSITION_RACES) throw new Error(`append batch lost the race for a position ${races} times`);
          pending = [failed, ...rest];
        } else if (failed.stream === UNVERSIONED) {
          // Unique by its position, which is free: not a conflict (it has no stream), whatever refused it.
          failed.reject(new Error(`unversioned append at position ${knownEnd} refused as a duplicate while the position is free`));
          pending = rest;
        } else {
          failed.reject(new VersionConflict(failed.stream, failed.expected, await conflictVersion(failed.stream, failed.expected)));
          pending = rest;
        }
      } catch (error) {
        failed.reject(error);
        pending = rest;
      }
    }

    if (stored.length === 0) return;
    try {
      await insertIndexEntries(index, stored.map((s) => s.doc));
    } catch (error) {
      // The appends are stored and will be published; the relay writes the missing entries.
      warn(`mongo event store: stream index not written for ${stored.length} appends, left to the outbox relay: ${String(error)}`);
    }
    for (const { entry, doc } of stored) {
      if (doc.stream !== UNVERSIONED) rememberEnd(doc.stream, doc.version);
      entry.resolve({ version: doc.version, position: doc.position + doc.count - 1 });
    }
    listeners.notify(knownEnd - 1);
  };

  /**
   * Per stream, a version this store has seen end an append (its own, or the end of a read).
   * Versions are never removed, so it ends an append for good: an append expecting exactly that
   * version needs no lookup to know it. Bounded; the oldest entries go first.
   */
  const knownEnds = new Map<string, number>();
  const rememberEnd = (stream: string, version: number): void => {
    knownEnds.delete(stream);
    knownEnds.set(stream, version);
    const oldest = knownEnds.keys().next();
    if (knownEnds.size > KNOWN_ENDS && !oldest.done) knownEnds.delete(oldest.value);
  };

  /** Appends begun before close: close waits for them. */
  const inFlight = new Set<Promise<unknown>>();

  const append = (streamId: string, expectedVersion: number, appended: readonly CloudEvent[]): Promise<AppendResult> => {
    try {
      assertOpen();
    } catch (error) {
      return Promise.reject(error);
    }
    const work = appendNow(streamId, expectedVersion, appended);
    const tracked = work.catch(() => undefined);
    inFlight.add(tracked);
    void tracked.then(() => inFlight.delete(tracked));
    return work;
  };

  const appendNow = async (streamId: string, expectedVersion: number, appended: readonly CloudEvent[]): Promise<AppendResult> => {
    validateAppend(streamId, expectedVersion, appended);
    const events = storedForm(JSON.stringify(appended));
    // The stream must be exactly at `expectedVersion`, and that must end an append (a version
    // inside a multi-event append, or past the head, is refused). Whether anything follows it
    // the insert itself decides: the unique stream+firstVersion refuses a second append of
    // `expectedVersion + 1`, also one made between this check and the insert.
    if (expectedVersion > 0 && knownEnds.get(streamId) !== expectedVersion) {
      const atExpected = await index.findOne({ _id: indexId(streamId, expectedVersion) }, { projection: { last: 1 } });
      if (atExpected?.last !== expectedVersion) {
        throw new VersionConflict(streamId, expectedVersion, await conflictVersion(streamId, expectedVersion));
      }
    }
    return new Promise<AppendResult>((resolve, reject) => {
      queue.push({ stream: streamId, expected: expectedVersion, count: appended.length, events, resolve, reject });
      flushing ??= flush();
    });
  };

  /** Unversioned events: no head to check, straight into the group commit with the appends. */
  const appendUnversioned = async (appended: readonly CloudEvent[]): Promise<{ position: number }> => {
    assertOpen();
    validateUnversioned(appended);
    const events = storedForm(JSON.stringify(appended));
    const work = new Promise<AppendResult>((resolve, reject) => {
      queue.push({ stream: UNVERSIONED, expected: 0, count: appended.length, events, resolve, reject });
      flushing ??= flush();
    });
    const tracked = work.catch(() => undefined);
    inFlight.add(tracked);
    void tracked.then(() => inFlight.delete(tracked));
    return { position: (await work).position };
  };

  /** Highest block number known to exist per kind. */
  const topBlocks = new Map<string, number>();

  const blockDoc = (kind: string, block: number): Promise<IdBlockDoc | null> => idBlocks.findOne({ _id: `${kind}:${block}` });

  /** The newest block of `kind` (blocks are numbered 1, 2, ... without gaps): gallops from the last one known, then bisects. */
  const topBlock = async (kind: string): Promise<IdBlockDoc | null> => {
    let low = topBlocks.get(kind) ?? 0;
    let lowDoc = low === 0 ? null : await blockDoc(kind, low);
    let step = 1;
    let high = low + step;
    let highDoc = await blockDoc(kind, high);
    while (highDoc) {
      [low, lowDoc] = [high, highDoc];
      step *= 2;
      high = low + step;
      highDoc = await blockDoc(kind, high);
    }
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      const doc = await blockDoc(kind, middle);
      if (doc) [low, lowDoc] = [middle, doc];
      else high = middle;
    }
    topBlocks.set(kind, low);
    return lowDoc;
  };

  /** Reserves the next block of `kind`: the insert of its `_id` succeeds for one store only. */
  const reserveBlock = async (kind: string): Promise<IdRange> => {
    const top = await topBlock(kind);
    const number = (top?.block ?? 0) + 1;
    const from = (top?.upTo ?? 0) + 1;
    const upTo = from + idBlockSize - 1;
    try {
      await idBlocks.insertOne({ _id: `${kind}:${number}`, kind, block: number, upTo, reservedAt: new Date() });
    } catch (error) {
      // Another store took this block first: find the new top and go on.
      if (isDuplicateKey(error)) return reserveBlock(kind);
      throw error;
    }
    topBlocks.set(kind, number);
    return { from, upTo };
  };

  const { nextId } = idAllocator(reserveBlock, assertOpen);

  /** Events of a stream after `afterVersion`, by `_id`, a widening window of lookups at a time. */
  const readStream = async (streamId: string, afterVersion = 0): Promise<StoredEvent<CloudEvent>[]> => {
    assertOpen();
    const docs: Pick<StreamIndexDoc, 'event' | 'position' | 'version' | 'last'>[] = [];
    let next = Math.max(0, Math.floor(afterVersion)) + 1;
    let window = 1;
    walk: for (;;) {
      const found = await Promise.all(
        Array.from({ length: window }, (_, i) =>
          index.findOne({ _id: indexId(streamId, next + i) }, { projection: { event: 1, position: 1, version: 1, last: 1 } })),
      );
      for (const doc of found) {
        if (!doc) break walk;
        docs.push(doc);
        next++;
      }
      window = Math.min(window * 2, MAX_WINDOW);
    }
    // Index entries of a multi-event append may be caught half written: end at the last whole append.
    let end = docs.length;
    while (end > 0 && docs[end - 1]?.last !== docs[end - 1]?.version) end--;
    const lastWhole = docs[end - 1];
    if (lastWhole) rememberEnd(streamId, lastWhole.version);
    return docs.slice(0, end).map((doc) => ({
      position: doc.position, event: typeof doc.event === 'string' ? parseEvent(doc.event) : doc.event,
    }));
  };

  return {
    readStream,
    append,
    appendUnversioned,
    async readAll(afterPosition, limit) {
      assertOpen();
      const wanted = Math.floor(limit);
      if (!(wanted > 0)) return [];
      const after = Math.max(0, Math.floor(afterPosition));
      let start = after + 1;
      if (!(await events.findOne({ _id: String(start) }, { projection: { _id: 1 } }))) {
        // Either the end of the log, or a position inside a multi-event append: start at that append.
        // Looked for in the window below `after` first (a bounded range of the index; the stand-in
        // reads a whole open range before sorting it), then anywhere (an append longer than a window).
        const holderIn = (position: Record<string, number>): Promise<AppendDoc | null> =>
          events.findOne({ position }, { sort: { position: -1 }, projection: { position: 1, count: 1 } });
        const holder = await holderIn({ $lte: after, $gt: after - END_PROBE_WINDOW }) ?? await holderIn({ $lte: after });
        if (!holder || holder.position + holder.count <= start) return [];
        start = holder.position;
      }
      const appends = await readLog(events, start, wanted + (after + 1 - start));
      return appends.flatMap(storedEvents).filter((record) => record.position > after).slice(0, wanted);
    },
    async lastPosition() {
      assertOpen();
      knownEnd = await logEnd(events, knownEnd);
      return knownEnd - 1;
    },
    nextId,
    onAppend: listeners.onAppend,
    close() {
      closing ??= (async () => {
        while (inFlight.size > 0) await Promise.all(inFlight);
        while (flushing) await flushing;
      })();
      return closing;
    },
  };
}
