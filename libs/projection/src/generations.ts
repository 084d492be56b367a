import type { Db } from 'mongodb';
import type { ReadStore } from '@docshare/read-store';
import { sleep } from '@docshare/contracts';
import type { BatchApply } from './runner.ts';

/*
 * A read model's generations: its MongoDB collections (`stats_g<ts>_...`) or search index come in
 * generations, named by ONE pointer document per model (`read_model_generations`). A rebuild fills
 * a new generation, then moves the pointer (beginSwitch / finishSwitch); readers follow it
 * (makeGenerationalReadStore) and the live projector writes through the fence (fencedByGeneration),
 * so both move to the rebuilt model together, without a window where it is empty. This module is
 * the pointer's one owner.
 */

/** The generation pointer of a read model (`read_model_generations`), as a rebuild moves it. */
export interface GenerationPointer {
  _id: string;
  prefix: string;
  since: Date;
  /** Set by a rebuild while it writes the last events into the new generation: projectors wait. */
  switching?: { to: string; until: Date };
}

export const GENERATIONS = 'read_model_generations';

/** The generation `model` is read from and written to now, and whether a switch is under way. */
export const readPointer = async (db: Db, model: string): Promise<{ prefix: string; switching: boolean }> => {
  const pointer = await db.collection<GenerationPointer>(GENERATIONS).findOne({ _id: model });
  return {
    prefix: pointer?.prefix ?? `${model}_`,
    // A switch whose rebuild died is over once its deadline has passed.
    switching: pointer?.switching !== undefined && pointer.switching.until.getTime() > Date.now(),
  };
};

/**
 * How long a pointer read after one batch may stand as the pointer read before the next: well under
 * the time a rebuild waits after its switch before dropping the old generation (infra/rebuild.ts
 * READER_CACHE_MS, 2.5 s), so a batch that starts from a stale pointer writes into a generation
 * that still exists, and its own read after the apply sends it to the new one.
 */
export const POINTER_REUSE_MS = 500;

/**
 * A projector's batch handler that a rebuild can switch generations under without losing or
 * misordering an event (infra/rebuild.ts). Each batch:
 *
 *   read the pointer → while a switch is under way, wait → apply to the pointer's generation →
 *   read the pointer again: if it moved meanwhile, apply again (idempotent) to where it points now
 *
 * so a batch is acknowledged (and its checkpoint recorded) only once it is in the generation that
 * is current when it ends, and no projector writes to the new generation while the rebuild still
 * does: the rebuild alone writes the events up to the switch, in order, and the projectors every
 * event after it. The read after a batch stands as the read before the next one while it is younger
 * than POINTER_REUSE_MS and showed no switch: applying to a generation that has just been replaced
 * is harmless (the read after the apply finds the move, and the batch is applied again where the
 * pointer now points), so in a steady stream a batch costs one findOne by `_id`, not two.
 */
export const fencedByGeneration = (
  db: Db, model: string, applyTo: (prefix: string) => BatchApply, pollMs = 50, reuseMs = POINTER_REUSE_MS,
): BatchApply => {
  let last: { prefix: string; at: number } | null = null;
  return async (records) => {
    for (;;) {
      const reusable = last !== null && performance.now() - last.at < reuseMs ? last : null;
      last = null;
      const before = reusable ? { prefix: reusable.prefix, switching: false } : await readPointer(db, model);
      if (before.switching) {
        await sleep(pollMs);
        continue;
      }
      await applyTo(before.prefix)(records);
      const at = performance.now();
      const after = await readPointer(db, model);
      if (!after.switching && after.prefix === before.prefix) {
        last = { prefix: after.prefix, at };
        return;
      }
    }
  };
};

/**
 * Starts a switch of `model` to the generation `to`: projectors finish the batch in hand and wait
 * until `finishSwitch` (or `until`, should the rebuild die). Returns the deadline.
 */
export const beginSwitch = async (db: Db, model: string, to: string, maxMs: number): Promise<Date> => {
  const until = new Date(Date.now() + maxMs);
  await db.collection<GenerationPointer>(GENERATIONS).updateOne(
    { _id: model }, { $set: { switching: { to, until } }, $setOnInsert: { prefix: `${model}_`, since: new Date() } }, { upsert: true },
  );
  return until;
};

/** Ends a switch: points `model` at `prefix` (or leaves it, to abort) and lets the projectors go on. Returns the previous prefix. */
export const finishSwitch = async (db: Db, model: string, prefix: string | null): Promise<string> => {
  const previous = await db.collection<GenerationPointer>(GENERATIONS).findOneAndUpdate(
    { _id: model },
    prefix === null ? { $unset: { switching: '' } } : { $set: { prefix, since: new Date() }, $unset: { switching: '' } },
    { returnDocument: 'before' },
  );
  return previous?.prefix ?? `${model}_`;
};

/** One `open(prefix)` per generation, kept: what a fenced handler writes through. */
export const perGeneration = <S>(open: (prefix: string) => S): ((prefix: string) => S) => {
  const opened = new Map<string, S>();
  return (prefix) => {
    let store = opened.get(prefix);
    if (store === undefined) opened.set(prefix, (store = open(prefix)));
    return store;
  };
};

/**
 * A read model whose MongoDB collections come in generations (`stats_g<ts>_...`), named by one
 * pointer document: a rebuild fills a new generation, then flips the pointer, so readers and the
 * live projector move to the rebuilt model together, without a window where it is empty.
 * The pointer is re-read at most every `refreshMs`.
 */
export const makeGenerationalReadStore = <S extends ReadStore>(
  db: Db, model: string, open: (prefix: string) => S, refreshMs = 1_000,
): ReadStore & { prefix(): Promise<string>; current(): Promise<S> } => {
  const opened = perGeneration(open);
  const stores = new Set<S>();
  let cached: { prefix: string; at: number } | undefined;
  const prefix = async (): Promise<string> => {
    if (cached && Date.now() - cached.at < refreshMs) return cached.prefix;
    cached = { prefix: (await readPointer(db, model)).prefix, at: Date.now() };
    return cached.prefix;
  };
  const store = async (): Promise<S> => {
    const s = opened(await prefix());
    stores.add(s);
    return s;
  };
  return {
    prefix,
    current: store,
    applyBatch: async (updates) => (await store()).applyBatch(updates),
    get: async (collection, id) => (await store()).get(collection, id),
    find: async (collection, filter, options) => (await store()).find(collection, filter, options),
    count: async (collection, filter) => (await store()).count(collection, filter),
    updateWhere: async (collection, filter, set) => (await store()).updateWhere(collection, filter, set),
    distinct: async (collection, field, filter) => (await store()).distinct(collection, field, filter),
    clear: async () => (await store()).clear(),
    close: async () => {
      await Promise.all([...stores].map((s) => s.close()));
    },
  };
};
