import { join } from 'node:path';
import { openDurableLog, type ScannedRecord } from '@docshare/durable-log';
import { makeWebhookModel, type Change } from './model.ts';
import type { WebhookStore } from './port.ts';

/*
 * The embedded adapter: the in-memory model (model.ts) and one durable log (libs/durable-log),
 * `webhooks.log`, of lines {c: [changes]}: each call's changes in one line, fsynced before the
 * call resolves (so a settle's task and attempt are one record: both or neither survive a crash,
 * and an acknowledged schedule, settle or checkpoint survives kill -9). Opening replays the lines
 * in order; leases are dropped (one process holds the file: whoever held them is gone) and the
 * file is compacted when at least half of it is dead. `prune` compacts it: memory and disk stay
 * about one retention period of deliveries. `removeOwner` (account erasure) compacts it at once,
 * so the owner's task bodies and attempts leave the disk before it resolves.
 *
 * The log's rules apply: a torn last line is cut off at open, damage before it refuses to open.
 */

const FILE = 'webhooks.log';
/** Changes per line when compacting (a line is read whole at open). */
const CHANGES_PER_LINE = 256;

export interface FileWebhookStoreOptions {
  /** Told about a torn last line cut off at open. */
  onWarning?: (message: string) => void;
}

/** The embedded store, with what its compaction works on in view. */
export interface FileWebhookStore extends WebhookStore {
  /** Rewrites the file to the live values. */
  compact(): Promise<void>;
  /** Lines in the file. */
  size(): { lines: number };
}

const CHANGE_KINDS = new Set(['e', 'k', 'a', 'h', 'c']);
const isChange = (value: unknown): value is Change =>
  typeof value === 'object' && value !== null && 't' in value && CHANGE_KINDS.has(String(value.t));

/** The compacted file's lines: every live value, CHANGES_PER_LINE a line. */
function* linesOf(changes: Iterable<Change>): Iterable<string> {
  let chunk: Change[] = [];
  for (const change of changes) {
    chunk.push(change);
    if (chunk.length === CHANGES_PER_LINE) {
      yield JSON.stringify({ c: chunk });
      chunk = [];
    }
  }
  if (chunk.length > 0) yield JSON.stringify({ c: chunk });
}

/** Opens (creating if needed) the durable embedded WebhookStore under `dir`. */
export async function openFileWebhookStore(dir: string, options: FileWebhookStoreOptions = {}): Promise<FileWebhookStore> {
  const model = makeWebhookModel();
  let changesRead = 0;
  const load = ({ payload, where }: ScannedRecord): void => {
    const changes = typeof payload === 'object' && payload !== null && 'c' in payload ? payload.c : null;
    if (!Array.isArray(changes) || !changes.every(isChange)) throw new Error(`${where}: not a webhook store record`);
    for (const change of changes) model.load(change);
    changesRead += changes.length;
  };
  const log = await openDurableLog(join(dir, FILE), load, { name: 'webhook store', ...(options.onWarning ? { onWarning: options.onWarning } : {}) });
  model.dropLeases();
  let closed = false;
  const check = (): void => {
    if (closed) throw new Error('webhook store is closed');
    log.assertWritable();
  };
  const persist = async (changes: Change[]): Promise<void> => {
    if (changes.length > 0) await log.append(JSON.stringify({ c: changes }));
  };
  const compact = (): Promise<void> => log.compact(() => linesOf(model.snapshot()));
  try {
    let live = 0;
    for (const _ of model.snapshot()) live++;
    // Worth it once at least half of what the file holds is dead.
    if (changesRead > live && changesRead - live >= live) await compact();
  } catch (error) {
    await log.close();
    throw error;
  }
  const calls = model.store(persist, check);
  /** removeOwner calls under way (close waits for their compaction). */
  const removing = new Set<Promise<unknown>>();
  return {
    ...calls,
    async prune(before) {
      const removed = await calls.prune(before);
      if (removed > 0) await compact();
      return removed;
    },
    async removeOwner(ownerId) {
      const run = (async () => {
        const removed = await calls.removeOwner(ownerId);
        // At once: the removed deliveries' bodies (and every older version of them) leave the disk now.
        if (removed.tasks + removed.attempts > 0) await compact();
        return removed;
      })();
      removing.add(run);
      try {
        return await run;
      } finally {
        removing.delete(run);
      }
    },
    compact,
    size: () => ({ lines: log.size().records }),
    async close() {
      if (closed) return;
      closed = true;
      // A closing log skips a compaction: a removal under way finishes first, or its bytes would stay.
      await Promise.allSettled([...removing]);
      await log.close();
    },
  };
}
