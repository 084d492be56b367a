import { mkdir, open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { crc32 } from 'node:zlib';
import type { ClaimStore } from './port.ts';

/*
 * One append-only file, `claims.log`, of lines `<crc32 as 8 hex digits> <json>\n`, where json is
 * an array of [scope, key, value] triples: one line per group commit, not per claim. Making a
 * whole batch one line means a crash mid-write can only ever damage the last line, which is
 * what lets open() tell "torn tail, drop it" from "damage in the middle, refuse to start".
 */

const FILE = 'claims.log';

interface Entry {
  /** The value as JSON: stored serialised so callers can never mutate what is stored. */
  json: string;
  /** Set while the claim awaits its fsync; settles once durable (or rejects, undone). */
  durable?: Promise<void>;
}
interface Pending { scope: string; key: string; entry: Entry; resolve: () => void; reject: (err: unknown) => void }

// Two live stores on one file would interleave appends; catch that within a process at least.
const openPaths = new Set<string>();

/** Opens (creating if needed) a durable ClaimStore kept as an append-only log under `dir`. */
export async function openFileClaimStore(dir: string): Promise<ClaimStore> {
  const path = resolve(dir, FILE);
  if (openPaths.has(path)) throw new Error(`claim store ${path} is already open in this process`);
  openPaths.add(path);
  let handle: FileHandle;
  let claims: Map<string, Map<string, Entry>>;
  let fileLen: number;
  try {
    await mkdir(dir, { recursive: true });
    ({ handle, claims, fileLen } = await load(dir, path));
  } catch (err) {
    openPaths.delete(path);
    throw err;
  }

  let queue: Pending[] = [];
  let flushing: Promise<void> | null = null;
  let closed = false;
  // After a write fails and the file cannot be put back to its last good length, appending more
  // would bury damage mid-file; refuse further claims until the process reopens the store.
  let broken: unknown = null;

  const lookup = (scope: string, key: string): Entry | undefined => claims.get(scope)?.get(key);

  const forget = (scope: string, key: string, entry: Entry): void => {
    const inScope = claims.get(scope);
    if (inScope?.get(key) === entry) inScope.delete(key);
  };

  const fail = (p: Pending, err: unknown): void => {
    forget(p.scope, p.key, p.entry);
    p.reject(err);
  };

  const flush = async (): Promise<void> => {
    // Let every claim made in the current tick join this batch: one write and fsync for all.
    await Promise.resolve();
    try {
      while (queue.length > 0) {
        const batch = queue;
        queue = [];
        if (broken !== null) {
          for (const p of batch) fail(p, broken);
          continue;
        }
        const line = encodeLine(`[${batch.map((p) => `[${JSON.stringify(p.scope)},${JSON.stringify(p.key)},${p.entry.json}]`).join(',')}]`);
        try {
          await writeFully(handle, line, fileLen);
          await handle.sync();
          fileLen += line.length;
          for (const p of batch) {
            delete p.entry.durable;
            p.resolve();
          }
        } catch (err) {
          for (const p of batch) fail(p, err);
          try {
            // Bytes written but not made durable must go too: otherwise a reopen would revive
            // claims that callers were told failed, and later appends would land after garbage.
            await handle.truncate(fileLen);
            await handle.sync();
          } catch (truncateErr) {
            broken = truncateErr;
          }
        }
      }
    } finally {
      // Cleared in the same synchronous step as the last empty-queue check, so a claim queued
      // after it always starts a new flush rather than waiting on one that has ended.
      flushing = null;
    }
  };

  const claim = async <T>(scope: string, key: string, value: T): Promise<{ created: boolean; value: T }> => {
    // Everything up to the first await runs synchronously, so concurrent claims of one key are
    // decided here in call order without any lock.
    if (closed) throw new Error('claim store is closed');
    if (broken !== null) throw new Error('claim store failed to write and must be reopened', { cause: broken });
    if (typeof scope !== 'string' || typeof key !== 'string') throw new TypeError('claim scope and key must be strings');
    const existing = lookup(scope, key);
    if (existing !== undefined) {
      if (existing.durable === undefined) return { created: false, value: JSON.parse(existing.json) as T };
      try {
        await existing.durable;
      } catch {
        // The first claimer's write failed and was undone: the key is free again, try for it.
        return claim(scope, key, value);
      }
      return { created: false, value: JSON.parse(existing.json) as T };
    }
    const json = JSON.stringify(value) as string | undefined;
    if (json === undefined) throw new TypeError('claim value must be JSON-serialisable');
    const entry: Entry = { json };
    entry.durable = new Promise<void>((resolve, reject) => {
      queue.push({ scope, key, entry, resolve, reject });
    });
    let inScope = claims.get(scope);
    if (inScope === undefined) claims.set(scope, (inScope = new Map()));
    inScope.set(key, entry);
    flushing ??= flush();
    await entry.durable;
    return { created: true, value: JSON.parse(json) as T };
  };

  const get = async <T>(scope: string, key: string): Promise<T | null> => {
    if (closed) throw new Error('claim store is closed');
    const entry = lookup(scope, key);
    if (entry === undefined) return null;
    // A claim still on its way to disk is not reported until it is: its write may yet fail.
    if (entry.durable !== undefined) {
      try {
        await entry.durable;
      } catch {
        // Undone; a waiting claimer may have taken the key meanwhile.
        return get(scope, key);
      }
    }
    return JSON.parse(entry.json) as T;
  };

  return {
    claim,

    get,

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      // Claims already accepted finish their write; their callers are waiting on it.
      while (flushing !== null) await flushing.catch(() => {});
      try {
        await handle.close();
      } finally {
        openPaths.delete(path);
      }
    },
  };
}

