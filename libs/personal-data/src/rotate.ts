import { unwrapKey, wrapKey, type Kek } from './kek.ts';
import type { DataKeyStore } from './port.ts';

export interface RewrapReport { keys: number; rewrapped: number; destroyed: number; raced: number }

/**
 * KEK rotation's second half (docs/ops.md): every live data key wrapped under another KEK than
 * the current one is unwrapped and wrapped again under the current one, a compare-and-set per key
 * (a key changed meanwhile, by a racing rotation or a destroy, is left as it is and counted). The
 * data keys themselves never change, so no event is rewritten. Once it reports none left, the old
 * KEK lines can leave DATA_KEK. Safe while the services run.
 */
export const rewrapAll = async (store: DataKeyStore, kek: Kek, pageSize = 500): Promise<RewrapReport> => {
  const report: RewrapReport = { keys: 0, rewrapped: 0, destroyed: 0, raced: 0 };
  for (let after: string | null = null; ;) {
    const page = await store.list(after, pageSize);
    for (const { id, key } of page) {
      report.keys += 1;
      if (key.state === 'destroyed') {
        report.destroyed += 1;
        continue;
      }
      if (key.wrapped.kid === kek.current.kid) continue;
      const next = wrapKey(kek, id, unwrapKey(kek, id, key.wrapped));
      if (await store.rewrap(id, key.wrapped, next)) report.rewrapped += 1;
      else report.raced += 1;
    }
    if (page.length < pageSize) return report;
    after = page.at(-1)!.id;
  }
};
