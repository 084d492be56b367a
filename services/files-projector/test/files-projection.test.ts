import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeMemoryReadStore, type ReadStore } from '@docshare/read-store';
import { deliveredTwice, inBatches, makeHistory, redeliveredBatches } from '@docshare/projection/testing';
import type { StoredEvent } from '@docshare/contracts';
import { guarded } from '@docshare/projection';
import { CATEGORIES, CATEGORY_USE, COMMENTS, FILES, filesHandler, filesProjection, PURCHASES, USERS } from '../src/projection.ts';
import { makeFilesQueries } from '../src/queries.ts';

const BASE = 'http://docs.example';
const page = { page: 1, perPage: 20 };

const history = () => {
  const h = makeHistory();
  h.user(1, 'Ada'); h.user(2, 'Bob');
  h.category(1, 'General');
  h.upload(10, 1, 'first'); h.upload(11, 1, 'second'); h.upload(12, 1, 'third'); h.upload(13, 2, 'bobs');
  h.update(11, 1, { enabled: false });
  h.update(12, 1, { title: 'third, renamed' });
  h.comment(1, 10, 1, 2, 'on first', 'first'); h.comment(2, 12, 1, 2, 'on third', 'third'); h.comment(3, 13, 2, 1, 'on bobs', 'bobs');
  h.comment(4, 10, 1, 2, 'again', 'first');
  h.remove(10, 1);
  return h.records;
};

const whole = { page: 1, perPage: 100 };

/** Projects `records` one at a time, or as the given batches. */
const project = async (records: readonly StoredEvent[], batches: readonly (readonly StoredEvent[])[] = records.map((r) => [r])) => {
  const store = makeMemoryReadStore();
  const handle = filesHandler(store);
  for (const batch of batches) await handle(batch);
  return makeFilesQueries(store, BASE);
};

describe('files projection', () => {
  it('lists the owner all of their files but deleted ones, newest first', async () => {
    const q = await project(history());
    const list = await q.filesOf(1, 1, page);
    assert.deepEqual(list.user, { id: 1, name: 'Ada' });
    assert.deepEqual(list.files.map((f) => f.file_id), [12, 11]);
    assert.deepEqual(list.files[0], {
      file_id: 12, upload_date: '2026-11-20', title: 'third, renamed', description: 'About third', file_url: `${BASE}/docs/12`,
    });
    assert.equal(list.total, 2);
  });

  it('shows other users only enabled files', async () => {
    const q = await project(history());
    assert.deepEqual((await q.filesOf(1, 2, page)).files.map((f) => f.file_id), [12]);
  });

  it('answers User not found for an unknown user', async () => {
    const q = await project(history());
    await assert.rejects(q.filesOf(99, 1, page), /User not found/);
    await assert.rejects(q.commentsReceivedBy(99, whole), /User not found/);
  });

  it('lists comments received on live files, newest first, with the current title', async () => {
    const q = await project(history());
    assert.deepEqual(await q.commentsReceivedBy(1, whole), {
      data: [{ comment_id: 2, submission_date: '2026-11-20', title: 'third, renamed', comment: 'on third', link: `${BASE}/docs/12` }],
      total: 1, page: 1, per_page: 100,
    });
    assert.deepEqual((await q.commentsReceivedBy(2, whole)).data.map((c) => c.comment_id), [3]);
  });

  it('lists categories', async () => {
    const q = await project(history());
    assert.deepEqual(await q.categories(whole), {
      data: [{ id: 1, name: 'General', description: 'General things', tags: 'a,b' }], total: 1, page: 1, per_page: 100,
    });
  });

  it('ends in the same state when every event is delivered twice and the history replayed', async () => {
    const once = await project(history());
    const twice = await project(deliveredTwice(history()));
    assert.deepEqual(await twice.filesOf(1, 1, page), await once.filesOf(1, 1, page));
    assert.deepEqual(await twice.filesOf(2, 1, page), await once.filesOf(2, 1, page));
    assert.deepEqual(await twice.commentsReceivedBy(1, whole), await once.commentsReceivedBy(1, whole));
    assert.deepEqual(await twice.commentsReceivedBy(2, whole), await once.commentsReceivedBy(2, whole));
    assert.deepEqual(await twice.categories(whole), await once.categories(whole));
  });

  it('pages received comments and categories in the store: total counts only comments on live files', async () => {
    const h = makeHistory();
    h.user(1, 'Ada'); h.user(2, 'Bob');
    for (let c = 1; c <= 3; c += 1) h.category(c, `Cat${c}`);
    h.upload(10, 1, 'kept'); h.upload(11, 1, 'gone');
    // A category is listed while a file is in it.
    h.upload(20, 2, 'in 2', { categoryId: 2 }); h.upload(30, 2, 'in 3', { categoryId: 3 });
    for (let id = 1; id <= 7; id += 1) h.comment(id, id % 2 === 0 ? 11 : 10, 1, 2, `c${id}`, 'x');
    h.remove(11, 1);
    for (const records of [h.records, deliveredTwice(h.records)]) {
      const q = await project(records);
      const first = await q.commentsReceivedBy(1, { page: 1, perPage: 3 });
      assert.deepEqual(first.data.map((c) => c.comment_id), [7, 5, 3]);
      assert.deepEqual([first.total, first.page, first.per_page], [4, 1, 3]);
      assert.deepEqual((await q.commentsReceivedBy(1, { page: 2, perPage: 3 })).data.map((c) => c.comment_id), [1]);
      assert.deepEqual((await q.commentsReceivedBy(1, { page: 3, perPage: 3 })).data, []);
      const cats = await q.categories({ page: 2, perPage: 2 });
      assert.deepEqual(cats.data.map((c) => c.id), [3]);
      assert.equal(cats.total, 3);
    }
  });

  it('a comment replayed after its file was deleted stays out of the list', async () => {
    const h = makeHistory();
    h.user(1, 'Ada'); h.user(2, 'Bob');
    h.upload(10, 1, 'gone');
    const posted = h.comment(1, 10, 1, 2, 'late', 'gone');
    h.remove(10, 1);
    const q = await project([...h.records, posted]);
    assert.deepEqual(await q.commentsReceivedBy(1, whole), { data: [], total: 0, page: 1, per_page: 100 });
  });

  it('ends in the same state fed in batches of any size, and when every batch is redelivered overlapping the next', async () => {
    const records = history();
    const state = async (q: Awaited<ReturnType<typeof project>>) => [
      await q.filesOf(1, 1, page), await q.filesOf(2, 1, page), await q.commentsReceivedBy(1, whole),
      await q.commentsReceivedBy(2, whole), await q.categories(whole),
    ];
    const once = await state(await project(records));
    for (const size of [2, 3, 7, records.length]) {
      assert.deepEqual(await state(await project(records, inBatches(records, size))), once, `batches of ${size}`);
      assert.deepEqual(await state(await project(records, redeliveredBatches(records, size))), once, `redelivered batches of ${size}`);
    }
  });
});

