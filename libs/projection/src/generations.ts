import type { Db } from 'mongodb';
import type { ReadStore } from '@docshare/read-store';

interface Pointer { _id: string; prefix: string; since: Date }

/**
 * A read model whose MongoDB collections come in generations (`stats_g<ts>_...`), named by one
 * pointer document: a rebuild fills a new generation, then flips the pointer, so readers and the
 * live projector move to the rebuilt model together, without a window where it is empty.
 * The pointer is re-read at most every `refreshMs`.
 */
export const makeGenerationalReadStore = <S extends ReadStore>(
  db: Db, model: string, open: (prefix: string) => S, refreshMs = 1_000,
): ReadStore & { prefix(): Promise<string>; current(): Promise<S> } => {
  const pointers = db.collection<Pointer>('read_model_generations');
  const stores = new Map<string, S>();
  let cached: { prefix: string; at: number } | undefined;
  const prefix = async (): Promise<string> => {
    if (cached && Date.now() - cached.at < refreshMs) return cached.prefix;
    const pointer = await pointers.findOne({ _id: model });
    cached = { prefix: pointer?.prefix ?? `${model}_`, at: Date.now() };
    return cached.prefix;
  };
  const store = async (): Promise<S> => {
    const p = await prefix();
    let s = stores.get(p);
    if (!s) {
      s = open(p);
      stores.set(p, s);
    }
    return s;
  };
  return {
    prefix,
    current: store,
    applyBatch: async (updates) => (await store()).applyBatch(updates),
    get: async (collection, id) => (await store()).get(collection, id),
    find: async (collection, filter, options) => (await store()).find(collection, filter, options),
    count: async (collection, filter) => (await store()).count(collection, filter),
    distinct: async (collection, field, filter) => (await store()).distinct(collection, field, filter),
    clear: async () => (await store()).clear(),
    close: async () => {
      await Promise.all([...stores.values()].map((s) => s.close()));
    },
  };
};

/** Points `model` at the generation `prefix` (what a rebuild does once the new generation is full). */
export const publishGeneration = async (db: Db, model: string, prefix: string): Promise<string | null> => {
  const pointers = db.collection<Pointer>('read_model_generations');
  const previous = await pointers.findOneAndUpdate(
    { _id: model }, { $set: { prefix, since: new Date() } }, { upsert: true, returnDocument: 'before' },
  );
  return previous?.prefix ?? `${model}_`;
};
