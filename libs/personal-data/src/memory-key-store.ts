import type { DataKeyStore, StoredKey, WrappedKey } from './port.ts';

/** Keys in this process only: tests, and what the other adapters are checked against (contract.ts). */
export const makeMemoryKeyStore = (): DataKeyStore => {
  const keys = new Map<string, string>();
  const read = (id: string): StoredKey | undefined => {
    const json = keys.get(id);
    return json === undefined ? undefined : JSON.parse(json) as StoredKey;
  };
  return {
    async get(ids) {
      const found = new Map<string, StoredKey>();
      for (const id of ids) {
        const key = read(id);
        if (key !== undefined) found.set(id, key);
      }
      return found;
    },
    async create(id, wrapped) {
      const there = read(id);
      if (there !== undefined) return there;
      const key: StoredKey = { state: 'live', wrapped: { ...wrapped } };
      keys.set(id, JSON.stringify(key));
      return key;
    },
    async destroy(id, at) {
      if (read(id)?.state === 'destroyed') return;
      keys.set(id, JSON.stringify({ state: 'destroyed', destroyedAt: at } satisfies StoredKey));
    },
    async rewrap(id, expected: WrappedKey, next: WrappedKey) {
      const there = read(id);
      if (there?.state !== 'live' || there.wrapped.kid !== expected.kid || there.wrapped.ct !== expected.ct) return false;
      keys.set(id, JSON.stringify({ state: 'live', wrapped: { ...next } } satisfies StoredKey));
      return true;
    },
    async list(after, limit) {
      return [...keys.keys()].filter((id) => after === null || id > after).sort().slice(0, limit)
        .map((id) => ({ id, key: read(id)! }));
    },
    async close() {},
  };
};