describe('categories in use', () => {
  /** Categories 1–4; files of two owners in them, some deleted, one disabled; 4 never had a file. */
  const used = () => {
    const h = makeHistory();
    h.user(1, 'Ada'); h.user(2, 'Bob');
    for (let c = 1; c <= 4; c += 1) h.category(c, `Cat${c}`);
    h.upload(10, 1, 'a', { categoryId: 1 }); h.upload(11, 2, 'b', { categoryId: 1 });
    h.upload(20, 1, 'c', { categoryId: 2 }); h.upload(21, 1, 'd', { categoryId: 2 });
    h.upload(30, 2, 'e', { categoryId: 3 });
    h.update(30, 2, { enabled: false });
    h.remove(10, 1); // category 1 keeps Bob's file
    h.remove(20, 1); h.remove(21, 1); // category 2 is empty
    return h;
  };
  const ids = async (q: Awaited<ReturnType<typeof project>>) => (await q.categories(whole)).data.map((c) => c.id);

  it('lists a category while a visible file (enabled, not deleted) is in it', async () => {
    const q = await project(used().records);
    assert.deepEqual(await ids(q), [1]);
    assert.equal((await q.categories(whole)).total, 1);
    const h = used();
    h.upload(40, 1, 'f', { categoryId: 4 });
    h.update(30, 2, { enabled: true }); // category 3 again
    h.update(40, 1, { enabled: false });
    h.update(40, 1, { title: 'renamed' });
    const again = await project(h.records);
    assert.deepEqual(await ids(again), [1, 3]);
    assert.deepEqual((await again.categories({ page: 2, perPage: 1 })).data.map((c) => c.id), [3]);
    // A disabled file deleted: nothing more to take away.
    h.remove(40, 1); h.remove(30, 2);
    assert.deepEqual(await ids(await project(h.records)), [1]);
    h.upload(41, 1, 'g', { categoryId: 4 });
    assert.deepEqual(await ids(await project(h.records)), [1, 4]);
  });

  it('counts a disabling or deletion whose file document a cut-off batch wrote without its count', async () => {
    for (const last of ['disable', 'delete'] as const) {
      const h = makeHistory();
      h.user(1, 'Ada'); h.category(5, 'Five');
      h.upload(50, 1, 'only', { categoryId: 5 });
      const before = [...h.records];
      const cut = last === 'disable' ? h.update(50, 1, { enabled: false }) : h.remove(50, 1);
      const store = makeMemoryReadStore();
      await filesHandler(store)(before);
      // The batch's file document was written, its category count not (MongoDB's unordered bulk).
      await store.applyBatch(guarded(cut, filesProjection(cut.event)));
      await filesHandler(store)([cut]);
      assert.deepEqual((await makeFilesQueries(store, BASE).categories(whole)).data, [], last);
    }
  });

  it('50 files uploaded and deleted, each in a new category, leave none listed; a new file brings one back', async () => {
    const h = makeHistory();
    h.user(1, 'Ada');
    for (let i = 1; i <= 50; i += 1) {
      h.category(i, `Empty${i}`);
      h.upload(100 + i, 1, `zero ${i}`, { categoryId: i, size: 0 });
      h.remove(100 + i, 1);
    }
    const q = await project(h.records);
    assert.deepEqual(await q.categories(whole), { data: [], total: 0, page: 1, per_page: 100 });
    h.upload(200, 1, 'back', { categoryId: 7 });
    assert.deepEqual(await ids(await project(h.records)), [7]);
  });

  it('ends in the same state delivered twice, in batches, and redelivered overlapping', async () => {
    const records = used().records;
    const state = (q: Awaited<ReturnType<typeof project>>) => q.categories(whole);
    const once = await state(await project(records));
    assert.deepEqual(await state(await project(deliveredTwice(records))), once);
    for (const size of [2, 3, 5]) {
      assert.deepEqual(await state(await project(records, inBatches(records, size))), once, `batches of ${size}`);
      assert.deepEqual(await state(await project(records, redeliveredBatches(records, size))), once, `redelivered batches of ${size}`);
    }
  });
});

