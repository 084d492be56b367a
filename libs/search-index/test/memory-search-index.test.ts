import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { searchIndexContract } from '../src/contract.ts';
import { makeMemorySearchIndex, tokenize } from '../src/memory-search-index.ts';
import type { SearchDoc, SearchResult } from '../src/port.ts';

searchIndexContract('memory', async () => makeMemorySearchIndex());

let counter = 0;
const file = (over: Partial<SearchDoc> = {}): SearchDoc => ({
  id: `f${++counter}`,
  title: 'Plain document',
  description: 'Nothing special',
  tags: ['misc'],
  category: 'General',
  ownerId: 1,
  visible: true,
  uploadedAt: '2024-05-01T10:00:00.000Z',
  ...over,
});
const ids = (result: SearchResult): string[] => result.hits.map((hit) => hit.id);
const page = { from: 0, size: 50 };

describe('memory search index', () => {
  it('tokenises like the standard analyzer, folding diacritics', () => {
    assert.deepEqual(tokenize("Café-crème, NAÏVE résumé: 42 ﬁles; Ærø_x"), ['cafe', 'creme', 'naive', 'resume', '42', 'files', 'ærø', 'x']);
    assert.deepEqual(tokenize('  ...  '), []);
    assert.deepEqual(tokenize('Straße İstanbul Ελληνικά'), ['straße', 'istanbul', 'ελληνικα']);
  });

  it('folds diacritics in documents and queries', async () => {
    const index = makeMemorySearchIndex();
    const accented = file({ title: 'Le café de Zoë' });
    const plain = file({ title: 'Resume writing', description: 'a resume' });
    await index.upsert(accented, 1);
    await index.upsert(plain, 1);
    assert.deepEqual(ids(await index.search('cafe zoe', page)), [accented.id]);
    assert.deepEqual(ids(await index.search('CAFÉ', page)), [accented.id]);
    assert.deepEqual(ids(await index.search('résumé', page)), [plain.id]);
  });

  it('ranks a document matching both terms above ones matching one', async () => {
    const index = makeMemorySearchIndex();
    // Each term is in two documents, so neither term weighs more than the other.
    const first = file({ title: 'Linear notes' });
    const both = file({ title: 'Linear topology notes' });
    const second = file({ title: 'Topology notes' });
    for (const doc of [first, both, second]) await index.upsert(doc, 1);
    const result = await index.search('linear topology', page);
    assert.equal(result.total, 3);
    assert.equal(ids(result)[0], both.id);
  });

  it('ranks title over tags over category over description', async () => {
    const index = makeMemorySearchIndex();
    const w = 'quokka';
    // Every document fills every field: BM25 weighs a term by its rarity per field, so a field most
    // documents leave empty (tags, often) would make a rare match there outweigh the boosts.
    const docs = [
      file({ description: `about ${w}` }),
      file({ category: w }),
      file({ tags: [w] }),
      file({ title: w }),
    ];
    for (const doc of docs) await index.upsert(doc, 1);
    assert.deepEqual(ids(await index.search(w, page)), docs.map((doc) => doc.id).reverse());
  });

  it('ranks an exact match above a typo match', async () => {
    const index = makeMemorySearchIndex();
    const near = file({ title: 'Notes on parsers', uploadedAt: '2025-01-01T00:00:00.000Z' });
    const exact = file({ title: 'Notes on parses' });
    await index.upsert(near, 1);
    await index.upsert(exact, 1);
    assert.deepEqual(ids(await index.search('parses', page)), [exact.id, near.id]);
  });

  it('applies AUTO fuzziness: exact up to 2 letters, 1 edit up to 5, 2 beyond', async () => {
    const index = makeMemorySearchIndex();
    const doc = file({ title: 'ox lamp lantern' });
    await index.upsert(doc, 1);
    const found = async (text: string): Promise<boolean> => (await index.search(text, page)).total === 1;
    assert.equal(await found('ox'), true);
    assert.equal(await found('ix'), false);
    assert.equal(await found('lamb'), true);
    assert.equal(await found('lumb'), false);
    assert.equal(await found('lanturn'), true);
    assert.equal(await found('lnatren'), true);
    assert.equal(await found('lxntxrx'), false);
  });

  it('breaks ties by newer uploadedAt, then by id', async () => {
    const index = makeMemorySearchIndex();
    const docs = [
      file({ id: 'b', title: 'twin', uploadedAt: '2024-01-01T00:00:00.000Z' }),
      file({ id: 'a', title: 'twin', uploadedAt: '2024-01-01T00:00:00.000Z' }),
      file({ id: 'c', title: 'twin', uploadedAt: '2024-02-01T00:00:00.000Z' }),
    ];
    for (const doc of docs) await index.upsert(doc, 1);
    assert.deepEqual(ids(await index.search('twin', page)), ['c', 'a', 'b']);
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

  it('refuses an invalid page or version', async () => {
    const index = makeMemorySearchIndex();
    await assert.rejects(index.search('x', { from: -1, size: 10 }));
    await assert.rejects(index.search('x', { from: 0, size: 1.5 }));
    await assert.rejects(index.upsert(file(), Number.NaN));
  });
});
