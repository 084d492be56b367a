import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { SearchDoc, SearchIndex, SearchResult } from '../src/port.ts';

let counter = 0;
/** A plain visible file, with a fresh id; `over` sets whatever a test cares about. */
export const file = (over: Partial<SearchDoc> = {}): SearchDoc => ({
  id: `f${++counter}-${randomBytes(3).toString('hex')}`,
  title: 'Plain document',
  description: 'Nothing special',
  tags: ['misc'],
  category: 'General',
  categoryId: 1,
  license: 'CC BY',
  content: '',
  ownerId: 1,
  visible: true,
  uploadedAt: '2024-05-01T10:00:00.000Z',
  ...over,
});
export const ids = (result: SearchResult): string[] => result.hits.map((hit) => hit.id);
export const page = { from: 0, size: 50 };

/** Upserts `docs` at version 1, asserting each is stored. */
export async function fill(index: SearchIndex, docs: SearchDoc[]): Promise<void> {
  for (const doc of docs) assert.equal(await index.upsert(doc, 1), true);
}

/**
 * The relevance the memory index copies from Elasticsearch, beyond what the port's contract asks:
 * the analyzer's folding, the field boosts, AUTO fuzziness and the tie-breaks. Scores depend on
 * everything indexed, so each test takes a fresh, empty index from `make` (the contract shares one).
 */
export function relevanceSuite(name: string, make: () => Promise<SearchIndex>): void {
  describe(`search relevance: ${name}`, () => {
    it('folds diacritics in documents and queries', async () => {
      const index = await make();
      const accented = file({ title: 'Le café de Zoë' });
      const plain = file({ title: 'Resume writing', description: 'a resume' });
      await fill(index, [accented, plain]);
      assert.deepEqual(ids(await index.search('cafe zoe', page)), [accented.id]);
      assert.deepEqual(ids(await index.search('CAFÉ', page)), [accented.id]);
      assert.deepEqual(ids(await index.search('résumé', page)), [plain.id]);
      // Returned as written.
      assert.equal((await index.get(accented.id))?.doc.title, 'Le café de Zoë');
      assert.equal((await index.search('cafe', page)).hits[0]?.title, 'Le café de Zoë');
    });

    it('ranks title over tags over category over description', async () => {
      const index = await make();
      const w = 'quokka';
      // Every document fills every field: BM25 weighs a term by its rarity per field, so a field most
      // documents leave empty (tags, often) would make a rare match there outweigh the boosts.
      const docs = [file({ description: `about ${w}` }), file({ category: w }), file({ tags: [w] }), file({ title: w })];
      await fill(index, docs);
      assert.deepEqual(ids(await index.search(w, page)), docs.map((doc) => doc.id).reverse());
    });

    it('ranks a document matching both words above ones matching one, and an exact match above a typo', async () => {
      const index = await make();
      // Each word is in two documents, so neither word weighs more than the other.
      const first = file({ title: 'Linear notes' });
      const both = file({ title: 'Linear topology notes' });
      const second = file({ title: 'Topology notes' });
      const near = file({ title: 'Notes on parsers', uploadedAt: '2025-01-01T00:00:00.000Z' });
      const exact = file({ title: 'Notes on parses' });
      await fill(index, [first, both, second, near, exact]);
      const result = await index.search('linear topology', page);
      assert.equal(result.total, 3);
      assert.equal(ids(result)[0], both.id);
      assert.deepEqual(ids(await index.search('parses', page)), [exact.id, near.id]);
    });

    it('applies AUTO fuzziness: exact up to 2 letters, 1 edit up to 5, 2 beyond', async () => {
      const index = await make();
      await fill(index, [file({ title: 'ox lamp lantern' })]);
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
      const index = await make();
      const docs = [
        file({ id: 'b', title: 'twin', uploadedAt: '2024-01-01T00:00:00.000Z' }),
        file({ id: 'a', title: 'twin', uploadedAt: '2024-01-01T00:00:00.000Z' }),
        file({ id: 'c', title: 'twin', uploadedAt: '2024-02-01T00:00:00.000Z' }),
      ];
      await fill(index, docs);
      assert.deepEqual(ids(await index.search('twin', page)), ['c', 'a', 'b']);
    });
  });
}
