import { randomUUID } from 'node:crypto';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Begun, CompletedKey, IdempotencyStore } from './port.ts';

/*
 * The embedded adapter: completed keys in memory and in one append-only file, `idempotency.log`,
 * of lines `<crc32 as 8 hex digits> <json>\n` (json: {k, f, a, x}: key, fingerprint, answer,
 * expiresAt), each appended and fsynced before `complete` resolves, so an answer a client may have
 * seen survives a crash. Keys in flight live in memory only: they belong to this process, and a
 * restart ends every request that held one. Opening, and a compaction every `compactEveryMs`
 * while it runs (as the MongoDB store sweeps), drop expired keys from memory and rewrite the file
 * once at least half of it is dead (a new file, fsynced, renamed over the old one, its directory
 * fsynced), so memory and disk stay about one day of keyed writes, however long the process runs.
 *
 * A torn last line (a crash mid-append, never acknowledged) is dropped; damage anywhere else
 * refuses to open, as the claim store does.
 */

const FILE = 'idempotency.log';

interface Line { k: string; f: string; a: CompletedKey['answer']; x: number }

type Slot = { state: 'in_flight'; token: string; leaseUntil: number } | ({ state: 'done' } & CompletedKey);

const encode = (line: Line): Buffer => {
  const json = JSON.stringify(line);
  return Buffer.from(`${crc32(json).toString(16).padStart(8, '0')} ${json}\n`);
};

const decode = (text: string): Line | null => {
  const json = text.slice(9);
  if (text[8] !== ' ' || crc32(json).toString(16).padStart(8, '0') !== text.slice(0, 8)) return null;
  try {
    return JSON.parse(json) as Line;
  } catch {
    return null;
  }
};

const openPaths = new Set<string>();

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

/** The file's lines worth keeping: one per answer not yet expired. */
const liveLines = (slots: Map<string, Slot>): Buffer[] =>
  [...slots].flatMap(([k, s]) => (s.state === 'done' ? [encode({ k, f: s.fingerprint, a: s.answer, x: s.expiresAt })] : []));

/** A rewrite is worth it once at least half the file is dead (and always when only dead lines are left). */
const worthRewriting = (lines: number, live: number): boolean => lines > live && lines - live >= live;

/** Opens (creating if needed) the durable embedded IdempotencyStore under `dir`. */
export async function openFileIdempotencyStore(dir: string, options: FileIdempotencyOptions = {}): Promise<FileIdempotencyStore> {
  const now = options.now ?? Date.now;
  const path = resolve(dir, FILE);
  if (openPaths.has(path)) throw new Error(`idempotency store ${path} is already open in this process`);
  openPaths.add(path);
  const slots = new Map<string, Slot>();
  let handle: FileHandle;
  /** Lines in the file (each a kept answer, live or not). */
  let lines: number;
  try {
    await mkdir(dir, { recursive: true });
    ({ handle, lines } = await load(dir, path, slots, now()));
  } catch (error) {
    openPaths.delete(path);
    throw error;
  }
  let closed = false;
  // Appends one after another; a failed append poisons the store (the file may hold a torn line).
  let tail: Promise<void> = Promise.resolve();
  let broken: unknown = null;

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

  /** Runs in turn with the appends, so no answer is written to a file being replaced. */
  const compact = async (): Promise<void> => {
    const run = tail.then(async () => {
      if (broken !== null || closed) return;
      const at = now();
      for (const key of [...slots.keys()]) live(key, at);
      const kept = liveLines(slots);
      if (!worthRewriting(lines, kept.length)) return;
      await rewrite(dir, path, kept);
      // The old handle writes to a file no longer there: until the new one is open, nothing may append.
      try {
        const fresh = await open(path, 'a');
        await handle.close().catch(() => {});
        handle = fresh;
        lines = kept.length;
      } catch (error) {
        broken = error;
        throw error;
      }
    });
    tail = run.catch(() => {});
    await run;
  };
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
      if (broken !== null) throw new Error('idempotency store failed to write and must be reopened', { cause: broken });
      const line = encode({ k: key, f: completed.fingerprint, a: completed.answer, x: completed.expiresAt });
      const write = tail.then(async () => {
        if (broken !== null) throw new Error('idempotency store failed to write and must be reopened', { cause: broken });
        try {
          await handle.appendFile(line);
          await handle.sync();
        } catch (error) {
          broken = error;
          throw error;
        }
        lines++;
        // The owner may have lost the key while the line was written only if it was abandoned by
        // itself, which it does not do while completing. Set here, in turn, so that a compaction
        // queued behind this append finds the answer it must keep.
        slots.set(key, { state: 'done', ...completed });
      });
      tail = write.catch(() => {});
      await write;
      return true;
    },

    async abandon(key, token): Promise<void> {
      if (owned(key, token)) slots.delete(key);
    },

    compact,

    size: () => ({ keys: slots.size, lines }),

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      clearInterval(compacting);
      await tail;
      try {
        await handle.close();
      } finally {
        openPaths.delete(path);
      }
    },
  };
}

async function fsyncDir(dir: string): Promise<void> {
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

/** Replaces the file at `path` by `kept`, crash-safely: a new file, fsynced, renamed over it, the directory fsynced. */
async function rewrite(dir: string, path: string, kept: Buffer[]): Promise<void> {
  const fresh = `${path}.${process.pid}.tmp`;
  try {
    const out = await open(fresh, 'w');
    try {
      await out.writeFile(Buffer.concat(kept));
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(fresh, path);
    await fsyncDir(dir);
  } finally {
    await rm(fresh, { force: true });
  }
}

/** Reads the log into `slots` (unexpired keys only), compacting it when most lines are dead; returns an append handle and its line count. */
async function load(dir: string, path: string, slots: Map<string, Slot>, at: number): Promise<{ handle: FileHandle; lines: number }> {
  await (await open(path, 'a+')).close();
  const text = await (async () => {
    const reader = await open(path, 'r');
    try {
      return await reader.readFile('utf8');
    } finally {
      await reader.close();
    }
  })();
  const lines = text.split('\n');
  // Text after the last newline is a torn append (never acknowledged).
  const torn = lines.pop() ?? '';
  let total = 0;
  for (const [index, raw] of lines.entries()) {
    const line = decode(raw);
    if (line === null) {
      if (index === lines.length - 1) break;
      throw new Error(`idempotency store ${path} is corrupt at line ${index + 1}; refusing to open`);
    }
    total++;
    if (line.x > at) slots.set(line.k, { state: 'done', fingerprint: line.f, answer: line.a, expiresAt: line.x });
    else slots.delete(line.k);
  }
  const damagedTail = torn !== '' || (lines.length > 0 && decode(lines[lines.length - 1] ?? '') === null);
  if (damagedTail || worthRewriting(total, slots.size)) {
    await rewrite(dir, path, liveLines(slots));
    total = slots.size;
  }
  return { handle: await open(path, 'a'), lines: total };
}
