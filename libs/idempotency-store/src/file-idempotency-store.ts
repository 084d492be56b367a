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
 * restart ends every request that held one. Opening drops expired keys and rewrites the file when
 * most of it is dead, so the file stays about as large as one day of keyed writes.
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

/** Opens (creating if needed) the durable embedded IdempotencyStore under `dir`. */
export async function openFileIdempotencyStore(dir: string, now: () => number = Date.now): Promise<IdempotencyStore> {
  const path = resolve(dir, FILE);
  if (openPaths.has(path)) throw new Error(`idempotency store ${path} is already open in this process`);
  openPaths.add(path);
  const slots = new Map<string, Slot>();
  let handle: FileHandle;
  try {
    await mkdir(dir, { recursive: true });
    handle = await load(dir, path, slots, now());
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
        if (broken !== null) throw broken;
        try {
          await handle.appendFile(line);
          await handle.sync();
        } catch (error) {
          broken = error;
          throw error;
        }
      });
      tail = write.catch(() => {});
      await write;
      // The owner may have lost the key while the line was written only if it was abandoned by
      // itself, which it does not do while completing; set the answer now that it is durable.
      slots.set(key, { state: 'done', ...completed });
      return true;
    },

    async abandon(key, token): Promise<void> {
      if (owned(key, token)) slots.delete(key);
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
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

/** Reads the log into `slots` (unexpired keys only), compacting it when most lines are dead; returns an append handle. */
async function load(dir: string, path: string, slots: Map<string, Slot>, at: number): Promise<FileHandle> {
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
  if (damagedTail || (total > 64 && slots.size * 2 < total)) {
    // Rewrite with the live keys only: a new file, fsynced, renamed over the old one.
    const fresh = `${path}.${process.pid}.tmp`;
    const out = await open(fresh, 'w');
    try {
      const body = [...slots].map(([k, s]) => (s.state === 'done' ? encode({ k, f: s.fingerprint, a: s.answer, x: s.expiresAt }) : Buffer.alloc(0)));
      await out.writeFile(Buffer.concat(body));
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(fresh, path);
    await fsyncDir(dir);
    await rm(fresh, { force: true });
  }
  return open(path, 'a');
}
