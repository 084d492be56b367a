import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { openDurableLog, type ScannedRecord } from '@docshare/durable-log';
import type { Begun, CompletedKey, IdempotencyStore, StoredAnswer } from './port.ts';

/*
 * The embedded adapter: completed keys in memory and in one durable log (libs/durable-log),
 * `idempotency.log`, of records {k, f, a, x} (key, fingerprint, answer, expiresAt), each fsynced
 * before `complete` resolves, so an answer a client may have seen survives a crash. Keys in
 * flight live in memory only: they belong to this process, and a restart ends every request that
 * held one. Opening, and a compaction every `compactEveryMs` while it runs (as the MongoDB store
 * sweeps), drop expired keys from memory and compact the log once at least half of it is dead,
 * so memory and disk stay about one day of keyed writes, however long the process runs.
 * `removeScope` (account erasure) compacts at once, so the removed answers leave the disk.
 *
 * The log's rules apply: a torn last line is cut off at open, damage before it refuses to open.
 */

const FILE = 'idempotency.log';

interface Line { k: string; f: string; a: CompletedKey['answer']; x: number }

type Slot = { state: 'in_flight'; token: string; leaseUntil: number } | ({ state: 'done' } & CompletedKey);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
const isAnswer = (value: unknown): value is StoredAnswer =>
  isObject(value) && typeof value['status'] === 'number' && typeof value['body'] === 'string' && isObject(value['headers'])
  && Object.values(value['headers']).every((header) => typeof header === 'string');
const isLine = (value: unknown): value is Line =>
  isObject(value) && typeof value['k'] === 'string' && typeof value['f'] === 'string' && typeof value['x'] === 'number' && isAnswer(value['a']);

/** How often a running store drops expired keys (the MongoDB store's sweep interval). */
export const COMPACT_EVERY_MS = 10 * 60_000;

export interface FileIdempotencyOptions {
  now?: () => number;
  /** Time between compactions while the store is open (default COMPACT_EVERY_MS). */
  compactEveryMs?: number;
}

/** The embedded store, with what its compaction works on in view. */
export interface FileIdempotencyStore extends IdempotencyStore {
  /** Drops expired keys from memory and, once at least half the file is dead, from disk. */
  compact(): Promise<void>;
  /** Keys held in memory (answers kept, requests in flight) and lines in the file. */
  size(): { keys: number; lines: number };
}

const encode = (line: Line): string => JSON.stringify(line);

/** The file's lines worth keeping: one per answer not yet expired. */
const liveLines = (slots: Map<string, Slot>): string[] =>
  [...slots].flatMap(([k, s]) => (s.state === 'done' ? [encode({ k, f: s.fingerprint, a: s.answer, x: s.expiresAt })] : []));

/** A rewrite is worth it once at least half the file is dead (and always when only dead lines are left). */
const worthRewriting = (lines: number, live: number): boolean => lines > live && lines - live >= live;

/** Opens (creating if needed) the durable embedded IdempotencyStore under `dir`. */
export async function openFileIdempotencyStore(dir: string, options: FileIdempotencyOptions = {}): Promise<FileIdempotencyStore> {
  const now = options.now ?? Date.now;
  const slots = new Map<string, Slot>();
  const openedAt = now();
  const load = ({ payload, where }: ScannedRecord): void => {
    if (!isLine(payload)) throw new Error(`${where}: not a stored answer`);
    if (payload.x > openedAt) slots.set(payload.k, { state: 'done', fingerprint: payload.f, answer: payload.a, expiresAt: payload.x });
    else slots.delete(payload.k);
  };
  // A failed append stops the log (the file may hold a torn line) until the store is reopened.
  const log = await openDurableLog(join(dir, FILE), load, { name: 'idempotency store' });
  let closed = false;

  const live = (key: string, at: number): Slot | undefined => {
    const slot = slots.get(key);
    if (slot === undefined) return undefined;
    const ended = slot.state === 'in_flight' ? slot.leaseUntil <= at : slot.expiresAt <= at;
    if (ended) {
      slots.delete(key);
      return undefined;
    }
    return slot;
  };
  const owned = (key: string, token: string): boolean => {
    const slot = slots.get(key);
    return slot?.state === 'in_flight' && slot.token === token;
  };
  const assertOpen = (): void => {
    if (closed) throw new Error('idempotency store is closed');
  };

  /** Compactions that take removed answers off the disk: close waits for them (a closing log skips a compaction). */
  const erasing = new Set<Promise<void>>();
  const erase = async (): Promise<void> => {
    const run = (async () => log.compact(() => liveLines(slots)))();
    erasing.add(run);
    try {
      await run;
    } finally {
      erasing.delete(run);
    }
  };

  /** Runs in turn with the appends (the log's), so no answer is written to a file being replaced. */
  const compact = async (): Promise<void> => {
    if (closed) return;
    const at = now();
    for (const key of [...slots.keys()]) live(key, at);
    if (!worthRewriting(log.size().records, liveLines(slots).length)) return;
    await log.compact(() => liveLines(slots));
  };
  try {
    await compact();
  } catch (error) {
    await log.close();
    throw error;
  }
  // A compaction that fails (a full disk) leaves the old file in place and is tried again next time.
  const compacting = setInterval(() => void compact().catch(() => {}), options.compactEveryMs ?? COMPACT_EVERY_MS);
  compacting.unref();

  return {
    async begin(key, at, leaseMs): Promise<Begun> {
      assertOpen();
      const slot = live(key, at);
      if (slot?.state === 'in_flight') return { state: 'in_flight' };
      if (slot?.state === 'done') return { state: 'done', fingerprint: slot.fingerprint, answer: slot.answer, expiresAt: slot.expiresAt };
      const token = randomUUID();
      slots.set(key, { state: 'in_flight', token, leaseUntil: at + leaseMs });
      return { state: 'started', token };
    },

    async renew(key, token, at, leaseMs): Promise<boolean> {
      assertOpen();
      const slot = slots.get(key);
      if (slot?.state !== 'in_flight' || slot.token !== token) return false;
      slot.leaseUntil = at + leaseMs;
      return true;
    },

    async complete(key, token, completed): Promise<boolean> {
      assertOpen();
      if (!owned(key, token)) return false;
      log.assertWritable();
      // Set once durable, in turn with the log's writes: a compaction queued behind this append finds the answer it must keep.
      let kept = false;
      await log.append(encode({ k: key, f: completed.fingerprint, a: completed.answer, x: completed.expiresAt }), () => {
        // Unless the key was removed (removeScope) or taken over meanwhile: then the line just
        // written must not outlive it (a reopen would load it), and the file is compacted again.
        if (!owned(key, token)) return;
        slots.set(key, { state: 'done', ...completed });
        kept = true;
      });
      if (!kept) await erase();
      return kept;
    },

    async abandon(key, token): Promise<void> {
      if (owned(key, token)) slots.delete(key);
    },

    async removeScope(prefix): Promise<number> {
      assertOpen();
      log.assertWritable();
      let answers = 0;
      for (const [key, slot] of slots) {
        if (!key.startsWith(prefix)) continue;
        if (slot.state === 'done') answers++;
        slots.delete(key);
      }
      // Always: lines of answers already expired (gone from memory, still in the file) go too.
      await erase();
      return answers;
    },

    compact,

    size: () => ({ keys: slots.size, lines: log.size().records }),

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      clearInterval(compacting);
      await Promise.allSettled([...erasing]);
      await log.close();
    },
  };
}
