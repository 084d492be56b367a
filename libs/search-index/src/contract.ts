import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import type { SearchDoc, SearchIndex, SearchResult } from './port.ts';

export interface SearchIndexContractOptions {
  /** Called after writes, before searching: Elasticsearch refreshes the index here; memory needs nothing. */
  settle?: () => Promise<void>;
}

/**
 * The behaviour every SearchIndex adapter must share (memory, Elasticsearch). Only robust outcomes
 * are asserted, never scores. Every test uses its own random nonsense words and ids, so the suites
 * may share an index, except for the `clear` test, which empties it: `make` must return an index
 * no concurrently running suite uses.
 */
export function searchIndexContract(
  name: string,
  make: () => Promise<SearchIndex>,
  options: SearchIndexContractOptions = {},
): void {
  describe(`SearchIndex contract: ${name}`, () => {
    let index: SearchIndex;
    const settle = options.settle ?? (async () => {});
    before(async () => {
      index = await make();
    });
    after(async () => {
      await index.close();
    });

    const LETTERS = 'bcdfghjklmnpqrstvwxz';
    const VOWELS = 'aeiou';
    /** A random pronounceable nonsense word; at 8 letters two of them are never within two edits by chance. */
    const word = (length = 8): string =>
      Array.from({ length }, (_, i) => (i % 2 === 0 ? LETTERS : VOWELS)[randomInt(i % 2 === 0 ? 20 : 5)]).join('');
    const fileId = (): string => `c${Date.now().toString(36)}${randomInt(2 ** 40).toString(36)}`;

    const file = (over: Partial<SearchDoc> = {}): SearchDoc => ({
      id: fileId(),
      title: 'Plain document',
      description: 'Nothing special written here',
      tags: ['misc'],
      category: 'General',
      ownerId: 1,
      visible: true,
      uploadedAt: '2024-05-01T10:00:00.000Z',
      ...over,
    });

    async function put(...docs: SearchDoc[]): Promise<void> {
      for (const doc of docs) assert.equal(await index.upsert(doc, 1), true);
      await settle();
    }

    const all = (text: string): Promise<SearchResult> => index.search(text, { from: 0, size: 100 });
    const ids = (result: SearchResult): string[] => result.hits.map((hit) => hit.id);
    async function finds(text: string, id: string): Promise<void> {
      const result = await all(text);
      assert.ok(ids(result).includes(id), `"${text}" should find ${id}, found ${JSON.stringify(ids(result))}`);
    }

    it('finds a document by a word of its title, and returns the whole document', async () => {
      const w = word();
      const doc = file({ title: `Notes on ${w} theory`, tags: ['alpha', 'beta'], ownerId: 42 });
      await put(doc);
      const result = await all(w);
      assert.equal(result.total, 1);
      assert.deepEqual(result.hits, [doc]);
    });

    it('finds a document by a word of its description, tags or category', async () => {
      const [inDescription, inTag, inCategory] = [word(), word(), word()];
      const byDescription = file({ description: `A long text about ${inDescription} and more` });
      const byTag = file({ tags: ['first', `${inTag}`, 'last'] });
      const byCategory = file({ category: `Applied ${inCategory}` });
      await put(byDescription, byTag, byCategory);
      assert.deepEqual(ids(await all(inDescription)), [byDescription.id]);
      assert.deepEqual(ids(await all(inTag)), [byTag.id]);
      assert.deepEqual(ids(await all(inCategory)), [byCategory.id]);
    });

    it('finds every word of a multi-word tag', async () => {
      const [first, second] = [word(), word()];
      const doc = file({ tags: [`${first} ${second}`] });
      await put(doc);
      await finds(first, doc.id);
      await finds(second, doc.id);
    });

    it('ignores case, in the document and in the query', async () => {
      const w = word();
      const doc = file({ title: `The ${w.toUpperCase()} report` });
      await put(doc);
      await finds(w, doc.id);
      await finds(w.toUpperCase(), doc.id);
      await finds(w[0]?.toUpperCase() + w.slice(1), doc.id);
    });

    it('finds a word through punctuation around it', async () => {
      const w = word();
      const doc = file({ title: `(${w}), ok.` });
      await put(doc);
      await finds(`"${w}"!`, doc.id);
    });

    it('finds a document despite a one-letter typo in a word of five letters or more', async () => {
      for (const length of [5, 8]) {
        const w = word(length);
        const doc = file({ title: `About ${w}` });
        await put(doc);
        const flip = (char: string): string => (char === 'a' ? 'e' : 'a');
        const typos = {
          substitution: w.slice(0, 2) + flip(w[2] as string) + w.slice(3),
          insertion: `${w.slice(0, 3)}y${w.slice(3)}`,
          deletion: w.slice(0, 2) + w.slice(3),
          transposition: w.slice(0, 1) + w[2] + w[1] + w.slice(3),
        };
        for (const [kind, typo] of Object.entries(typos)) {
          assert.notEqual(typo, w, kind);
          const result = await all(typo);
          assert.ok(ids(result).includes(doc.id), `${kind} "${typo}" of "${w}" should find ${doc.id}`);
        }
      }
    });

    it('finds nothing for an unrelated word, nor for an empty query', async () => {
      await put(file({ title: `Something ${word()}` }));
      assert.deepEqual(await all(word(10)), { total: 0, hits: [] });
      assert.deepEqual(await all(''), { total: 0, hits: [] });
      assert.deepEqual(await all('  ,.;!  '), { total: 0, hits: [] });
    });

    it('ranks a match in the title above a match only in the description', async () => {
      const w = word();
      // Same words, moved between the fields: only where the searched word sits differs.
      const inDescription = file({ title: 'Weekly summary', description: `Numbers and ${w} for the team` });
      const inTitle = file({ title: `Weekly ${w}`, description: 'Numbers and summary for the team' });
      // The description match is stored first and is newer, so neither tie-breaker favours the title match.
      inDescription.uploadedAt = '2024-06-01T00:00:00.000Z';
      await put(inDescription, inTitle);
      assert.deepEqual(ids(await all(w)), [inTitle.id, inDescription.id]);
    });

    it('never returns invisible documents', async () => {
      const w = word();
      const hidden = file({ title: `Hidden ${w}`, visible: false });
      const deleted = file({ title: `Deleted ${w}` });
      const shown = file({ title: `Shown ${w}` });
      await put(hidden, deleted, shown);
      assert.equal(await index.upsert({ ...deleted, visible: false }, 2), true);
      await settle();
      const result = await all(w);
      assert.deepEqual(ids(result), [shown.id]);
      assert.equal(result.total, 1);
      // Invisible documents are kept, with their version.
      assert.equal((await index.get(deleted.id))?.version, 2);
      assert.equal((await index.get(hidden.id))?.doc.visible, false);
    });

    it('ignores an older or equal version and applies a newer one', async () => {
      const [oldWord, newWord, staleWord] = [word(), word(), word()];
      const doc = file({ title: `First ${oldWord}` });
      assert.equal(await index.upsert(doc, 5), true);
      assert.equal(await index.upsert({ ...doc, title: `Stale ${staleWord}` }, 4), false);
      assert.equal(await index.upsert({ ...doc, title: `Same ${staleWord}` }, 5), false);
      await settle();
      assert.deepEqual(await index.get(doc.id), { doc, version: 5 });
      assert.deepEqual(ids(await all(staleWord)), []);
      await finds(oldWord, doc.id);

      const replaced = { ...doc, title: `Second ${newWord}`, tags: ['other'] };
      assert.equal(await index.upsert(replaced, 6), true);
      await settle();
      assert.deepEqual(await index.get(doc.id), { doc: replaced, version: 6 });
      assert.deepEqual(ids(await all(newWord)), [doc.id]);
      assert.deepEqual(ids(await all(oldWord)), []);
    });

    it('keeps a deleted document deleted when an older write is replayed', async () => {
      const w = word();
      const doc = file({ title: `Gone ${w}` });
      assert.equal(await index.upsert(doc, 1), true);
      assert.equal(await index.upsert({ ...doc, visible: false }, 3), true);
      assert.equal(await index.upsert({ ...doc, title: `Back ${w}` }, 2), false);
      await settle();
      assert.deepEqual(await all(w), { total: 0, hits: [] });
    });

    it('pages through matches: total stays, pages neither overlap nor miss', async () => {
      const w = word();
      const docs = Array.from({ length: 7 }, (_, i) =>
        file({ title: `Item ${w}`, uploadedAt: `2024-01-0${i + 1}T00:00:00.000Z` }));
      await put(...docs);
      const seen: string[] = [];
      for (const from of [0, 3, 6]) {
        const page = await index.search(w, { from, size: 3 });
        assert.equal(page.total, 7);
        assert.equal(page.hits.length, from === 6 ? 1 : 3);
        seen.push(...ids(page));
      }
      assert.equal(new Set(seen).size, 7);
      assert.deepEqual([...seen].sort(), docs.map((doc) => doc.id).sort());
      assert.deepEqual(await index.search(w, { from: 7, size: 3 }), { total: 7, hits: [] });
      assert.deepEqual(await index.search(w, { from: 0, size: 0 }), { total: 7, hits: [] });
    });

    it('gets a document with its version, or null', async () => {
      const doc = file({ tags: ['a', 'b'] });
      assert.equal(await index.upsert(doc, 3), true);
      assert.deepEqual(await index.get(doc.id), { doc, version: 3 });
      assert.equal(await index.get(fileId()), null);
    });

    it('returns copies: changing a result or an upserted document changes nothing stored', async () => {
      const w = word();
      const doc = file({ title: `Copy ${w}`, tags: ['one'] });
      await put(doc);
      doc.tags.push('mutated');
      const got = await index.get(doc.id);
      assert.deepEqual(got?.doc.tags, ['one']);
      got?.doc.tags.push('mutated');
      const [hit] = (await all(w)).hits;
      assert.deepEqual(hit?.tags, ['one']);
    });

    it('upsertMany stores a batch; after refresh() search finds it, and getMany reads it back', async () => {
      const w = word();
      const docs = Array.from({ length: 5 }, (_, i) => file({ title: `Batch ${w} ${i}`, tags: [`t${i}`] }));
      assert.equal(await index.upsertMany(docs.map((doc, i) => ({ doc, version: i + 1 }))), 5);
      await index.refresh();
      const result = await all(w);
      assert.equal(result.total, 5);
      assert.deepEqual([...ids(result)].sort(), docs.map((doc) => doc.id).sort());
      const stored = await index.getMany(docs.map((doc) => doc.id));
      assert.deepEqual(stored, new Map(docs.map((doc, i) => [doc.id, { doc, version: i + 1 }])));
      // Real-time by id, as get.
      assert.deepEqual(await index.get(docs[4]?.id as string), { doc: docs[4], version: 5 });
    });

    it('upsertMany ignores an older or equal version and stores the newer ones of the same call', async () => {
      const [oldWord, newWord, staleWord] = [word(), word(), word()];
      const kept = file({ title: `Kept ${oldWord}` });
      const replaced = file({ title: `Replaced ${oldWord}` });
      assert.equal(await index.upsertMany([{ doc: kept, version: 5 }, { doc: replaced, version: 5 }]), 2);
      const fresh = file({ title: `Fresh ${newWord}` });
      const newer = { ...replaced, title: `Newer ${newWord}` };
      const stored = await index.upsertMany([
        { doc: { ...kept, title: `Stale ${staleWord}` }, version: 4 },
        { doc: newer, version: 6 },
        { doc: { ...kept, title: `Same ${staleWord}` }, version: 5 },
        { doc: fresh, version: 1 },
      ]);
      assert.equal(stored, 2);
      await index.refresh();
      assert.deepEqual(await index.getMany([kept.id, replaced.id, fresh.id]), new Map([
        [kept.id, { doc: kept, version: 5 }], [replaced.id, { doc: newer, version: 6 }], [fresh.id, { doc: fresh, version: 1 }],
      ]));
      assert.deepEqual(ids(await all(staleWord)), []);
      assert.deepEqual(ids(await all(oldWord)), [kept.id]);
      assert.deepEqual([...ids(await all(newWord))].sort(), [replaced.id, fresh.id].sort());
    });

    it('upsertMany with the same id twice keeps the highest version, wherever it sits in the call', async () => {
      const [lowWord, highWord] = [word(), word()];
      const first = file({ title: `Low ${lowWord}` });
      const second = file({ title: `Low ${lowWord}` });
      const high = (doc: SearchDoc): SearchDoc => ({ ...doc, title: `High ${highWord}` });
      const stored = await index.upsertMany([
        { doc: high(first), version: 3 }, { doc: first, version: 2 },
        { doc: second, version: 2 }, { doc: { ...second, title: 'Middle' }, version: 3 }, { doc: high(second), version: 4 },
      ]);
      // One stored document per id.
      assert.equal(stored, 2);
      await index.refresh();
      assert.deepEqual(await index.getMany([first.id, second.id]), new Map([
        [first.id, { doc: high(first), version: 3 }], [second.id, { doc: high(second), version: 4 }],
      ]));
      assert.deepEqual([...ids(await all(highWord))].sort(), [first.id, second.id].sort());
      assert.deepEqual(ids(await all(lowWord)), []);
    });

    it('getMany returns the present ids only, with their versions', async () => {
      const [one, two] = [file({ tags: ['x'] }), file({ visible: false })];
      assert.equal(await index.upsert(one, 7), true);
      assert.equal(await index.upsertMany([{ doc: two, version: 2 }]), 1);
      const missing = fileId();
      const found = await index.getMany([missing, one.id, two.id, one.id]);
      assert.deepEqual([...found.keys()].sort(), [one.id, two.id].sort());
      assert.deepEqual(found.get(one.id), { doc: one, version: 7 });
      assert.deepEqual(found.get(two.id), { doc: two, version: 2 });
      assert.deepEqual(await index.getMany([fileId()]), new Map());
      // Copies, as get.
      found.get(one.id)?.doc.tags.push('mutated');
      assert.deepEqual((await index.get(one.id))?.doc.tags, ['x']);
    });

    it('takes empty upsertMany and getMany calls, and refuses a batch with an invalid version before writing any of it', async () => {
      assert.equal(await index.upsertMany([]), 0);
      assert.deepEqual(await index.getMany([]), new Map());
      await index.refresh();
      const doc = file();
      await assert.rejects(index.upsertMany([{ doc, version: 1 }, { doc: file(), version: Number.NaN }]));
      assert.equal(await index.get(doc.id), null);
    });

    it('clear empties the index', async () => {
      const w = word();
      const doc = file({ title: `Cleared ${w}` });
      await put(doc);
      await index.clear();
      await settle();
      assert.equal(await index.get(doc.id), null);
      assert.deepEqual(await all(w), { total: 0, hits: [] });
      // A rebuild starts over: version 1 is accepted again.
      assert.equal(await index.upsert(doc, 1), true);
      await settle();
      await finds(w, doc.id);
    });
  });
}
