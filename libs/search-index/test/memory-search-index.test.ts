import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import assert from 'node:assert/strict';
import { searchIndexContract } from '../src/contract.ts';
import { makeMemorySearchIndex, tokenize } from '../src/memory-search-index.ts';
import { InvalidCursor } from '../src/port.ts';
import { file, page, relevanceSuite } from './relevance.ts';

searchIndexContract('memory', async () => makeMemorySearchIndex(), { makeWith: async (options) => makeMemorySearchIndex(options) });

relevanceSuite('memory', async () => makeMemorySearchIndex());

describe('memory search index', () => {
  it('tokenises like the standard analyzer, folding diacritics', () => {
    assert.deepEqual(tokenize("Café-crème, NAÏVE résumé: 42 ﬁles; Ærø_x"), ['cafe', 'creme', 'naive', 'resume', '42', 'files', 'ærø', 'x']);
    assert.deepEqual(tokenize('  ...  '), []);
    assert.deepEqual(tokenize('Straße İstanbul Ελληνικά'), ['straße', 'istanbul', 'ελληνικα']);
  });

  it('forgets the words of a replaced or hidden document', async () => {
    const index = makeMemorySearchIndex();
    const doc = file({ title: 'zebra' });
    await index.upsert(doc, 1);
    await index.upsert({ ...doc, title: 'giraffe' }, 2);
    // "zebro" would fuzzily reach "zebra" if its posting or vocabulary entry had survived.
    assert.equal((await index.search('zebro', page)).total, 0);
    await index.upsert({ ...doc, title: 'giraffe', visible: false }, 3);
    assert.equal((await index.search('giraffe', page)).total, 0);
    await index.upsert({ ...doc, title: 'giraffe' }, 4);
    assert.equal((await index.search('giraffe', page)).total, 1);
  });

  it('expires a cursor cursorTtlSeconds after its last use, each use extending it', async () => {
    const index = makeMemorySearchIndex({ cursorTtlSeconds: 1 });
    for (let i = 0; i < 5; i++) await index.upsert(file({ title: 'ephemeral' }), 1);
    const first = await index.search('ephemeral', { from: 0, size: 1 });
    // Used in time (0.4 s of a 1 s TTL: room for a slow machine), twice: 0.8 s in all, then extended.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const second = await index.search('ephemeral', { from: 0, size: 1 }, { cursor: first.nextCursor as string });
    await new Promise((resolve) => setTimeout(resolve, 400));
    const third = await index.search('ephemeral', { from: 0, size: 1 }, { cursor: second.nextCursor as string });
    assert.equal(third.from, 2);
    // Left alone for longer than its TTL (a slower machine only waits longer): refused.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await assert.rejects(index.search('ephemeral', { from: 0, size: 1 }, { cursor: third.nextCursor as string }), InvalidCursor);
  });

  it('drops the oldest snapshots beyond maxSnapshotEntries, keeps cursors across writes, and ends them at clear()', async () => {
    const index = makeMemorySearchIndex({ maxSnapshotEntries: 10 });
    for (let i = 0; i < 6; i++) await index.upsert(file({ title: 'bounded' }), 1);
    const older = await index.search('bounded', { from: 0, size: 1 });
    const newer = await index.search('bounded', { from: 0, size: 2 });
    // 6 + 6 > 10: the older snapshot is gone.
    await assert.rejects(index.search('bounded', { from: 0, size: 1 }, { cursor: older.nextCursor as string }), InvalidCursor);
    await index.upsert(file({ title: 'bounded' }), 1);
    const rest = await index.search('bounded', { from: 0, size: 10 }, { cursor: newer.nextCursor as string });
    assert.equal(rest.hits.length, 4);
    assert.equal(rest.total, 6);
    // Another index never takes this one's cursors.
    await assert.rejects(makeMemorySearchIndex().search('bounded', { from: 0, size: 1 }, { cursor: newer.nextCursor as string }), InvalidCursor);
    // Cleared (a rebuild starts): its cursors end, as with Elasticsearch.
    await index.clear();
    await assert.rejects(index.search('bounded', { from: 0, size: 1 }, { cursor: newer.nextCursor as string }), InvalidCursor);
  });

  it('frees the text of a replaced document at once, even while a cursor\'s snapshot holds the document', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const index = makeMemorySearchIndex();
    // 40 files of ~1,000,000 characters each, of few distinct words (the vocabulary stays small).
    const docs = Array.from({ length: 40 }, (_, i) => file({ title: 'heavy', content: `${i} ${`${'x'.repeat(999)} `.repeat(1000)}` }));
    for (const doc of docs) await index.upsert(doc, 1);
    const first = await index.search('heavy', { from: 0, size: 1 });
    assert.equal(typeof first.nextCursor, 'string', 'a snapshot of all 40 is held');
    gc();
    const before = process.memoryUsage().heapUsed;
    // Deleted: the tombstones carry no text (the projection drops it).
    for (const doc of docs) await index.upsert({ ...doc, visible: false, content: '' }, 2);
    docs.length = 0;
    gc();
    const freed = before - process.memoryUsage().heapUsed;
    assert.ok(freed > 20_000_000, `${Math.round(freed / 1e6)} MB freed of 40 MB of text`);
    // The cursor still works, and shows none of them.
    const rest = await index.search('heavy', { from: 0, size: 10 }, { cursor: first.nextCursor as string });
    assert.deepEqual(rest.hits, []);
  });

  it('refuses invalid filters', async () => {
    const index = makeMemorySearchIndex();
    await assert.rejects(index.search('x', { from: 0, size: 1 }, { filters: { categoryId: 1.5 } }), /categoryId/);
    await assert.rejects(index.search('x', { from: 0, size: 1 }, { filters: { tags: 'a' as unknown as string[] } }), /tags/);
  });

  it('refuses an invalid page or version', async () => {
    const index = makeMemorySearchIndex();
    await assert.rejects(index.search('x', { from: -1, size: 10 }));
    await assert.rejects(index.search('x', { from: 0, size: 1.5 }));
    await assert.rejects(index.upsert(file(), Number.NaN));
  });
});