/** Reads the log into memory, dropping a torn last line; throws on damage before it. */
async function load(
  dir: string,
  path: string,
): Promise<{ handle: FileHandle; claims: Map<string, Map<string, Entry>>; fileLen: number }> {
  // 'a+' creates the file if missing without truncating; writes below use explicit positions on
  // a second, non-append handle because O_APPEND would ignore them.
  await (await open(path, 'a+')).close();
  const handle = await open(path, 'r+');
  try {
    await fsyncDir(dir);
    const bytes = await handle.readFile();
    const claims = new Map<string, Map<string, Entry>>();
    let at = 0;
    let lineNo = 0;
    while (at < bytes.length) {
      lineNo++;
      const nl = bytes.indexOf(0x0a, at);
      const end = nl === -1 ? bytes.length : nl;
      const triples = nl === -1 ? null : decodeLine(bytes.subarray(at, end));
      if (triples === null) {
        // Unterminated or failing its CRC. Fine as the very last line (a write cut short by a
        // crash, never acknowledged); anywhere else it is damage we must not paper over.
        if (end + 1 < bytes.length) {
          throw new Error(`claim store ${path} is corrupt at line ${lineNo} (byte ${at}); refusing to open`);
        }
        await handle.truncate(at);
        await handle.sync();
        return { handle, claims, fileLen: at };
      }
      for (const [scope, key, value] of triples) {
        let inScope = claims.get(scope);
        if (inScope === undefined) claims.set(scope, (inScope = new Map()));
        // First claim wins, as it did when the lines were written.
        if (!inScope.has(key)) inScope.set(key, { json: JSON.stringify(value) });
      }
      at = end + 1;
    }
    return { handle, claims, fileLen: bytes.length };
  } catch (err) {
    await handle.close().catch(() => {});
    throw err;
  }
}

function encodeLine(json: string): Buffer {
  const body = Buffer.from(json, 'utf8');
  const crc = crc32(body).toString(16).padStart(8, '0');
  return Buffer.concat([Buffer.from(`${crc} `, 'latin1'), body, Buffer.from('\n', 'latin1')]);
}

/** The triples of a line, or null when it fails its checksum or shape. */
function decodeLine(line: Buffer): Array<[string, string, unknown]> | null {
  if (line.length < 10 || line[8] !== 0x20) return null;
  const crc = line.subarray(0, 8).toString('latin1');
  const body = line.subarray(9);
  if (!/^[0-9a-f]{8}$/.test(crc) || parseInt(crc, 16) !== crc32(body)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed)) return null;
  for (const t of parsed) {
    if (!Array.isArray(t) || t.length !== 3 || typeof t[0] !== 'string' || typeof t[1] !== 'string') return null;
  }
  return parsed as Array<[string, string, unknown]>;
}

async function writeFully(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, position + done);
    done += bytesWritten;
  }
}

// Creating the file is only durable once its directory entry is fsynced.
async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
