import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readStoreContract } from '../src/contract.ts';
import { makeMemoryReadStore } from '../src/memory-read-store.ts';
import type { Doc, Filter, Scalar } from '../src/port.ts';
import { seededRandom } from './seeded-random.ts';

readStoreContract('memory', async () => makeMemoryReadStore());

describe('memory read store', () => {
  it('keeps insertion order for equal sort keys and without sort', async () => {
    const store = makeMemoryReadStore();
    for (const [id, group] of [['z', 1], ['y', 2], ['x', 1], ['w', 2]] as const) {
      await store.apply('c', id, { set: { group } }, { stream: 's', version: id.charCodeAt(0) });
    }
    // Moving a document between index buckets must not change its place in the order.
    await store.find('c', { group: 1 });
    await store.apply('c', 'z', { set: { group: 2 } }, { stream: 't', version: 1 });
    assert.deepEqual((await store.find('c', { group: 2 })).map((d) => d._id), ['z', 'y', 'w']);
    assert.deepEqual((await store.find('c', {}, { sort: [['group', -1]] })).map((d) => d._id), ['z', 'y', 'w', 'x']);
    assert.deepEqual((await store.find('c', {}, { skip: 1, limit: 2 })).map((d) => d._id), ['y', 'x']);
    assert.deepEqual((await store.find('c', { group: 2 }, { skip: 1, limit: 1 })).map((d) => d._id), ['y']);
  });

  it('matches arrays by element, as Mongo does', async () => {
    const store = makeMemoryReadStore();
    await store.apply('c', 'a', { set: { tags: ['x', 'y'] } }, { stream: 's', version: 1 });
    await store.apply('c', 'b', { set: { tags: ['y', null] } }, { stream: 's', version: 2 });
    await store.apply('c', 'c', { set: { tags: [] } }, { stream: 's', version: 3 });
    assert.deepEqual((await store.find('c', { tags: 'y' })).map((d) => d._id), ['a', 'b']);
    assert.deepEqual((await store.find('c', { tags: null })).map((d) => d._id), ['b']);
  });

  it('finds what a plain scan finds, across random writes (index maintenance)', async () => {
    const store = makeMemoryReadStore();
    const model = new Map<string, Record<string, unknown>>();
    const random = seededRandom(42);
    const scalars: Scalar[] = [1, 2, '1', 'a', null, true];
    const values: unknown[] = [...scalars, ['a', 1], [null], { a: 1 }];
    const fields = ['f', 'g'];
    const naive = (filter: Filter): string[] => {
      const out: string[] = [];
      for (const [id, doc] of model) {
        const ok = Object.entries(filter).every(([field, cond]) => {
          const wanted = cond !== null && typeof cond === 'object' ? cond.in : [cond];
          const value = doc[field] === undefined ? null : doc[field];
          return Array.isArray(value) ? value.some((element) => wanted.includes(element)) : wanted.includes(value as Scalar);
        });
        if (ok) out.push(id);
      }
      return out;
    };
    for (let step = 0; step < 3000; step++) {
      const id = `d${random(60)}`;
      const field = fields[random(fields.length)] as string;
      const value = values[random(values.length)];
      await store.apply('c', id, { set: { [field]: value } }, { stream: `s${step}`, version: 1 });
      const doc = model.get(id) ?? {};
      doc[field] = value;
      model.set(id, doc);
      if (step % 7 === 0) {
        const pick = (): Scalar => scalars[random(scalars.length)] as Scalar;
        const filter: Filter = random(2) === 0 ? { [field]: pick() } : { f: { in: [pick(), pick()] }, g: pick() };
        const found: Doc[] = await store.find('c', filter);
        assert.deepEqual(found.map((d) => d._id), naive(filter), JSON.stringify(filter));
        assert.equal(await store.count('c', filter), found.length);
      }
    }
  });
});
