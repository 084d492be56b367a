import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Doc, ReadStore, Update } from './port.ts';

/**
 * The behaviour every ReadStore adapter must share (memory, MongoDB, FerretDB). Each test uses
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

    it('creates a missing document from set, setOnInsert and inc', async () => {
      const files = fresh('files');
      const applied = await store.apply(
        files,
        'f1',
        { setOnInsert: { createdAt: '2024-01-01' }, set: { title: 'One', tags: ['a', 'b'] }, inc: { views: 2 } },
        { stream: 'file-1', version: 1 },
      );
      assert.equal(applied, true);
      assert.deepEqual(await store.get(files, 'f1'), {
        _id: 'f1', createdAt: '2024-01-01', title: 'One', tags: ['a', 'b'], views: 2,
      });
    });

    it('returns null / [] / 0 for unknown documents and collections', async () => {
      const files = fresh('files');
      assert.equal(await store.get(files, 'nope'), null);
      assert.deepEqual(await store.find(files, {}), []);
      assert.equal(await store.count(files, {}), 0);
      await store.apply(files, 'f1', { set: { a: 1 } }, { stream: 'file-1', version: 1 });
      assert.equal(await store.get(files, 'nope'), null);
    });

    it('applies setOnInsert only when inserting', async () => {
      const files = fresh('files');
      await store.apply(files, 'f1', { setOnInsert: { createdAt: 'first' }, set: { title: 'a' } }, { stream: 'file-1', version: 1 });
      const applied = await store.apply(
        files, 'f1', { setOnInsert: { createdAt: 'second' }, set: { title: 'b' } }, { stream: 'file-1', version: 2 },
      );
      assert.equal(applied, true);
      assert.deepEqual(await store.get(files, 'f1'), { _id: 'f1', createdAt: 'first', title: 'b' });
    });

    it('increments an absent field from 0, on a new or an existing document', async () => {
      const stats = fresh('stats');
      await store.apply(stats, 'u1', { inc: { downloads: 1 } }, { stream: 'file-1', version: 1 });
      await store.apply(stats, 'u1', { inc: { downloads: 2, views: 5 } }, { stream: 'file-1', version: 2 });
      await store.apply(stats, 'u1', { inc: { downloads: -1 } }, { stream: 'file-2', version: 1 });
      assert.deepEqual(await store.get(stats, 'u1'), { _id: 'u1', downloads: 2, views: 5 });
    });

    it('applies the same guard once (inc counted once)', async () => {
      const stats = fresh('stats');
      const guard = { stream: 'file-7', version: 3 };
      assert.equal(await store.apply(stats, 's', { inc: { n: 1 }, set: { last: 'x' } }, guard), true);
      assert.equal(await store.apply(stats, 's', { inc: { n: 1 }, set: { last: 'y' } }, guard), false);
      assert.deepEqual(await store.get(stats, 's'), { _id: 's', n: 1, last: 'x' });
    });

    it('applies concurrent duplicates of one guard once', async () => {
      const stats = fresh('stats');
      const guard = { stream: 'file-8', version: 1 };
      const results = await Promise.all(
        Array.from({ length: 8 }, () => store.apply(stats, 's', { inc: { n: 1 } }, guard)),
      );
      assert.equal(results.filter(Boolean).length, 1);
      assert.deepEqual(await store.get(stats, 's'), { _id: 's', n: 1 });
    });

    it('ignores an older version of a stream after a newer one', async () => {
      const files = fresh('files');
      assert.equal(await store.apply(files, 'f', { set: { title: 'v5' }, inc: { n: 1 } }, { stream: 'file-1', version: 5 }), true);
      assert.equal(await store.apply(files, 'f', { set: { title: 'v4' }, inc: { n: 1 } }, { stream: 'file-1', version: 4 }), false);
      assert.equal(await store.apply(files, 'f', { set: { title: 'v1' }, inc: { n: 1 } }, { stream: 'file-1', version: 1 }), false);
      assert.deepEqual(await store.get(files, 'f'), { _id: 'f', title: 'v5', n: 1 });
      assert.equal(await store.apply(files, 'f', { set: { title: 'v6' }, inc: { n: 1 } }, { stream: 'file-1', version: 6 }), true);
      assert.deepEqual(await store.get(files, 'f'), { _id: 'f', title: 'v6', n: 2 });
    });

    it('tracks different streams on one document independently', async () => {
      const users = fresh('users');
      assert.equal(await store.apply(users, 'u', { inc: { uploads: 1 } }, { stream: 'file-1', version: 9 }), true);
      assert.equal(await store.apply(users, 'u', { inc: { uploads: 1 } }, { stream: 'file-2', version: 1 }), true);
      assert.equal(await store.apply(users, 'u', { set: { name: 'Ann' } }, { stream: 'user-1', version: 1 }), true);
      assert.equal(await store.apply(users, 'u', { inc: { uploads: 1 } }, { stream: 'file-1', version: 3 }), false);
      assert.equal(await store.apply(users, 'u', { inc: { uploads: 1 } }, { stream: 'file-2', version: 2 }), true);
      assert.deepEqual(await store.get(users, 'u'), { _id: 'u', uploads: 3, name: 'Ann' });
    });

    it('keeps guards per document: one event may update several documents', async () => {
      const users = fresh('users');
      const guard = { stream: 'file-1', version: 1 };
      assert.equal(await store.apply(users, 'owner', { inc: { n: 1 } }, guard), true);
      assert.equal(await store.apply(users, 'buyer', { inc: { n: 1 } }, guard), true);
      assert.equal(await store.count(users, { n: 1 }), 2);
    });

    async function seedFiles(files: string): Promise<void> {
      const rows: Record<string, unknown>[] = [
        { _id: 'a', ownerId: 1, status: 'live', category: 'maths', visible: true },
        { _id: 'b', ownerId: 2, status: 'draft', category: null, visible: true },
        { _id: 'c', ownerId: 1, status: 'gone', visible: false },
        { _id: 'd', ownerId: 3, status: 'live', category: 'art', visible: true },
        { _id: 'e', ownerId: 1, status: 'draft', category: 'maths', visible: true },
      ];
      let version = 0;
      for (const { _id, ...fields } of rows) {
        await store.apply(files, _id as string, { set: fields }, { stream: `file-${_id as string}`, version: ++version });
      }
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
      await store.apply(files, 'a', { set: { status: 'gone' } }, { stream: 'file-a', version: 10 });
      await store.apply(files, 'c', { set: { status: 'live' } }, { stream: 'file-c', version: 10 });
      await store.apply(files, 'f', { set: { status: 'gone' } }, { stream: 'file-f', version: 1 });
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
      let version = 0;
      for (const [id, set] of rows) await store.apply(files, id, { set }, { stream: 's', version: ++version });

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
      let version = 0;
      for (const title of titles) await store.apply(files, `id-${title}`, { set: { title } }, { stream: 's', version: ++version });
      const sorted = await store.find(files, {}, { sort: [['title', 1]] });
      assert.deepEqual(sorted.map((doc) => doc['title']), ['10', '9', 'A', 'B', 'a', 'ab', 'b']);
    });

    it('skips and limits after sorting', async () => {
      const files = fresh('files');
      for (let i = 1; i <= 7; i++) await store.apply(files, `f${i}`, { set: { rank: i, kind: 'x' } }, { stream: `file-${i}`, version: 1 });
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

    it('returns copies that carry _id and not the guard bookkeeping', async () => {
      const files = fresh('files');
      const tags = ['x', 'y'];
      const meta = { pages: 3 };
      await store.apply(files, 'f', { set: { tags, meta } }, { stream: 'file-1', version: 1 });
      tags.push('mutated-input');
      meta.pages = 99;

      const got: Doc | null = await store.get(files, 'f');
      assert.ok(got);
      assert.equal(got._id, 'f');
      assert.equal('_seen' in got, false);
      assert.deepEqual(got, { _id: 'f', tags: ['x', 'y'], meta: { pages: 3 } });
      (got['tags'] as string[]).push('mutated-output');
      (got['meta'] as { pages: number }).pages = 0;
      (got as Doc)['extra'] = true;

      const [found] = await store.find(files, { _id: 'f' });
      assert.ok(found);
      assert.equal('_seen' in found, false);
      assert.deepEqual(found, { _id: 'f', tags: ['x', 'y'], meta: { pages: 3 } });
      (found['tags'] as string[]).length = 0;
      assert.deepEqual(await store.get(files, 'f'), { _id: 'f', tags: ['x', 'y'], meta: { pages: 3 } });
    });

    it('refuses updates Mongo would refuse, leaving the document untouched', async () => {
      const docs = fresh('refused');
      await store.apply(docs, 'd', { set: { n: 'text', x: 1, z: null } }, { stream: 's', version: 1 });
      const refused: Update[] = [
        { set: { x: 2 }, inc: { x: 1 } },
        { set: { x: 2 }, setOnInsert: { x: 1 } },
        { set: { 'a.b': 1 } },
        { set: { $where: 1 } },
        { set: { _id: 'other' } },
        { set: { _seen: {} } },
        { inc: { n: 1 } },
        { inc: { z: 1 } },
        { inc: { x: Number.NaN } },
      ];
      for (const update of refused) {
        await assert.rejects(store.apply(docs, 'd', update, { stream: 's', version: 2 }), Error, JSON.stringify(update));
      }
      await assert.rejects(store.apply(docs, 'd', { set: { x: 2 } }, { stream: 'file.1', version: 2 }));
      await assert.rejects(store.apply(docs, 'd', { set: { x: 2 } }, { stream: 's', version: Number.NaN }));
      for (const collection of [docs, fresh('missing')]) {
        await assert.rejects(store.find(collection, {}, { skip: -1 }));
        await assert.rejects(store.find(collection, {}, { limit: 1.5 }));
      }
      assert.deepEqual(await store.get(docs, 'd'), { _id: 'd', n: 'text', x: 1, z: null });
      // Nothing was recorded as seen by the refused updates.
      assert.equal(await store.apply(docs, 'd', { set: { x: 2 } }, { stream: 's', version: 2 }), true);
    });

    it('stores a top-level undefined as null and matches arrays by element', async () => {
      const docs = fresh('values');
      await store.apply(docs, 'u', { set: { gone: undefined }, setOnInsert: { also: undefined } }, { stream: 's', version: 1 });
      assert.deepEqual(await store.get(docs, 'u'), { _id: 'u', gone: null, also: null });
      await store.apply(docs, 'a', { set: { tags: ['x', 'y'] } }, { stream: 's', version: 2 });
      await store.apply(docs, 'b', { set: { tags: ['y', null] } }, { stream: 's', version: 3 });
      await store.apply(docs, 'c', { set: { tags: [] } }, { stream: 's', version: 4 });
      const sort: [string, 1][] = [['_id', 1]];
      assert.deepEqual(ids(await store.find(docs, { tags: 'y' }, { sort })), ['a', 'b']);
      assert.deepEqual(ids(await store.find(docs, { tags: null }, { sort })), ['b', 'u']);
    });

    it('clear empties every collection and forgets the guards', async () => {
      const files = fresh('files');
      const users = fresh('users');
      const guard = { stream: 'file-1', version: 1 };
      await store.apply(files, 'f', { inc: { n: 1 } }, guard);
      await store.apply(users, 'u', { inc: { n: 1 } }, guard);
      await store.clear();
      assert.equal(await store.get(files, 'f'), null);
      assert.equal(await store.count(files, {}), 0);
      assert.deepEqual(await store.find(users, {}), []);
      // A rebuild replays the log from the start: the same guards must apply again.
      assert.equal(await store.apply(files, 'f', { inc: { n: 1 } }, guard), true);
      assert.deepEqual(await store.get(files, 'f'), { _id: 'f', n: 1 });
    });
  });
}
