import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeMemorySearchIndex } from '@docshare/search-index';
import { deliveredTwice, inBatches, makeHistory, redeliveredBatches } from '@docshare/projection/testing';
import type { StoredEvent } from '@docshare/contracts';
import { searchHandler } from '../src/projection.ts';

const history = () => {
  const h = makeHistory();
  h.user(1, 'Ada');
  h.upload(10, 1, 'quantum mechanics', { description: 'lecture notes', tags: ['physics', 'waves'], categoryName: 'Science' });
  h.upload(11, 1, 'medieval history', { description: 'castles and kings' });
  h.upload(12, 1, 'quantum computing', { description: 'qubits' });
  h.view(10, 1);
  h.update(10, 1, { title: 'quantum mechanics, revised' });
  h.update(11, 1, { enabled: false });
  h.remove(12, 1);
  return h.records;
};

/** Indexes `records` one at a time, or as the given batches. */
const project = async (records: readonly StoredEvent[], batches: readonly (readonly StoredEvent[])[] = records.map((r) => [r])) => {
  const index = makeMemorySearchIndex();
  const handle = searchHandler(index);
  for (const batch of batches) await handle(batch);
  return index;
};

const ids = async (index: Awaited<ReturnType<typeof project>>, text: string): Promise<string[]> =>
  (await index.search(text, { from: 0, size: 20 })).hits.map((d) => d.id);

describe('search projection', () => {
  it('indexes title, description, tags and category of visible files only', async () => {
    const index = await project(history());
    assert.deepEqual(await ids(index, 'quantum'), ['10']);
    assert.deepEqual(await ids(index, 'revised'), ['10']);
    assert.deepEqual(await ids(index, 'waves'), ['10']);
    assert.deepEqual(await ids(index, 'science'), ['10']);
    assert.deepEqual(await ids(index, 'castles'), []);
    assert.deepEqual(await ids(index, 'qubits'), []);
  });

  it('brings a disabled file back when it is enabled again', async () => {
    const h = makeHistory();
    h.upload(20, 1, 'zebra'); h.update(20, 1, { enabled: false }); h.update(20, 1, { enabled: true });
    assert.deepEqual(await ids(await project(h.records), 'zebra'), ['20']);
  });

  it('ends in the same state when every event is delivered twice and the history replayed', async () => {
    const once = await project(history());
    const twice = await project(deliveredTwice(history()));
    for (const id of ['10', '11', '12']) assert.deepEqual(await twice.get(id), await once.get(id));
  });

  it('ends in the same index fed in batches of any size, and when every batch is redelivered overlapping the next', async () => {
    const records = history();
    const state = async (index: Awaited<ReturnType<typeof project>>) =>
      Promise.all(['10', '11', '12'].map(async (id) => (await index.get(id)) ?? null));
    const once = await state(await project(records));
    for (const size of [2, 3, records.length]) {
      assert.deepEqual(await state(await project(records, inBatches(records, size))), once, `batches of ${size}`);
      assert.deepEqual(await state(await project(records, redeliveredBatches(records, size))), once, `redelivered batches of ${size}`);
    }
  });

  it('indexes the extracted text (below the title), keeps it through updates, and ignores a failed extraction', async () => {
    const h = makeHistory();
    h.upload(30, 1, 'annual report', { categoryId: 4, categoryName: 'Finance', license: 'CC BY-SA' });
    h.extracted(30, 1, 'Revenue grew in the zeppelin division');
    h.update(30, 1, { title: 'annual report 2026' });
    h.upload(31, 1, 'zeppelin history');
    h.extractionFailed(31, 1);
    const index = await project(deliveredTwice(h.records));
    assert.deepEqual(await ids(index, 'zeppelin'), ['31', '30']);
    assert.deepEqual(await ids(index, 'zepelin'), ['31', '30']);
    const doc = (await index.get('30'))?.doc;
    assert.equal(doc?.content, 'Revenue grew in the zeppelin division');
    assert.equal(doc?.title, 'annual report 2026');
    assert.deepEqual([doc?.categoryId, doc?.license], [4, 'CC BY-SA']);
    assert.equal((await index.get('31'))?.doc.content, '');
  });

  it('frees the extracted text of a deleted file, and keeps it while the file is only disabled', async () => {
    const h = makeHistory();
    const text = 'zeppelin '.repeat(1000);
    h.upload(40, 1, 'kept'); h.extracted(40, 1, text); h.update(40, 1, { enabled: false });
    h.upload(41, 1, 'gone'); h.extracted(41, 1, text); h.remove(41, 1);
    const index = await project(deliveredTwice(h.records));
    assert.equal((await index.get('40'))?.doc.content.length, text.length, 'a disabled file may be enabled again');
    const tombstone = await index.get('41');
    assert.equal(tombstone?.doc.visible, false);
    assert.equal(tombstone?.doc.content.length, 0, 'a deleted file keeps no text');
  });

  it('keeps no personal field in a deleted file\'s tombstone, whatever the redeliveries, and ignores an erasure', async () => {
    const h = makeHistory();
    h.user(1, 'Ada');
    h.upload(50, 1, 'marker title', { description: 'marker description', tags: ['marker'], categoryName: 'Science', categoryId: 3, license: 'CC BY' });
    h.update(50, 1, { title: 'marker renamed', tags: ['marker2'] });
    h.extracted(50, 1, 'marker content');
    h.remove(50, 1);
    h.erased(1);
    for (const records of [h.records, deliveredTwice(h.records)]) {
      for (const batches of [records.map((r) => [r]), [records], redeliveredBatches(records, 2)]) {
        const index = await project(records, batches);
        const tombstone = await index.get('50');
        assert.deepEqual(tombstone?.doc, {
          id: '50', title: '', description: '', tags: [], category: 'Science', categoryId: 3, license: 'CC BY', content: '',
          ownerId: 1, visible: false, uploadedAt: '2026-11-20T10:50:00.000Z',
        });
        assert.ok(!JSON.stringify(tombstone).includes('marker'));
        assert.deepEqual(await ids(index, 'marker'), []);
      }
    }
  });
});
