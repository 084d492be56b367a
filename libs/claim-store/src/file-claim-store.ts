import { join } from 'node:path';
import { openDurableLog, type ScannedRecord } from '@docshare/durable-log';
import type { ClaimStore } from './port.ts';

/*
 * One durable log (libs/durable-log), `claims.log`, whose records are arrays of [scope, key,
 * value] triples: one record for the claims made in one tick, not one per claim, and the log
 * group-commits the records queued while a write is in flight. The log's rules apply: a torn last
 * line is cut off at open, damage before it refuses to open.
 *
 * A release (account erasure) must take the claim's bytes off the disk, not just append a
 * tombstone: it compacts the log (the durable claims written to a new file, fsynced, renamed over
 * the old one, the directory fsynced). The compaction runs in turn with the log's writes, so a
 * claim made meanwhile is appended to the new file after it; claims and reads of the key being
 * released wait for the release to settle.
 */

const FILE = 'claims.log';

interface Entry {
  /** The value as JSON: stored serialised so callers can never mutate what is stored. */
  json: string;
  /** Set while the claim awaits its fsync; settles once durable (or rejects, undone). */
  durable?: Promise<void>;
}
/** The record a compaction writes for the durable claims: one [scope, key, value] triple each. */
const tripleOf = (scope: string, key: string, json: string): string => `[${JSON.stringify(scope)},${JSON.stringify(key)},${json}]`;
/** Triples per record when compacting (a record is read whole at open). */
const CLAIMS_PER_RECORD = 256;
interface Pending { scope: string; key: string; entry: Entry; resolve: () => void; reject: (err: unknown) => void }

type Triple = [string, string, unknown];
const isTriple = (value: unknown): value is Triple =>
  Array.isArray(value) && value.length === 3 && typeof value[0] === 'string' && typeof value[1] === 'string';

/** Opens (creating if needed) a durable ClaimStore kept as an append-only log under `dir`. */
export async function openFileClaimStore(dir: string): Promise<ClaimStore> {
  const claims = new Map<string, Map<string, Entry>>();
  const load = ({ payload, where }: ScannedRecord): void => {
    if (!Array.isArray(payload) || !payload.every(isTriple)) throw new Error(`${where}: not a list of [scope, key, value] claims`);
    for (const [scope, key, value] of payload) {
      let inScope = claims.get(scope);
      if (inScope === undefined) claims.set(scope, (inScope = new Map()));
      // First claim wins, as it did when the lines were written.
      if (!inScope.has(key)) inScope.set(key, { json: JSON.stringify(value) });
    }
  };
  // A failed write is cut back and only its claims are undone: the store goes on (the log stops if it cannot cut back).
  const log = await openDurableLog(join(dir, FILE), load, { name: 'claim store', keepWritingAfterFailure: true });

  /** Claims made in this tick: they go to the log as one record. */
  let tick: Pending[] | null = null;
  let closed = false;

  const lookup = (scope: string, key: string): Entry | undefined => claims.get(scope)?.get(key);

  /** Releases in progress, by (scope, key): claims and reads of that key wait for them. */
  const releases = new Map<string, Promise<boolean>>();
  const releaseId = (scope: string, key: string): string => JSON.stringify([scope, key]);

  /** The compacted file's records: every durable claim (one still on its way is appended after them). */
  function* durableRecords(): Iterable<string> {
    let chunk: string[] = [];
    for (const [scope, inScope] of claims) {
      for (const [key, entry] of inScope) {
        if (entry.durable !== undefined) continue;
        chunk.push(tripleOf(scope, key, entry.json));
        if (chunk.length === CLAIMS_PER_RECORD) {
          yield `[${chunk.join(',')}]`;
          chunk = [];
        }
      }
    }
    if (chunk.length > 0) yield `[${chunk.join(',')}]`;
  }

  const forget = (scope: string, key: string, entry: Entry): void => {
    const inScope = claims.get(scope);
    if (inScope?.get(key) === entry) inScope.delete(key);
  };

  const write = (batch: Pending[]): void => {
    const record = `[${batch.map((p) => tripleOf(p.scope, p.key, p.entry.json)).join(',')}]`;
    // Marked durable as soon as it is, before the log runs anything else (a compaction): the
    // compaction then keeps exactly the claims already in the file.
    const durable = (): void => {
      for (const p of batch) {
        delete p.entry.durable;
        p.resolve();
      }
    };
    log.append(record, durable).then(
      () => {},
      (err: unknown) => {
        for (const p of batch) {
          forget(p.scope, p.key, p.entry);
          p.reject(err);
        }
      },
    );
  };

  const claim = async <T>(scope: string, key: string, value: T): Promise<{ created: boolean; value: T }> => {
    // Everything up to the first await runs synchronously, so concurrent claims of one key are
    // decided here in call order without any lock.
    if (closed) throw new Error('claim store is closed');
    log.assertWritable();
    if (typeof scope !== 'string' || typeof key !== 'string') throw new TypeError('claim scope and key must be strings');
    const releasing = releases.get(releaseId(scope, key));
    if (releasing !== undefined) {
      await releasing.catch(() => {});
      return claim(scope, key, value);
    }
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
      if (tick === null) {
        const batch: Pending[] = (tick = []);
        queueMicrotask(() => {
          tick = null;
          write(batch);
        });
      }
      tick.push({ scope, key, entry, resolve, reject });
    });
    let inScope = claims.get(scope);
    if (inScope === undefined) claims.set(scope, (inScope = new Map()));
    inScope.set(key, entry);
    await entry.durable;
    return { created: true, value: JSON.parse(json) as T };
  };

  const get = async <T>(scope: string, key: string): Promise<T | null> => {
    if (closed) throw new Error('claim store is closed');
    const releasing = releases.get(releaseId(scope, key));
    if (releasing !== undefined) {
      await releasing.catch(() => {});
      return get(scope, key);
    }
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

  const release = async (scope: string, key: string): Promise<boolean> => {
    if (closed) throw new Error('claim store is closed');
    log.assertWritable();
    if (typeof scope !== 'string' || typeof key !== 'string') throw new TypeError('claim scope and key must be strings');
    const id = releaseId(scope, key);
    const inProgress = releases.get(id);
    if (inProgress !== undefined) {
      // Released by the other call once it settles (then there is nothing left), or still there if it failed.
      await inProgress.catch(() => {});
      return release(scope, key);
    }
    const entry = lookup(scope, key);
    if (entry === undefined) return false;
    if (entry.durable !== undefined) {
      try {
        await entry.durable;
      } catch {
        // Its write failed and was undone; a waiting claimer may have taken the key since.
      }
      return release(scope, key);
    }
    // From here to the map's entry being set nothing awaits: no claim or read slips in between.
    forget(scope, key, entry);
    const run = (async () => log.compact(durableRecords))().then(
      () => true,
      (error: unknown) => {
        // The old file, claim included, is still in place: so is the claim (nobody took the key: its claimers waited).
        let inScope = claims.get(scope);
        if (inScope === undefined) claims.set(scope, (inScope = new Map()));
        inScope.set(key, entry);
        throw error;
      },
    );
    releases.set(id, run);
    try {
      return await run;
    } finally {
      releases.delete(id);
    }
  };

  return {
    claim,

    get,

    release,

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      // Claims already accepted finish their write; their callers are waiting on it. So do
      // releases: a log that is closing skips a compaction, which would leave the bytes behind.
      await Promise.resolve();
      await Promise.allSettled([...releases.values()]);
      await log.close();
    },
  };
}
