import { join } from 'node:path';
import { openDurableLog, type ScannedRecord } from '@docshare/durable-log';
import type { ClaimStore } from './port.ts';

/*
 * One durable log (libs/durable-log), `claims.log`, whose records are arrays of [scope, key,
 * value] triples: one record for the claims made in one tick, not one per claim, and the log
 * group-commits the records queued while a write is in flight. The log's rules apply: a torn last
 * line is cut off at open, damage before it refuses to open.
 */

const FILE = 'claims.log';

interface Entry {
  /** The value as JSON: stored serialised so callers can never mutate what is stored. */
  json: string;
  /** Set while the claim awaits its fsync; settles once durable (or rejects, undone). */
  durable?: Promise<void>;
}
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

  const forget = (scope: string, key: string, entry: Entry): void => {
    const inScope = claims.get(scope);
    if (inScope?.get(key) === entry) inScope.delete(key);
  };

  const write = (batch: Pending[]): void => {
    const record = `[${batch.map((p) => `[${JSON.stringify(p.scope)},${JSON.stringify(p.key)},${p.entry.json}]`).join(',')}]`;
    log.append(record).then(
      () => {
        for (const p of batch) {
          delete p.entry.durable;
          p.resolve();
        }
      },
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
      await Promise.resolve();
      await log.close();
    },
  };
}
