// The rebuild's replay (infra/rebuild-replay.ts): every event once, in order, in pages; the next
// page is read while the current one is written; a failed write ends the replay with its error.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { replay } from '../rebuild-replay.ts';

/** A log of `total` events (positions 1..total) that records what happened, in order. */
const logOf = (total: number, trace: string[]) => ({
  async readAll(after: number, limit: number): Promise<StoredEvent<CloudEvent>[]> {
    trace.push(`read ${after}`);
    await new Promise((r) => setImmediate(r));
    const out: StoredEvent<CloudEvent>[] = [];
    for (let p = after + 1; p <= Math.min(total, after + limit); p++) out.push({ position: p } as StoredEvent<CloudEvent>);
    return out;
  },
});

describe('rebuild replay', () => {
  it('applies every event once, in order, and reads the next page while a page is written', async () => {
    const trace: string[] = [];
    const seen: number[] = [];
    const result = await replay(logOf(25, trace), 0, async (page) => {
      trace.push(`write ${page[0]!.position}`);
      await new Promise((r) => setTimeout(r, 5));
      seen.push(...page.map((r) => r.position));
      trace.push(`written ${page[0]!.position}`);
    }, 10);
    assert.deepEqual(seen, Array.from({ length: 25 }, (_, i) => i + 1));
    assert.deepEqual(result, { count: 25, last: 25 });
    // The read of the second page starts before the first page's write ends.
    assert.ok(trace.indexOf('read 10') < trace.indexOf('written 1'), trace.join(', '));
    assert.ok(trace.indexOf('read 20') < trace.indexOf('written 11'), trace.join(', '));
  });

  it('from the middle, and an empty rest', async () => {
    assert.deepEqual(await replay(logOf(25, []), 20, async () => undefined, 10), { count: 5, last: 25 });
    assert.deepEqual(await replay(logOf(25, []), 25, async () => undefined, 10), { count: 0, last: 25 });
    // A log of exactly whole pages ends on an empty read.
    assert.deepEqual(await replay(logOf(20, []), 0, async () => undefined, 10), { count: 20, last: 20 });
  });

  it('a failed write ends the replay with its error, the read ahead going nowhere', async () => {
    const failing = {
      readAll: async (after: number) => {
        if (after > 0) throw new Error('read ahead failed too');
        return Array.from({ length: 10 }, (_, i) => ({ position: i + 1 }) as StoredEvent<CloudEvent>);
      },
    };
    await assert.rejects(replay(failing, 0, async () => { throw new Error('write failed'); }, 10), /write failed/);
    // An unhandled rejection of the read ahead would fail this file.
    await new Promise((r) => setTimeout(r, 20));
  });
});