describe('purchases', () => {
  const bought = () => {
    const h = makeHistory();
    h.user(1, 'Ada'); h.user(2, 'Bob'); h.user(3, 'Cy');
    h.upload(10, 1, 'ten'); h.upload(11, 1, 'eleven'); h.upload(12, 1, 'twelve'); h.upload(13, 3, 'thirteen');
    for (const f of [10, 11, 12]) h.update(f, 1, { forSale: true, price: 2 });
    h.purchase(10, 1, 100, 2); h.purchase(11, 1, 101, 2); h.purchase(12, 1, 102, 2); h.purchase(10, 1, 103, 3);
    // Recorded before "a buyer buys a file once": the first sale stands.
    h.purchase(11, 1, 104, 2);
    h.update(10, 1, { title: 'ten, renamed', price: 9 });
    h.update(11, 1, { enabled: false });
    h.remove(12, 1);
    return h;
  };

  it('lists what a buyer bought: enabled files not deleted, current title, first sale', async () => {
    const q = await project(bought().records);
    assert.deepEqual(await q.purchasesOf(2, page), {
      items: [{ fileId: 10, title: 'ten, renamed', saleId: 100, purchasedAt: '2026-11-20T10:33:00.000Z' }], total: 1,
    });
    assert.deepEqual((await q.purchasesOf(3, page)).items.map((p) => p.saleId), [103]);
    assert.deepEqual(await q.purchasesOf(1, page), { items: [], total: 0 });
  });

  it('a file enabled again is listed again, with its first sale', async () => {
    const h = bought();
    h.update(11, 1, { enabled: true });
    const q = await project(h.records);
    const items = (await q.purchasesOf(2, page)).items;
    assert.deepEqual(items.map((p) => [p.fileId, p.saleId]), [[11, 101], [10, 100]]);
    assert.deepEqual((await q.purchasesOf(2, { page: 2, perPage: 1 })).items.map((p) => p.fileId), [10]);
  });

  it('ends in the same state delivered twice, in batches, and redelivered overlapping', async () => {
    const h = bought();
    h.update(11, 1, { enabled: true });
    const records = h.records;
    const state = async (q: Awaited<ReturnType<typeof project>>) => [await q.purchasesOf(2, page), await q.purchasesOf(3, page)];
    const once = await state(await project(records));
    assert.deepEqual(await state(await project(deliveredTwice(records))), once);
    for (const size of [2, 3, 7]) {
      assert.deepEqual(await state(await project(records, inBatches(records, size))), once, `batches of ${size}`);
      assert.deepEqual(await state(await project(records, redeliveredBatches(records, size))), once, `redelivered batches of ${size}`);
    }
  });
});

