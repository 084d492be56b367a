import { join } from 'node:path';
import { openDurableLog, type ScannedRecord } from '@docshare/durable-log';
import type { DataKeyStore, StoredKey, WrappedKey } from './port.ts';

/*
 * The embedded DataKeyStore: every key in memory and in one durable log (libs/durable-log),
 * `data-keys.log`, of records {id, key} (key: a StoredKey), each fsynced before the call resolves.
 * At open the last record of an id wins, except that a tombstone is final (a live record after
 * it, which no caller writes, is ignored).
 *
 * Destroying a key must make its wrapped bytes leave the disk, not only the memory: `destroy`
 * appends the tombstone (durable, so the key stays destroyed even if what follows fails), then
 * compacts: the log is rewritten with one record per id (live keys and tombstones), fsynced,
 * renamed over the old file and the directory fsynced (the log's `compact`). A crash between the
 * two leaves the old wrapped bytes in the file with the tombstone after them: the open sees
 * superseded records and compacts again, so they go at the next start at the latest. Rewrapping
 * (KEK rotation) appends; the superseded wrappings go at the next compaction (a destroy, an open).
 */

const FILE = 'data-keys.log';

interface Entry {
  key: StoredKey;
  /** Set while the record that made `key` awaits its fsync; settles once durable (or rejects, undone). */
  durable?: Promise<void>;
  /** While `durable` is set: the key the file holds durably for the id meanwhile (none for a create). */
  before?: StoredKey;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
const isWrapped = (value: unknown): value is WrappedKey =>
  isObject(value) && ['kid', 'iv', 'ct', 'tag'].every((field) => typeof value[field] === 'string');
const isStoredKey = (value: unknown): value is StoredKey =>
  isObject(value) && ((value['state'] === 'live' && isWrapped(value['wrapped']))
    || (value['state'] === 'destroyed' && typeof value['destroyedAt'] === 'string'));

/** Only the port's fields: a caller's extra properties never reach the file. */
const copyWrapped = ({ kid, iv, ct, tag }: WrappedKey): WrappedKey => ({ kid, iv, ct, tag });
const encode = (id: string, key: StoredKey): string => JSON.stringify({ id, key });
const sameWrapping = (a: WrappedKey, b: WrappedKey): boolean => a.kid === b.kid && a.ct === b.ct;

/** Opens (creating it if needed) the durable DataKeyStore kept as `data-keys.log` under `dir`. */
export async function openFileKeyStore(dir: string): Promise<DataKeyStore> {
  const keys = new Map<string, Entry>();
  let superseded = false;
  const load = ({ payload, where }: ScannedRecord): void => {
    if (!isObject(payload) || typeof payload['id'] !== 'string' || !isStoredKey(payload['key'])) {
      throw new Error(`${where}: not a data key record`);
    }
    const id = payload['id'];
    const existing = keys.get(id);
    if (existing !== undefined) superseded = true;
    if (existing?.key.state === 'destroyed') return;
    keys.set(id, { key: payload['key'] });
  };
  // A failed write is cut back and only its record undone: the store goes on (the log stops if it cannot cut back).
  const log = await openDurableLog(join(dir, FILE), load, { name: 'data key store', keepWritingAfterFailure: true });
  let closed = false;
  /** Ids in order, for `list`; null once a new id makes it stale. */
  let sorted: string[] | null = null;

  const liveRecords = function* (): Iterable<string> {
    // The durable state only: a record still in flight is appended to the new file after the rewrite
    // (and if its write fails, the file must still hold what was there before it).
    for (const [id, entry] of keys) {
      const durable = entry.durable === undefined ? entry.key : entry.before;
      if (durable !== undefined) yield encode(id, durable);
    }
  };
  const compact = (): Promise<void> => log.compact(liveRecords);

  try {
    if (superseded) await compact();
  } catch (error) {
    await log.close();
    throw error;
  }

  const assertOpen = (): void => {
    if (closed) throw new Error('data key store is closed');
  };

  /** Appends `key` for `id` as `entry` (already in the map); undone (if still current) when the write fails. */
  const write = (id: string, entry: Entry, previous: Entry | undefined): Promise<void> => {
    // Marked durable in the log's own step (onDurable), so a compaction queued behind it sees it as written.
    const written = log.append(encode(id, entry.key), () => {
      delete entry.durable;
      delete entry.before;
    });
    const durable = written.then(
      () => {},
      (error: unknown) => {
        if (keys.get(id) === entry) {
          if (previous === undefined) keys.delete(id);
          else keys.set(id, previous);
          sorted = null;
        }
        throw error;
      },
    );
    entry.durable = durable;
    if (previous !== undefined) entry.before = previous.durable === undefined ? previous.key : previous.before;
    return durable;
  };

  /** What the store durably holds for `id`, waiting for a record in flight. */
  const settled = async (id: string): Promise<StoredKey | undefined> => {
    for (;;) {
      const entry = keys.get(id);
      if (entry?.durable === undefined) return entry?.key;
      // A failed write undoes its entry: look again at what is there then.
      await entry.durable.catch(() => {});
    }
  };

  const store: DataKeyStore = {
    async get(ids) {
      assertOpen();
      const found = new Map<string, StoredKey>();
      for (const id of ids) {
        const entry = keys.get(id);
        const key = entry?.durable === undefined ? entry?.key : await settled(id);
        if (key !== undefined) found.set(id, key);
      }
      return found;
    },

    async create(id, wrapped) {
      // Up to the append everything runs synchronously, so concurrent creates are decided in call order.
      assertOpen();
      log.assertWritable();
      if (typeof id !== 'string' || !isWrapped(wrapped)) throw new TypeError('a data key needs a string id and a wrapped key');
      const existing = keys.get(id);
      if (existing !== undefined) {
        const key = await settled(id);
        // The first create's write failed and was undone: the id is free again.
        return key ?? store.create(id, wrapped);
      }
      const entry: Entry = { key: { state: 'live', wrapped: copyWrapped(wrapped) } };
      keys.set(id, entry);
      sorted = null;
      await write(id, entry, undefined);
      return entry.key;
    },

    async destroy(id, at) {
      assertOpen();
      log.assertWritable();
      if (typeof id !== 'string' || typeof at !== 'string') throw new TypeError('destroy needs a string id and time');
      // A create, rewrap or destroy in flight lands first (so the compaction below removes its bytes
      // too); then, in the same step as the last look, a destroy that came meanwhile keeps its (first) time.
      let previous = keys.get(id);
      while (previous?.durable !== undefined) {
        await previous.durable.catch(() => {});
        previous = keys.get(id);
      }
      if (previous?.key.state !== 'destroyed') {
        const entry: Entry = { key: { state: 'destroyed', destroyedAt: at } };
        keys.set(id, entry);
        if (previous === undefined) sorted = null;
        await write(id, entry, previous);
      }
      // Also when it was destroyed already: a destroy retried after a failed compaction finishes it.
      await compact();
    },

    async rewrap(id, expected, next) {
      assertOpen();
      log.assertWritable();
      if (!isWrapped(expected) || !isWrapped(next)) throw new TypeError('rewrap needs wrapped keys');
      const previous = keys.get(id);
      if (previous === undefined) return false;
      if (previous.durable !== undefined) {
        await settled(id);
        return store.rewrap(id, expected, next);
      }
      if (previous.key.state !== 'live' || !sameWrapping(previous.key.wrapped, expected)) return false;
      const entry: Entry = { key: { state: 'live', wrapped: copyWrapped(next) } };
      keys.set(id, entry);
      await write(id, entry, previous);
      return true;
    },

    async list(after, limit) {
      assertOpen();
      const ids = (sorted ??= [...keys.keys()].sort());
      let next = 0;
      if (after !== null) {
        // The first id greater than `after` (binary search).
        let high = ids.length;
        while (next < high) {
          const mid = (next + high) >>> 1;
          if (ids[mid]! <= after) next = mid + 1;
          else high = mid;
        }
      }
      const page: Array<{ id: string; key: StoredKey }> = [];
      for (; next < ids.length && page.length < limit; next++) {
        const id = ids[next]!;
        const key = await settled(id);
        if (key !== undefined) page.push({ id, key });
      }
      return page;
    },

    async close() {
      if (closed) return;
      closed = true;
      // Writes already accepted finish; their callers are waiting on them.
      await log.close();
    },
  };
  return store;
}
