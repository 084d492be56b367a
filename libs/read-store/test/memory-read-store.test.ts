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
      await store.applyBatch([{ collection: 'c', id, update: { set: { group } }, position: id.charCodeAt(0) }]);
    }
    // Moving a document between index buckets must not change its place in the order.
    await store.find('c', { group: 1 });
    await store.applyBatch([{ collection: 'c', id: 'z', update: { set: { group: 2 } }, position: 1000 }]);
    assert.deepEqual((await store.find('c', { group: 2 })).map((d) => d._id), ['z', 'y', 'w']);
    assert.deepEqual((await store.find('c', {}, { sort: [['group', -1]] })).map((d) => d._id), ['z', 'y', 'w', 'x']);
    assert.deepEqual((await store.find('c', {}, { skip: 1, limit: 2 })).map((d) => d._id), ['y', 'x']);
    assert.deepEqual((await store.find('c', { group: 2 }, { skip: 1, limit: 1 })).map((d) => d._id), ['y']);
  });

  it('matches arrays by element, as Mongo does', async () => {
    const store = makeMemoryReadStore();
    await store.applyBatch([
      { collection: 'c', id: 'a', update: { set: { tags: ['x', 'y'] } }, position: 1 },
      { collection: 'c', id: 'b', update: { set: { tags: ['y', null] } }, position: 2 },
      { collection: 'c', id: 'c', update: { set: { tags: [] } }, position: 3 },
    ]);
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
      await store.applyBatch([{ collection: 'c', id, update: { set: { [field]: value } }, position: step + 1 }]);
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

  it('keeps indexes right across batches that touch a document several times, and a refused batch', async () => {
    const store = makeMemoryReadStore();
    await store.applyBatch([{ collection: 'c', id: 'a', update: { set: { k: 1, t: 'x' } }, position: 1 }]);
    assert.equal(await store.count('c', { k: 1 }), 1);
    await store.applyBatch([
      { collection: 'c', id: 'a', update: { set: { k: 2 } }, position: 2 },
      { collection: 'c', id: 'b', update: { set: { k: 2 } }, position: 3 },
      { collection: 'c', id: 'a', update: { set: { k: 3 } }, position: 4 },
    ]);
    assert.deepEqual((await store.find('c', { k: 2 })).map((d) => d._id), ['b']);
    assert.deepEqual((await store.find('c', { k: 3 })).map((d) => d._id), ['a']);
    assert.equal(await store.count('c', { k: 1 }), 0);
    // Refused by what `a` holds: nothing of the batch is written, indexes included.
    await assert.rejects(store.applyBatch([
      { collection: 'c', id: 'b', update: { set: { k: 9 } }, position: 5 },
      { collection: 'c', id: 'n', update: { set: { k: 9 } }, position: 5 },
      { collection: 'c', id: 'a', update: { inc: { t: 1 } }, position: 5 },
    ]));
    assert.equal(await store.count('c', { k: 9 }), 0);
    assert.deepEqual((await store.find('c', {})).map((d) => d._id), ['a', 'b']);
    assert.equal(await store.get('c', 'n'), null);
  });
});