describe('list totals', () => {
  it('agree with the page although the count is a second read (a short page ends the list)', async () => {
    const { totalOf } = await import('../src/queries.ts');
    assert.equal(totalOf(1, { page: 1, perPage: 100 }, 2), 2, 'a short first page: the page is the list');
    assert.equal(totalOf(7, { page: 2, perPage: 3 }, 2), 5);
    assert.equal(totalOf(3, { page: 2, perPage: 3 }, 3), 6, 'a full page: at least what it shows');
    assert.equal(totalOf(9, { page: 2, perPage: 3 }, 3), 9);
    assert.equal(totalOf(5, { page: 3, perPage: 2 }, 0), 4, 'past the end: no more than the pages before it');
    assert.equal(totalOf(3, { page: 9, perPage: 2 }, 0), 3);
    assert.equal(totalOf(0, { page: 1, perPage: 2 }, 0), 0);
  });
});

describe('forgetting personal data', () => {
  const COLLECTIONS = [USERS, FILES, COMMENTS, CATEGORIES, PURCHASES, CATEGORY_USE];
  /** Every document of the read model, by collection (sorted by id). */
  const dump = async (store: ReadStore) =>
    Object.fromEntries(await Promise.all(COLLECTIONS.map(async (c) => [c, await store.find(c, {}, { sort: [['_id', 1]] })] as const)));
  const projectInto = async (records: readonly StoredEvent[], batches: readonly (readonly StoredEvent[])[] = records.map((r) => [r])) => {
    const store = makeMemoryReadStore();
    const handle = filesHandler(store);
    for (const batch of batches) await handle(batch);
    return { store, q: makeFilesQueries(store, BASE) };
  };

  /** Ada (1) comments on Bob's (2) files and her own; Bob deletes one after her erasure; Cy (3) comments too. */
  const erasure = () => {
    const h = makeHistory();
    h.user(1, 'Ada'); h.user(2, 'Bob'); h.user(3, 'Cy');
    h.category(1, 'General');
    h.upload(10, 1, 'adas'); h.upload(20, 2, 'bobs kept'); h.upload(21, 2, 'bobs gone');
    h.comment(1, 20, 2, 1, 'ada on kept', 'bobs kept'); h.comment(2, 21, 2, 1, 'ada on gone', 'bobs gone');
    h.comment(3, 20, 2, 3, 'cy on kept', 'bobs kept'); h.comment(4, 10, 1, 3, 'cy on adas', 'adas');
    h.purchase(20, 2, 1, 1);
    h.remove(10, 1);
    const erased = h.erased(1, { filesDeleted: 1, commentsRedacted: 2 });
    // After the erasure, on Bob's file's partition: that comment's guard moves past the erasure's position.
    const lateDeletion = h.remove(21, 2);
    return { records: h.records, erased, lateDeletion };
  };

  it('a deleted file keeps no title or description, and its comments no file title', async () => {
    const { store } = await projectInto(history());
    assert.deepEqual(await store.get(FILES, '10'), {
      _id: '10', file_id: 10, owner_id: 1, title: '', description: '', uploaded_at: '2026-11-20T10:10:00.000Z',
      category_id: 1, enabled: true, for_sale: false, deleted: true,
    });
    for (const id of ['1', '4']) {
      const comment = await store.get(COMMENTS, id);
      assert.equal(comment?.file_title, '');
      assert.equal(comment?.file_deleted, true);
    }
    assert.equal((await store.get(COMMENTS, '2'))?.file_title, 'third', 'a live file\'s comments keep it');
  });

  it('an erasure names the user [deleted] and redacts every comment they wrote, even one whose guard is past the erasure', async () => {
    const { records, erased, lateDeletion } = erasure();
    // As a partition ahead of the user's would apply them: the late deletion before the erasure.
    const reordered = [...records.filter((r) => r !== erased && r !== lateDeletion), lateDeletion, erased];
    for (const order of [records, reordered]) {
      const { store, q } = await projectInto(order);
      assert.deepEqual((await store.get(USERS, '1'))?.name, '[deleted]');
      assert.deepEqual((await store.get(USERS, '2'))?.name, 'Bob');
      const text = async (id: string) => (await store.get(COMMENTS, id))?.comment;
      assert.deepEqual([await text('1'), await text('2'), await text('3'), await text('4')], ['[deleted]', '[deleted]', 'cy on kept', 'cy on adas']);
      assert.deepEqual((await q.commentsReceivedBy(2, whole)).data.map((c) => [c.comment_id, c.comment]), [[3, 'cy on kept'], [1, '[deleted]']]);
      assert.equal(await q.countCommentsBy(1), 2, 'still counted');
      assert.deepEqual((await q.filesOf(1, 1, page)).user, { id: 1, name: '[deleted]' });
    }
  });

  it('ends in the same read model delivered twice, in batches, and redelivered overlapping, with the erasure', async () => {
    const { records } = erasure();
    const once = await dump((await projectInto(records)).store);
    assert.deepEqual(await dump((await projectInto(deliveredTwice(records))).store), once, 'delivered twice');
    for (const size of [2, 3, 5, records.length]) {
      assert.deepEqual(await dump((await projectInto(records, inBatches(records, size))).store), once, `batches of ${size}`);
      assert.deepEqual(await dump((await projectInto(records, redeliveredBatches(records, size))).store), once, `redelivered batches of ${size}`);
    }
  });

  it('redacts a comment of the same batch as the erasure, and leaves everyone else\'s', async () => {
    const h = makeHistory();
    h.user(1, 'Ada'); h.user(2, 'Bob');
    h.upload(20, 2, 'bobs');
    h.comment(1, 20, 2, 1, 'ada', 'bobs'); h.comment(2, 20, 2, 2, 'bob', 'bobs');
    h.erased(1);
    const { store } = await projectInto(h.records, [h.records]);
    assert.equal((await store.get(COMMENTS, '1'))?.comment, '[deleted]');
    assert.equal((await store.get(COMMENTS, '2'))?.comment, 'bob');
  });
});

