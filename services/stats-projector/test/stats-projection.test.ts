import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeMemoryReadStore } from '@docshare/read-store';
import { deliveredTwice, inBatches, makeHistory, redeliveredBatches } from '@docshare/projection/testing';
import type { StoredEvent } from '@docshare/contracts';
import { STORED_FILES, statsHandler } from '../src/projection.ts';
import { makeStatsQueries } from '../src/queries.ts';

const history = () => {
  const h = makeHistory();
  h.user(1, 'Ada'); h.user(2, 'Bob');
  h.upload(10, 1, 'a', { size: 1000 }); h.upload(11, 1, 'b', { size: 250 }); h.upload(12, 2, 'c', { size: 7 });
  h.view(10, 1); h.view(10, 1); h.view(12, 2);
  h.download(10, 1, 2); h.download(11, 1, 2); h.download(11, 1, 1);
  h.update(11, 1, { forSale: true, price: 2 }); h.purchase(11, 1, 1, 2);
  h.comment(1, 10, 1, 2, 'hi'); h.comment(2, 10, 1, 1, 'own'); h.comment(3, 12, 2, 1, 'yo');
  h.remove(10, 1);
  return h.records;
};

/** Projects `records` one at a time, or as the given batches. */
const project = async (records: readonly StoredEvent[], batches: readonly (readonly StoredEvent[])[] = records.map((r) => [r])) => {
  const store = makeMemoryReadStore();
  const handle = statsHandler(store);
  for (const batch of batches) await handle(batch);
  const queries = makeStatsQueries(store);
  return {
    ada: await queries.statsOf(1), bob: await queries.statsOf(2), nobody: await queries.statsOf(99),
    bytes: [await queries.bytesStoredBy(1), await queries.bytesStoredBy(2), await queries.bytesStoredBy(99)],
  };
};

describe('stats projection', () => {
  it('counts a buyer\'s sale of a file once, in a log recorded before "a buyer buys a file once" (repeats in it)', async () => {
    const h = makeHistory();
    h.user(1, 'Ada'); h.user(2, 'Bob'); h.user(3, 'Cy');
    h.upload(10, 1, 'a'); h.upload(11, 1, 'b');
    for (const f of [10, 11]) h.update(f, 1, { forSale: true, price: 2 });
    // Bob buys 10 five times, Cy once; Bob buys 11 twice.
    for (let i = 0; i < 5; i += 1) h.purchase(10, 1, 100 + i, 2);
    h.purchase(10, 1, 200, 3);
    h.purchase(11, 1, 300, 2); h.purchase(11, 1, 301, 2);
    const records = h.records;
    const once = await project(records);
    assert.equal(once.ada.total_sales, 3);
    assert.deepEqual(await project(deliveredTwice(records)), once);
    for (const size of [2, 3, 5]) {
      assert.deepEqual(await project(records, inBatches(records, size)), once, `batches of ${size}`);
      assert.deepEqual(await project(records, redeliveredBatches(records, size)), once, `redelivered batches of ${size}`);
    }
  });

  it('counts each kind of activity on the owner', async () => {
    const { ada, bob } = await project(history());
    assert.deepEqual(ada, { total_comments: 2, total_files: 1, total_views: 2, total_downloads: 3, total_sales: 1 });
    assert.deepEqual(bob, { total_comments: 1, total_files: 1, total_views: 1, total_downloads: 0, total_sales: 0 });
  });

  it('gives zeros for a user with no activity', async () => {
    const { nobody } = await project(history());
    assert.deepEqual(nobody, { total_comments: 0, total_files: 0, total_views: 0, total_downloads: 0, total_sales: 0 });
  });

  it('ends in the same state when every event is delivered twice and the history replayed', async () => {
    assert.deepEqual(await project(deliveredTwice(history())), await project(history()));
  });

  it('keeps bytes_stored per user: uploads add their size, a deletion gives it back; api-stats does not show it', async () => {
    const { ada, bytes } = await project(history());
    assert.deepEqual(bytes, [250, 7, 0]);
    assert.equal('bytes_stored' in ada, false);
  });

  it('a deletion frees its bytes once, whatever the redeliveries and replays', async () => {
    const h = makeHistory();
    h.user(1, 'Ada');
    h.upload(10, 1, 'a', { size: 4096 }); h.upload(11, 1, 'b', { size: 10 });
    h.remove(10, 1); h.remove(11, 1);
    h.upload(12, 1, 'c', { size: 5 });
    assert.deepEqual((await project(h.records)).bytes, [5, 0, 0]);
    assert.deepEqual((await project(deliveredTwice(h.records))).bytes, [5, 0, 0]);
    // A deletion redelivered long after the fact (after the next upload) changes nothing either.
    const deletion = h.records.find((r) => r.event.type === 'docs.file.deleted.v1');
    assert.ok(deletion);
    assert.deepEqual((await project([...h.records, deletion])).bytes, [5, 0, 0]);
  });

  it('ends in the same state fed in batches of any size, and when every batch is redelivered overlapping the next', async () => {
    const records = history();
    const once = await project(records);
    for (const size of [2, 3, 7, records.length]) {
      assert.deepEqual(await project(records, inBatches(records, size)), once, `batches of ${size}`);
      assert.deepEqual(await project(records, redeliveredBatches(records, size)), once, `redelivered batches of ${size}`);
    }
  });

  it('a deleted file keeps no title; an erasure changes no count, whatever the redeliveries', async () => {
    const base = history();
    const extra = makeHistory();
    extra.erased(2, { filesDeleted: 0, commentsRedacted: 1 });
    // Bob's erasure, after the history.
    const records = [...base, { ...extra.records[0]!, position: base.length + 1 }];
    for (const delivered of [records, deliveredTwice(records)]) {
      assert.deepEqual(await project(delivered), await project(history()), 'an erasure counts nothing');
      const store = makeMemoryReadStore();
      await statsHandler(store)(delivered);
      const stored = await store.get(STORED_FILES, '10');
      assert.equal(stored?.title, '');
      assert.equal(stored?.deleted, true);
      assert.equal((await store.get(STORED_FILES, '11'))?.title, 'b', 'a live file keeps it');
    }
  });

  it('counts nothing for text extraction, succeeded or failed, however often delivered', async () => {
    const h = makeHistory();
    h.user(1, 'Ada');
    h.upload(10, 1, 'a', { size: 100 }); h.upload(11, 1, 'b', { size: 20 });
    const before = await project(h.records);
    h.extracted(10, 1, 'some text'); h.extractionFailed(11, 1);
    assert.deepEqual(await project(deliveredTwice(h.records)), before);
  });
});
