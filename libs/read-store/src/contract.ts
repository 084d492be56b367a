import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Doc, GuardedUpdate, ReadStore, Update } from './port.ts';

/** A value of another type than the port declares, as a JavaScript caller could pass it: what the types cannot express. */
const wrongType = <T>(value: unknown): T => value as T;

/**
 * The behaviour every ReadStore adapter must share (memory, MongoDB and its stand-in). Each test uses
 * collections with a random suffix; the `clear` test empties the whole store, so `make` must
 * return a store no concurrently running suite shares (e.g. its own database).
 */
export function readStoreContract(name: string, make: () => Promise<ReadStore>): void {
  describe(`ReadStore contract: ${name}`, () => {
    let store: ReadStore;
    before(async () => {
      store = await make();
    });
    after(async () => {
      await store.close();
    });

    const fresh = (label: string): string => `${label}_${randomBytes(6).toString('hex')}`;
    const ids = (docs: Doc[]): string[] => docs.map((doc) => doc._id);

    /** One update as its own batch. */
    const one = (collection: string, id: string, update: Update, position: number): Promise<number> =>
      store.applyBatch([{ collection, id, update, position }]);

    it('creates a missing document from set, setOnInsert and inc', async () => {
      const files = fresh('files');
      const applied = await one(
        files,
        'f1',
        { setOnInsert: { createdAt: '2024-01-01' }, set: { title: 'One', tags: ['a', 'b'] }, inc: { views: 2 } },
        1,
      );
      assert.equal(applied, 1);
      assert.deepEqual(await store.get(files, 'f1'), {
        _id: 'f1', createdAt: '2024-01-01', title: 'One', tags: ['a', 'b'], views: 2,
      });
    });

    it('returns null / [] / 0 for unknown documents and collections, and 0 for an empty batch', async () => {
      const files = fresh('files');
      assert.equal(await store.get(files, 'nope'), null);
      assert.deepEqual(await store.find(files, {}), []);
      assert.equal(await store.count(files, {}), 0);
      assert.equal(await store.applyBatch([]), 0);
      await one(files, 'f1', { set: { a: 1 } }, 1);
      assert.equal(await store.get(files, 'nope'), null);
    });

    it('applies setOnInsert only when inserting, in separate batches or in one', async () => {
      const files = fresh('files');
      await one(files, 'f1', { setOnInsert: { createdAt: 'first' }, set: { title: 'a' } }, 1);
      assert.equal(await one(files, 'f1', { setOnInsert: { createdAt: 'second' }, set: { title: 'b' } }, 2), 1);
      assert.deepEqual(await store.get(files, 'f1'), { _id: 'f1', createdAt: 'first', title: 'b' });

      // In one batch: only the update that inserts applies its setOnInsert, even to fields the
      // earlier updates did not touch; a later set of the same field wins.
      const applied = await store.applyBatch([
        { collection: files, id: 'f2', update: { set: { title: 'x' } }, position: 3 },
        { collection: files, id: 'f2', update: { setOnInsert: { createdAt: 'late', title: 'no' } }, position: 4 },
        { collection: files, id: 'f3', update: { setOnInsert: { createdAt: 'first', rank: 1 } }, position: 5 },
        { collection: files, id: 'f3', update: { set: { rank: 2 }, setOnInsert: { other: 1 } }, position: 6 },
      ]);
      assert.equal(applied, 4);
      assert.deepEqual(await store.get(files, 'f2'), { _id: 'f2', title: 'x' });
      assert.deepEqual(await store.get(files, 'f3'), { _id: 'f3', createdAt: 'first', rank: 2 });
    });

    it('increments an absent field from 0, on a new or an existing document', async () => {
      const stats = fresh('stats');
      await one(stats, 'u1', { inc: { downloads: 1 } }, 1);
      await one(stats, 'u1', { inc: { downloads: 2, views: 5 } }, 2);
      await one(stats, 'u1', { inc: { downloads: -1 } }, 7);
      assert.deepEqual(await store.get(stats, 'u1'), { _id: 'u1', downloads: 2, views: 5 });
    });

    it('applies an update once: a replayed batch changes nothing', async () => {
      const stats = fresh('stats');
      const files = fresh('files');
      const batch: GuardedUpdate[] = [
        { collection: stats, id: 'u1', update: { inc: { n: 1 }, set: { last: 'a' } }, position: 3 },
        { collection: files, id: 'f1', update: { setOnInsert: { owner: 'u1' }, set: { title: 'T' } }, position: 3 },
        { collection: stats, id: 'u2', update: { inc: { n: 5 } }, position: 4 },
        { collection: stats, id: 'u1', update: { inc: { n: 2 }, set: { last: 'b' } }, position: 5 },
        { collection: files, id: 'f1', update: { set: { title: 'T2' } }, position: 6 },
      ];
      assert.equal(await store.applyBatch(batch), 5);
      const expected = {
        u1: { _id: 'u1', n: 3, last: 'b' }, u2: { _id: 'u2', n: 5 }, f1: { _id: 'f1', owner: 'u1', title: 'T2' },
      };
      for (let replay = 0; replay < 2; replay++) {
        assert.equal(await store.applyBatch(batch), 0);
        assert.deepEqual(await store.get(stats, 'u1'), expected.u1);
        assert.deepEqual(await store.get(stats, 'u2'), expected.u2);
        assert.deepEqual(await store.get(files, 'f1'), expected.f1);
      }
      // Every update one at a time, replayed, changes nothing either.
      for (const update of batch) assert.equal(await store.applyBatch([update]), 0);
      assert.deepEqual(await store.get(stats, 'u1'), expected.u1);
    });

    it('applies only the updates newer than what the document applied (a half-applied batch again)', async () => {
      const stats = fresh('stats');
      // An earlier, interrupted delivery got as far as position 20 on `d` (and nothing on `e`).
      await one(stats, 'd', { inc: { n: 1 }, set: { last: 'p20' } }, 20);
      const batch: GuardedUpdate[] = [12, 18, 23].flatMap((position) => [
        { collection: stats, id: 'd', update: { inc: { n: 10 }, set: { last: `p${position}` } }, position },
        { collection: stats, id: 'e', update: { inc: { n: 10 }, set: { last: `p${position}` } }, position },
      ]);
      assert.equal(await store.applyBatch(batch), 4);
      assert.deepEqual(await store.get(stats, 'd'), { _id: 'd', n: 11, last: 'p23' });
      assert.deepEqual(await store.get(stats, 'e'), { _id: 'e', n: 30, last: 'p23' });
      assert.equal(await store.applyBatch(batch), 0);
      // Exactly at the document's position: already applied.
      assert.equal(await one(stats, 'd', { inc: { n: 100 } }, 23), 0);
      assert.deepEqual(await store.get(stats, 'd'), { _id: 'd', n: 11, last: 'p23' });
    });

    it('applies a batch whose first half an earlier delivery applied, on many documents', async () => {
      const stats = fresh('stats');
      const batch: GuardedUpdate[] = [];
      for (let position = 1; position <= 40; position++) {
        batch.push({ collection: stats, id: `u${position % 4}`, update: { inc: { n: position }, set: { at: position } }, position });
      }
      assert.equal(await store.applyBatch(batch.slice(0, 17)), 17);
      assert.equal(await store.applyBatch(batch), 23);
      for (let u = 0; u < 4; u++) {
        const positions = batch.filter(({ id }) => id === `u${u}`).map(({ position }) => position);
        assert.deepEqual(await store.get(stats, `u${u}`), {
          _id: `u${u}`, n: positions.reduce((a, b) => a + b, 0), at: Math.max(...positions),
        });
      }
    });

    it('skips an update at or below a position its document applied earlier in the same batch', async () => {
      const stats = fresh('stats');
      const applied = await store.applyBatch([
        { collection: stats, id: 's', update: { inc: { n: 1 } }, position: 5 },
        { collection: stats, id: 's', update: { inc: { n: 10 } }, position: 5 },
        { collection: stats, id: 's', update: { inc: { n: 100 } }, position: 3 },
        { collection: stats, id: 's', update: { inc: { n: 1000 } }, position: 6 },
      ]);
      assert.equal(applied, 2);
      assert.deepEqual(await store.get(stats, 's'), { _id: 's', n: 1001 });
    });

    it('sums many increments of one document in one batch', async () => {
      const stats = fresh('stats');
      const batch: GuardedUpdate[] = Array.from({ length: 300 }, (_, i) => ({
        collection: stats, id: 'u', update: { inc: { views: 1, bytes: i * 1000, down: -1 } }, position: i + 1,
      }));
      assert.equal(await store.applyBatch(batch), 300);
      assert.deepEqual(await store.get(stats, 'u'), { _id: 'u', views: 300, bytes: 1000 * (299 * 300) / 2, down: -300 });
      // Fractions add up exactly as one at a time would.
      const fractions: GuardedUpdate[] = [0.1, 0.2, 0.1, 0.7].map((by, i) => ({ collection: stats, id: 'f', update: { inc: { x: by } }, position: i + 1 }));
      assert.equal(await store.applyBatch(fractions), 4);
      assert.deepEqual(await store.get(stats, 'f'), { _id: 'f', x: 0.1 + 0.2 + 0.1 + 0.7 });
    });

    it('applies updates of one field under different operators in order, within one batch', async () => {
      const docs = fresh('docs');
      const ops: Update[] = [
        { set: { x: 5 }, inc: { a: 1 } },
        { inc: { x: 2, a: 1 } },
        { inc: { x: 3 } },
        { set: { x: 10, b: 'b' } },
        { inc: { x: 1 }, set: { b: 'c' } },
        { setOnInsert: { x: 99 } },
        { set: { x: 'text' } },
        { set: { x: 7 } },
        { inc: { x: -7, a: 1 } },
      ];
      const batch = ops.map((update, i) => ({ collection: docs, id: 'd', update, position: 10 + i }));
      assert.equal(await store.applyBatch(batch), ops.length);
      assert.deepEqual(await store.get(docs, 'd'), { _id: 'd', x: 0, a: 3, b: 'c' });
      // setOnInsert, then set and inc of the same field on a missing document.
      const inserted = [{ setOnInsert: { c: 1 } }, { inc: { c: 2 } }, { set: { c: 5 } }, { inc: { c: 1 } }]
        .map((update, i) => ({ collection: docs, id: 'e', update, position: 1 + i }));
      assert.equal(await store.applyBatch(inserted), 4);
      assert.deepEqual(await store.get(docs, 'e'), { _id: 'e', c: 6 });
    });

    it('applies a batch spanning many documents and collections', async () => {
      const names = [fresh('a'), fresh('b'), fresh('c')];
      const batch: GuardedUpdate[] = [];
      const expected = new Map<string, Record<string, unknown>>();
      let position = 100;
      for (let step = 0; step < 240; step++) {
        const collection = names[step % 3];
        assert.ok(collection !== undefined);
        const id = `d${(step * 7) % 30}`;
        const update: Update = step % 5 === 0 ? { set: { tag: `t${step}` }, inc: { n: 1 } } : { inc: { n: 1, sum: step } };
        batch.push({ collection, id, update, position: ++position });
        const doc = expected.get(`${collection}/${id}`) ?? { _id: id };
        if (update.set) Object.assign(doc, update.set);
        for (const [field, by] of Object.entries(update.inc ?? {})) {
          const before = doc[field];
          doc[field] = (typeof before === 'number' ? before : 0) + by;
        }
        expected.set(`${collection}/${id}`, doc);
      }
      assert.equal(await store.applyBatch(batch), 240);
      for (const collection of names) {
        const docs = await store.find(collection, {}, { sort: [['_id', 1]] });
        const want = [...expected].filter(([key]) => key.startsWith(`${collection}/`)).map(([, doc]) => doc)
          .sort((a, b) => String(a['_id']).localeCompare(String(b['_id'])));
        assert.deepEqual(docs, want, collection);
      }
      assert.equal(await store.applyBatch(batch), 0);
    });

    it('keeps positions per document: one event may update several documents', async () => {
      const users = fresh('users');
      const files = fresh('files');
      assert.equal(await store.applyBatch([
        { collection: users, id: 'owner', update: { inc: { n: 1 } }, position: 1 },
        { collection: users, id: 'buyer', update: { inc: { n: 1 } }, position: 1 },
        { collection: files, id: 'owner', update: { inc: { n: 1 } }, position: 1 },
      ]), 3);
      assert.equal(await store.count(users, { n: 1 }), 2);
      assert.deepEqual(await store.get(files, 'owner'), { _id: 'owner', n: 1 });
    });

    it('keeps a document small however many events touched it', async () => {
      const stats = fresh('stats');
      let position = 0;
      for (let batch = 0; batch < 10; batch++) {
        const updates: GuardedUpdate[] = [];
        for (let i = 0; i < 100; i++) {
          position += 3;
          updates.push({ collection: stats, id: 'u', update: { inc: { views: 1 } }, position });
          // Splits the document's writes: a field set in one update and incremented in the next.
          if (i % 10 === 0) updates.push({ collection: stats, id: 'u', update: { set: { views: 0 } }, position: position + 1 });
        }
        assert.equal(await store.applyBatch(updates), 110);
      }
      const doc = await store.get(stats, 'u');
      assert.deepEqual(doc, { _id: 'u', views: 9 });
    });

    async function seedFiles(files: string): Promise<void> {
      const rows: Doc[] = [
        { _id: 'a', ownerId: 1, status: 'live', category: 'maths', visible: true },
        { _id: 'b', ownerId: 2, status: 'draft', category: null, visible: true },
        { _id: 'c', ownerId: 1, status: 'gone', visible: false },
        { _id: 'd', ownerId: 3, status: 'live', category: 'art', visible: true },
        { _id: 'e', ownerId: 1, status: 'draft', category: 'maths', visible: true },
      ];
      let position = 0;
      for (const { _id, ...fields } of rows) await one(files, _id, { set: fields }, ++position);
    }

    it('finds by equality on one or several fields', async () => {
      const files = fresh('files');
      await seedFiles(files);
      const sort: [string, 1][] = [['_id', 1]];
      assert.deepEqual(ids(await store.find(files, { ownerId: 1 }, { sort })), ['a', 'c', 'e']);
      assert.deepEqual(ids(await store.find(files, { ownerId: 1, visible: true }, { sort })), ['a', 'e']);
      assert.deepEqual(ids(await store.find(files, { status: 'live', category: 'art' }, { sort })), ['d']);
      assert.deepEqual(ids(await store.find(files, { visible: false }, { sort })), ['c']);
      assert.deepEqual(ids(await store.find(files, { _id: 'd' }, { sort })), ['d']);
      assert.deepEqual(ids(await store.find(files, {}, { sort })), ['a', 'b', 'c', 'd', 'e']);
      assert.deepEqual(await store.find(files, { ownerId: 9 }), []);
      // No type coercion: the number 1 is not the string '1'.
      assert.deepEqual(await store.find(files, { ownerId: '1' }), []);
    });

    it('finds with `in`', async () => {
      const files = fresh('files');
      await seedFiles(files);
      const sort: [string, 1][] = [['_id', 1]];
      assert.deepEqual(ids(await store.find(files, { status: { in: ['live', 'gone'] } }, { sort })), ['a', 'c', 'd']);
      assert.deepEqual(ids(await store.find(files, { ownerId: { in: [2, 3] }, status: 'live' }, { sort })), ['d']);
      assert.deepEqual(ids(await store.find(files, { _id: { in: ['e', 'b', 'zz'] } }, { sort })), ['b', 'e']);
      assert.deepEqual(await store.find(files, { status: { in: [] } }), []);
    });

    it('finds only the fields asked for, with `_id`', async () => {
      const files = fresh('files');
      await seedFiles(files);
      const sort: [string, 1][] = [['_id', 1]];
      const all = await store.find(files, { ownerId: 1 }, { sort });
      const picked = await store.find(files, { ownerId: 1 }, { sort, fields: ['status', 'nowhere'] });
      assert.deepEqual(picked, all.map((doc) => ({ _id: doc._id, ...('status' in doc ? { status: doc.status } : {}) })));
      assert.deepEqual(await store.find(files, { _id: 'a' }, { fields: [] }), [{ _id: 'a' }]);
      await assert.rejects(store.find(files, {}, { fields: ['_pos'] }));
      await assert.rejects(store.find(files, {}, { fields: ['a.b'] }));
    });

    it('treats a missing field as null', async () => {
      const files = fresh('files');
      await seedFiles(files);
      const sort: [string, 1][] = [['_id', 1]];
      assert.deepEqual(ids(await store.find(files, { category: null }, { sort })), ['b', 'c']);
      assert.deepEqual(ids(await store.find(files, { category: { in: [null, 'art'] } }, { sort })), ['b', 'c', 'd']);
      assert.deepEqual(ids(await store.find(files, { nowhere: null }, { sort })), ['a', 'b', 'c', 'd', 'e']);
      assert.equal(await store.count(files, { category: null }), 2);
    });

    it('follows updates in later finds', async () => {
      const files = fresh('files');
      await seedFiles(files);
      assert.deepEqual(ids(await store.find(files, { status: 'gone' })), ['c']);
      await store.applyBatch([
        { collection: files, id: 'a', update: { set: { status: 'gone' } }, position: 10 },
        { collection: files, id: 'c', update: { set: { status: 'live' } }, position: 10 },
        { collection: files, id: 'f', update: { set: { status: 'gone' } }, position: 11 },
      ]);
      const sort: [string, 1][] = [['_id', 1]];
      assert.deepEqual(ids(await store.find(files, { status: 'gone' }, { sort })), ['a', 'f']);
      assert.deepEqual(ids(await store.find(files, { status: 'live' }, { sort })), ['c', 'd']);
    });

    it('sorts by several keys in both directions', async () => {
      const files = fresh('files');
      const rows: [string, Record<string, unknown>][] = [
        ['p', { owner: 2, at: '2024-03' }],
        ['q', { owner: 10, at: '2024-01' }],
        ['r', { owner: 2, at: '2024-05' }],
        ['s', { at: '2024-02' }],
        ['t', { owner: 10, at: '2024-04' }],
        ['u', { owner: null, at: '2024-06' }],
      ];
      await store.applyBatch(rows.map(([id, set], i) => ({ collection: files, id, update: { set }, position: i + 1 })));

      // Numbers compare numerically (2 < 10); null and missing come first ascending.
      const ownerUpAtDown = await store.find(files, {}, { sort: [['owner', 1], ['at', -1]] });
      assert.deepEqual(ids(ownerUpAtDown), ['u', 's', 'r', 'p', 't', 'q']);
      const ownerDownAtUp = await store.find(files, {}, { sort: [['owner', -1], ['at', 1]] });
      assert.deepEqual(ids(ownerDownAtUp), ['q', 't', 'p', 'r', 's', 'u']);
      assert.deepEqual(ids(await store.find(files, {}, { sort: [['at', -1]] })), ['u', 'r', 't', 'p', 's', 'q']);
    });

    it('sorts strings by code unit', async () => {
      const files = fresh('files');
      const titles = ['b', 'B', 'a', 'A', 'ab', '10', '9'];
      await store.applyBatch(titles.map((title, i) => ({ collection: files, id: `id-${title}`, update: { set: { title } }, position: i + 1 })));
      const sorted = await store.find(files, {}, { sort: [['title', 1]] });
      assert.deepEqual(sorted.map((doc) => doc['title']), ['10', '9', 'A', 'B', 'a', 'ab', 'b']);
    });

    it('skips and limits after sorting', async () => {
      const files = fresh('files');
      for (let i = 1; i <= 7; i++) await one(files, `f${i}`, { set: { rank: i, kind: 'x' } }, i);
      const page = (skip?: number, limit?: number): Promise<Doc[]> =>
        store.find(files, { kind: 'x' }, { sort: [['rank', -1]], ...(skip === undefined ? {} : { skip }), ...(limit === undefined ? {} : { limit }) });
      assert.deepEqual(ids(await page(2, 3)), ['f5', 'f4', 'f3']);
      assert.deepEqual(ids(await page(undefined, 2)), ['f7', 'f6']);
      assert.deepEqual(ids(await page(5)), ['f2', 'f1']);
      assert.deepEqual(ids(await page(6, 10)), ['f1']);
      assert.deepEqual(await page(7, 10), []);
      assert.deepEqual(await page(100), []);
      // limit 0 means no documents (Mongo reads it as "no limit": its adapter must special-case it).
      assert.deepEqual(await page(0, 0), []);
      assert.equal((await page()).length, 7);
    });

    it('counts matching documents', async () => {
      const files = fresh('files');
      await seedFiles(files);
      assert.equal(await store.count(files, {}), 5);
      assert.equal(await store.count(files, { ownerId: 1 }), 3);
      assert.equal(await store.count(files, { ownerId: 1, visible: true }), 2);
      assert.equal(await store.count(files, { status: { in: ['draft', 'live'] } }), 4);
      assert.equal(await store.count(files, { ownerId: 42 }), 0);
    });

    it('pages after a key of the first sort field, in either direction, with equality on others', async () => {
      const files = fresh('files');
      const rows: [string, Record<string, unknown>][] = [
        ['a', { owner: 1, n: 5 }], ['b', { owner: 1, n: 2 }], ['c', { owner: 2, n: 3 }], ['d', { owner: 1, n: 9 }],
        ['e', { owner: 1, n: 'text' }], ['f', { owner: 1 }], ['g', { owner: 1, n: 7 }],
      ];
      await store.applyBatch(rows.map(([id, set], i) => ({ collection: files, id, update: { set }, position: i + 1 })));
      // Numbers past 2 only: a string, a missing field are of another type.
      assert.deepEqual(ids(await store.find(files, { owner: 1 }, { sort: [['n', 1]], after: 2 })), ['a', 'g', 'd']);
      assert.deepEqual(ids(await store.find(files, { owner: 1 }, { sort: [['n', 1]], after: 5, limit: 1 })), ['g']);
      assert.deepEqual(ids(await store.find(files, { owner: 1 }, { sort: [['n', -1]], after: 7 })), ['a', 'b']);
      assert.deepEqual(ids(await store.find(files, {}, { sort: [['_id', 1]], after: 'e' })), ['f', 'g']);
      assert.deepEqual(await store.find(files, { owner: 1 }, { sort: [['n', 1]], after: 9 }), []);
      // Paged to the end, a page at a time, it lists each number once.
      const seen: string[] = [];
      let last: number | undefined;
      for (;;) {
        const page = await store.find(files, { owner: 1 }, { sort: [['n', 1]], limit: 2, ...(last === undefined ? {} : { after: last }) });
        const numbers = page.filter((doc) => typeof doc['n'] === 'number');
        if (numbers.length === 0) break;
        seen.push(...ids(numbers));
        last = numbers[numbers.length - 1]!['n'] as number;
      }
      assert.deepEqual(seen, ['b', 'a', 'g', 'd']);
      await assert.rejects(store.find(files, { owner: 1 }, { after: 2 }), /sort/);
      await assert.rejects(store.find(files, { n: 2 }, { sort: [['n', 1]], after: 2 }), /filter/);
      await assert.rejects(store.find(files, {}, { sort: [['n', 1]], after: wrongType<number>(null) }));
    });

    it('updates every matching document unguarded, whatever position it applied, and leaves the guard as it was', async () => {
      const comments = fresh('comments');
      await store.applyBatch([
        { collection: comments, id: 'c1', update: { set: { author: 7, text: 'one', file: 1 } }, position: 10 },
        { collection: comments, id: 'c2', update: { set: { author: 7, text: 'two', file: 2 } }, position: 500 },
        { collection: comments, id: 'c3', update: { set: { author: 8, text: 'three', file: 1 } }, position: 20 },
      ]);
      // A filter on the field before (an index the memory store then keeps up to date).
      assert.equal(await store.count(comments, { text: 'one' }), 1);
      assert.equal(await store.updateWhere(comments, { author: 7 }, { text: '[deleted]' }), 2);
      const sort: [string, 1][] = [['_id', 1]];
      assert.deepEqual((await store.find(comments, {}, { sort })).map((doc) => doc['text']), ['[deleted]', '[deleted]', 'three']);
      // Idempotent; follows in filters (an indexed field too) and counts.
      assert.equal(await store.updateWhere(comments, { author: { in: [7] } }, { text: '[deleted]' }), 2);
      assert.equal(await store.count(comments, { text: '[deleted]' }), 2);
      assert.equal(await store.count(comments, { text: 'one' }), 0);
      assert.deepEqual(ids(await store.find(comments, { author: 7, text: '[deleted]' }, { sort })), ['c1', 'c2']);
      // The guard did not move: an update at or below a position applied is still skipped, a newer one applies.
      assert.equal(await store.applyBatch([{ collection: comments, id: 'c2', update: { set: { text: 'two' } }, position: 500 }]), 0);
      assert.equal(await store.applyBatch([{ collection: comments, id: 'c1', update: { set: { hidden: true } }, position: 11 }]), 1);
      assert.deepEqual(await store.get(comments, 'c1'), { _id: 'c1', author: 7, text: '[deleted]', file: 1, hidden: true });
      // Creates nothing; a collection never written is fine.
      assert.equal(await store.updateWhere(comments, { author: 99 }, { text: 'x' }), 0);
      assert.equal(await store.count(comments, { author: 99 }), 0);
      assert.equal(await store.updateWhere(fresh('none'), { author: 7 }, { text: 'x' }), 0);
      // Refused as applyBatch and find refuse them, writing nothing.
      await assert.rejects(store.updateWhere(comments, { author: 8 }, { _pos: 1 }));
      await assert.rejects(store.updateWhere(comments, { author: 8 }, { _id: 'x' }));
      await assert.rejects(store.updateWhere(comments, { author: 8 }, { 'a.b': 1 }));
      await assert.rejects(store.updateWhere(comments, { _pos: 20 }, { text: 'x' }));
      assert.equal((await store.get(comments, 'c3'))?.['text'], 'three');
    });

    it('gives the distinct values of a field over matching documents, in order', async () => {
      const files = fresh('files');
      await seedFiles(files);
      assert.deepEqual(await store.distinct(files, 'category', {}), ['art', 'maths']);
      assert.deepEqual(await store.distinct(files, 'ownerId', { visible: true }), [1, 2, 3]);
      assert.deepEqual(await store.distinct(files, 'ownerId', { status: { in: ['draft', 'gone'] } }), [1, 2]);
      assert.deepEqual(await store.distinct(files, 'category', { ownerId: 2 }), [], 'null gives nothing');
      assert.deepEqual(await store.distinct(files, 'nothing', {}), []);
      assert.deepEqual(await store.distinct(fresh('none'), 'ownerId', {}), []);
      // Mixed types in the port's order; an array gives its elements; an object gives nothing.
      const mixed = fresh('mixed');
      const rows: [string, unknown][] = [['m1', 10], ['m2', 'b'], ['m3', true], ['m4', 2], ['m5', ['a', 10, 'c']], ['m6', { x: 1 }], ['m7', 'b']];
      for (const [i, [id, value]] of rows.entries()) await one(mixed, id, { set: { v: value } }, i + 1);
      assert.deepEqual(await store.distinct(mixed, 'v', {}), [2, 10, 'a', 'b', 'c', true]);
      // Follows updates.
      await one(files, 'd', { set: { category: 'music' } }, 100);
      assert.deepEqual(await store.distinct(files, 'category', { visible: true }), ['maths', 'music']);
      await assert.rejects(store.distinct(files, '_pos', {}));
      await assert.rejects(store.distinct(files, 'category', { _pos: 1 }));
    });

    it('returns copies that carry _id and not the guard bookkeeping', async () => {
      const files = fresh('files');
      const tags = ['x', 'y'];
      const meta = { pages: 3 };
      await one(files, 'f', { set: { tags, meta } }, 1);
      tags.push('mutated-input');
      meta.pages = 99;

      const got: Doc | null = await store.get(files, 'f');
      assert.ok(got);
      assert.equal(got._id, 'f');
      assert.equal('_pos' in got, false);
      assert.deepEqual(got, { _id: 'f', tags: ['x', 'y'], meta: { pages: 3 } });
      (got['tags']).push('mutated-output');
      (got['meta']).pages = 0;
      Object.assign(got, { extra: true });

      const [found] = await store.find(files, { _id: 'f' });
      assert.ok(found);
      assert.equal('_pos' in found, false);
      assert.deepEqual(found, { _id: 'f', tags: ['x', 'y'], meta: { pages: 3 } });
      (found['tags']).length = 0;
      assert.deepEqual(await store.get(files, 'f'), { _id: 'f', tags: ['x', 'y'], meta: { pages: 3 } });
    });

    it('refuses updates Mongo would refuse, leaving the document untouched', async () => {
      const docs = fresh('refused');
      await one(docs, 'd', { set: { n: 'text', x: 1, z: null } }, 1);
      const refused: Update[] = [
        { set: { x: 2 }, inc: { x: 1 } },
        { set: { x: 2 }, setOnInsert: { x: 1 } },
        { set: { 'a.b': 1 } },
        { set: { $where: 1 } },
        { set: { _id: 'other' } },
        { set: { _pos: 5 } },
        { inc: { _pos: 1 } },
        { setOnInsert: { _pos: 1 } },
        { inc: { n: 1 } },
        { inc: { z: 1 } },
        { inc: { x: Number.NaN } },
      ];
      for (const update of refused) {
        await assert.rejects(one(docs, 'd', update, 2), Error, JSON.stringify(update));
      }
      for (const collection of [docs, fresh('missing')]) {
        await assert.rejects(store.find(collection, {}, { skip: -1 }));
        await assert.rejects(store.find(collection, {}, { limit: 1.5 }));
      }
      assert.deepEqual(await store.get(docs, 'd'), { _id: 'd', n: 'text', x: 1, z: null });
      // Nothing was recorded by the refused updates: position 2 still applies.
      assert.equal(await one(docs, 'd', { set: { x: 2 } }, 2), 1);
      assert.deepEqual(await store.get(docs, 'd'), { _id: 'd', n: 'text', x: 2, z: null });
    });

    it('rejects a whole batch holding an invalid update, writing nothing', async () => {
      const docs = fresh('batch');
      const other = fresh('other');
      await one(docs, 'd', { set: { x: 1 } }, 1);
      const valid: GuardedUpdate[] = [
        { collection: docs, id: 'd', update: { inc: { x: 1 } }, position: 2 },
        { collection: other, id: 'o', update: { set: { y: 1 } }, position: 3 },
        { collection: docs, id: 'n', update: { set: { y: 1 } }, position: 4 },
      ];
      const invalid: [string, GuardedUpdate][] = [
        ['reserved field', { collection: docs, id: 'n', update: { set: { _pos: 1 } }, position: 5 }],
        ['two operators', { collection: docs, id: 'n', update: { set: { a: 1 }, inc: { a: 1 } }, position: 5 }],
        ['dotted field', { collection: other, id: 'o', update: { set: { 'a.b': 1 } }, position: 5 }],
        ['non-finite inc', { collection: docs, id: 'd', update: { inc: { x: Infinity } }, position: 5 }],
        ['id not a string', { collection: docs, id: wrongType<string>(7), update: { set: { a: 1 } }, position: 5 }],
        ['no collection', { collection: '', id: 'n', update: { set: { a: 1 } }, position: 5 }],
      ];
      for (const position of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 53, wrongType<number>('6'), wrongType<number>(undefined)]) {
        invalid.push([`position ${String(position)}`, { collection: docs, id: 'n', update: { set: { a: 1 } }, position }]);
      }
      for (const [label, bad] of invalid) {
        for (const at of [0, 1, 3]) {
          const batch = [...valid];
          batch.splice(at, 0, bad);
          await assert.rejects(store.applyBatch(batch), Error, `${label} at ${at}`);
        }
      }
      assert.deepEqual(await store.get(docs, 'd'), { _id: 'd', x: 1 });
      assert.equal(await store.get(other, 'o'), null);
      assert.equal(await store.get(docs, 'n'), null);
      assert.equal(await store.applyBatch(valid), 3);
      assert.deepEqual(await store.get(docs, 'd'), { _id: 'd', x: 2 });
    });

    it('rejects a batch with an inc of a field that is not a number, not applying that update', async () => {
      const docs = fresh('typed');
      await one(docs, 'd', { set: { t: 'text', n: 1 } }, 1);
      await assert.rejects(store.applyBatch([
        { collection: docs, id: 'd', update: { inc: { n: 1 }, set: { seen: true } }, position: 2 },
        { collection: docs, id: 'd', update: { inc: { t: 1, n: 1 } }, position: 3 },
      ]));
      await assert.rejects(store.applyBatch([
        { collection: docs, id: 'e', update: { set: { t: 'text' } }, position: 2 },
        { collection: docs, id: 'e', update: { inc: { t: 1 } }, position: 3 },
      ]));
      // The refused update was not applied (what else of the batch was is up to the adapter).
      assert.equal((await store.get(docs, 'd'))?.['t'], 'text');
      assert.equal(await one(docs, 'd', { inc: { n: 1 } }, 3), 1);
    });

    it('never returns _pos, and refuses it in filters and sorts', async () => {
      const docs = fresh('hidden');
      await store.applyBatch([
        { collection: docs, id: 'a', update: { set: { k: 1 } }, position: 5 },
        { collection: docs, id: 'b', update: { set: { k: 1 } }, position: 6 },
      ]);
      for (const doc of [await store.get(docs, 'a'), ...(await store.find(docs, {})), ...(await store.find(docs, { k: 1 }, { limit: 1 }))]) {
        assert.ok(doc);
        assert.deepEqual(Object.keys(doc).sort(), ['_id', 'k']);
      }
      await assert.rejects(store.find(docs, { _pos: 5 }));
      await assert.rejects(store.find(docs, { _pos: { in: [5] } }));
      await assert.rejects(store.count(docs, { _pos: null }));
      await assert.rejects(store.find(docs, {}, { sort: [['_pos', 1]] }));
    });

    it('stores a top-level undefined as null and matches arrays by element', async () => {
      const docs = fresh('values');
      await one(docs, 'u', { set: { gone: undefined }, setOnInsert: { also: undefined, none: null } }, 1);
      assert.deepEqual(await store.get(docs, 'u'), { _id: 'u', gone: null, also: null, none: null });
      await store.applyBatch([
        { collection: docs, id: 'a', update: { set: { tags: ['x', 'y'] } }, position: 2 },
        { collection: docs, id: 'b', update: { set: { tags: ['y', null] } }, position: 3 },
        { collection: docs, id: 'c', update: { set: { tags: [] } }, position: 4 },
      ]);
      const sort: [string, 1][] = [['_id', 1]];
      assert.deepEqual(ids(await store.find(docs, { tags: 'y' }, { sort })), ['a', 'b']);
      assert.deepEqual(ids(await store.find(docs, { tags: null }, { sort })), ['b', 'u']);
      // A null setOnInsert in a batch that also updates the new document afterwards.
      await store.applyBatch([
        { collection: docs, id: 'v', update: { setOnInsert: { none: null }, inc: { n: 1 } }, position: 5 },
        { collection: docs, id: 'v', update: { set: { none: 'later' }, inc: { n: 1 } }, position: 6 },
        { collection: docs, id: 'w', update: { setOnInsert: { none: null }, inc: { n: 1 } }, position: 6 },
        { collection: docs, id: 'w', update: { inc: { n: 1 } }, position: 7 },
      ]);
      assert.deepEqual(await store.get(docs, 'v'), { _id: 'v', none: 'later', n: 2 });
      assert.deepEqual(await store.get(docs, 'w'), { _id: 'w', none: null, n: 2 });
    });

    it('clear empties every collection and forgets the positions', async () => {
      const files = fresh('files');
      const users = fresh('users');
      const batch: GuardedUpdate[] = [
        { collection: files, id: 'f', update: { inc: { n: 1 } }, position: 1 },
        { collection: users, id: 'u', update: { inc: { n: 1 } }, position: 1 },
      ];
      assert.equal(await store.applyBatch(batch), 2);
      await store.clear();
      assert.equal(await store.get(files, 'f'), null);
      assert.equal(await store.count(files, {}), 0);
      assert.deepEqual(await store.find(users, {}), []);
      // A rebuild replays the log from the start: the same positions must apply again.
      assert.equal(await store.applyBatch(batch), 2);
      assert.deepEqual(await store.get(files, 'f'), { _id: 'f', n: 1 });
    });
  });
}