describe('what an erasure and an export read', () => {
  const owned = () => {
    const h = makeHistory();
    h.user(1, 'Ada'); h.user(2, 'Bob');
    for (const id of [14, 11, 17, 12, 13, 15]) h.upload(id, 1, `f${id}`);
    h.upload(16, 2, 'bobs');
    h.update(12, 1, { enabled: false });
    h.remove(13, 1);
    h.comment(1, 16, 2, 1, 'ada on bobs', 'bobs'); h.comment(2, 11, 1, 1, 'ada on her own', 'f11');
    h.comment(3, 11, 1, 2, 'bob on adas', 'f11'); h.comment(4, 13, 1, 1, 'ada on a deleted file', 'f13');
    h.update(16, 2, { title: 'bobs, renamed' });
    return h.records;
  };

  it('lists a user\'s files not deleted, enabled or not, by id, a page after another', async () => {
    for (const records of [owned(), deliveredTwice(owned())]) {
      const q = await project(records);
      assert.deepEqual(await q.fileIdsOf(1, 0, 100), [11, 12, 14, 15, 17]);
      assert.deepEqual(await q.fileIdsOf(1, 0, 2), [11, 12]);
      assert.deepEqual(await q.fileIdsOf(1, 12, 2), [14, 15]);
      assert.deepEqual(await q.fileIdsOf(1, 15, 2), [17]);
      assert.deepEqual(await q.fileIdsOf(1, 17, 2), []);
      assert.deepEqual(await q.fileIdsOf(2, 0, 10), [16]);
      assert.deepEqual(await q.fileIdsOf(9, 0, 10), []);
    }
  });

  it('lists every comment a user wrote, newest first, as the comments list answers them, and counts them', async () => {
    for (const records of [owned(), deliveredTwice(owned())]) {
      const q = await project(records);
      assert.deepEqual(await q.commentsWrittenBy(1), [
        { comment_id: 4, submission_date: '2026-11-20', title: '', comment: 'ada on a deleted file', link: `${BASE}/docs/13` },
        { comment_id: 2, submission_date: '2026-11-20', title: 'f11', comment: 'ada on her own', link: `${BASE}/docs/11` },
        { comment_id: 1, submission_date: '2026-11-20', title: 'bobs, renamed', comment: 'ada on bobs', link: `${BASE}/docs/16` },
      ]);
      assert.equal(await q.countCommentsBy(1), 3);
      assert.deepEqual((await q.commentsWrittenBy(2)).map((c) => c.comment_id), [3]);
      assert.equal(await q.countCommentsBy(9), 0);
      assert.deepEqual(await q.commentsWrittenBy(9), []);
    }
  });

  it('reads more comments than a page holds, each once', async () => {
    const h = makeHistory();
    h.user(1, 'Ada');
    h.upload(10, 1, 'one');
    for (let id = 1; id <= 1203; id += 1) h.comment(id, 10, 1, 1, `c${id}`, 'one');
    const q = await project(h.records, [h.records]);
    const written = await q.commentsWrittenBy(1);
    assert.equal(written.length, 1203);
    assert.deepEqual(written.map((c) => c.comment_id), Array.from({ length: 1203 }, (_, i) => 1203 - i));
    assert.equal(await q.countCommentsBy(1), 1203);
  });
});
