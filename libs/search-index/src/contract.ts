import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { sleep } from '@docshare/contracts';
import { at } from './checked.ts';
import { FACET_SIZE, HIT_CONTENT_LENGTH, InvalidCursor } from './port.ts';
import type { SearchDoc, SearchFacets, SearchIndex, SearchOptions, SearchPage, SearchResult } from './port.ts';
import type { CursorOptions } from './cursor.ts';

/** The page's cursor; fails the test when the page has none. */
const cursorOf = (page: SearchResult): string => {
  assert.ok(typeof page.nextCursor === 'string', 'the page has a nextCursor');
  return page.nextCursor;
};

export interface SearchIndexContractOptions {
  /** Called after writes, before searching: Elasticsearch refreshes the index here; memory needs nothing. */
  settle?: () => Promise<void>;
  /** Another index of the adapter with these cursor options, for the cursors' maximum age (the caller closes it). */
  makeWith: (options: CursorOptions) => Promise<SearchIndex>;
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
  options: SearchIndexContractOptions,
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
    /**
     * A random pronounceable nonsense word. At 12 letters two of them are within two edits (what
     * the fuzzy match forgives) about once in 10^8 pairs; at 8 it was once in 30,000, and an index
     * holding the words of every test made a count off now and then (CI: 27 matches for 25).
     */
    const word = (length = 12): string =>
      Array.from({ length }, (_, i) => (i % 2 === 0 ? LETTERS : VOWELS)[randomInt(i % 2 === 0 ? 20 : 5)]).join('');
    const fileId = (): string => `c${Date.now().toString(36)}${randomInt(2 ** 40).toString(36)}`;

    const file = (over: Partial<SearchDoc> = {}): SearchDoc => ({
      id: fileId(),
      title: 'Plain document',
      description: 'Nothing special written here',
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
          substitution: w.slice(0, 2) + flip(w.charAt(2)) + w.slice(3),
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
      assert.deepEqual(await all(word(10)), { total: 0, hits: [], from: 0 });
      assert.deepEqual(await all(''), { total: 0, hits: [], from: 0 });
      assert.deepEqual(await all('  ,.;!  '), { total: 0, hits: [], from: 0 });
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
      assert.deepEqual(await all(w), { total: 0, hits: [], from: 0 });
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
      assert.deepEqual(await index.search(w, { from: 7, size: 3 }), { total: 7, hits: [], from: 7 });
      assert.deepEqual(await index.search(w, { from: 0, size: 0 }), { total: 7, hits: [], from: 0 });
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
      assert.deepEqual(await index.get(at(docs, 4).id), { doc: docs[4], version: 5 });
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

    // ---- content ---------------------------------------------------------------------------

    it('finds a document by a word of its content, and returns the content', async () => {
      const w = word();
      const content = `Chapter one.\n${'Filler words of an extracted text. '.repeat(40)}Then ${w} appears, once.`;
      const doc = file({ content });
      await put(doc);
      const result = await all(w);
      assert.deepEqual(ids(result), [doc.id]);
      assert.equal(result.hits[0]?.content, content);
      assert.equal((await index.get(doc.id))?.doc.content, content);
      assert.equal((await index.getMany([doc.id])).get(doc.id)?.doc.content, content);
    });

    it(`returns the first ${HIT_CONTENT_LENGTH} characters of a longer content in search hits, all of it from get and getMany`, async () => {
      const w = word();
      // An astral letter across the cut: never half of it.
      const content = `${w} ${'x'.repeat(HIT_CONTENT_LENGTH - w.length - 2)}\u{1D518}${'y'.repeat(50_000)}`;
      const doc = file({ content });
      await put(doc);
      // Found by id, not by rank: a random word may be a typo away from another test's word, and
      // this file's one match sits in 60,000 characters, which ranks it low.
      const hit = (await all(w)).hits.find((h) => h.id === doc.id);
      assert.ok(hit, 'the file is found by its word');
      assert.equal(hit.content, content.slice(0, HIT_CONTENT_LENGTH - 1));
      assert.equal((await index.get(doc.id))?.doc.content.length, content.length);
      assert.equal((await index.getMany([doc.id])).get(doc.id)?.doc.content, content);
      const cursorPage = await search(w, { from: 0, size: 50 });
      assert.equal(cursorPage.hits.find((h) => h.id === doc.id)?.content.length, HIT_CONTENT_LENGTH - 1);
    });

    it('ranks a match in the description above a match only in the content', async () => {
      const w = word();
      const inContent = file({ description: 'Numbers and summary for the team', content: `Numbers and ${w} for the team` });
      const inDescription = file({ description: `Numbers and ${w} for the team`, content: 'Numbers and summary for the team' });
      // The content match is newer, so the tie-breaker does not favour the description match.
      inContent.uploadedAt = '2024-06-01T00:00:00.000Z';
      await put(inContent, inDescription);
      assert.deepEqual(ids(await all(w)), [inDescription.id, inContent.id]);
    });

    it('finds a content word despite a typo, and folds accents in content', async () => {
      const [w, plain, accented] = [word(), word(), word()];
      // "Ç" + the rest of a random word, and a vowel made "ü", as "Ça" and "Müller".
      const cedilla = `Ç${plain.slice(1)}`;
      const umlaut = `${accented[0]}ü${accented.slice(2)}`;
      const doc = file({ content: `Ça va, Herr Müller? ${w} ${cedilla} ${umlaut}` });
      await put(doc);
      await finds(`${w.slice(0, 3)}${w[3] === 'a' ? 'e' : 'a'}${w.slice(4)}`, doc.id);
      await finds(`c${plain.slice(1)}`, doc.id);
      await finds(`${accented[0]}u${accented.slice(2)}`, doc.id);
      await finds(`${accented[0]}Ü${accented.slice(2)}`, doc.id);
      await finds('ca muller', doc.id);
      // Invisible documents' content is not searchable either.
      assert.equal(await index.upsert({ ...doc, visible: false }, 2), true);
      await settle();
      assert.deepEqual(ids(await all(w)), []);
    });

    // ---- filters and facets ----------------------------------------------------------------

    const search = (text: string, page: SearchPage, options?: SearchOptions): Promise<SearchResult> => index.search(text, page, options);
    const sorted = (result: SearchResult): string[] => [...ids(result)].sort();
    const idsOf = (...docs: SearchDoc[]): string[] => docs.map((doc) => doc.id).sort();

    it('filters by category, licence and tags (every tag, compared as tagKey), alone and combined', async () => {
      const w = word();
      const d1 = file({ title: `One ${w}`, categoryId: 11, license: 'CC BY', tags: ['Red', 'blue'] });
      const d2 = file({ title: `Two ${w}`, categoryId: 11, license: 'CC BY-SA', tags: ['red'] });
      const d3 = file({ title: `Three ${w}`, categoryId: 12, license: 'CC BY', tags: [' RED ', 'green'] });
      const d4 = file({ title: `Four ${w}`, categoryId: 12, license: 'CC0', tags: [] });
      const hidden = file({ title: `Five ${w}`, categoryId: 11, license: 'CC BY', tags: ['red'], visible: false });
      await put(d1, d2, d3, d4, hidden);
      const filtered = (filters: SearchOptions['filters']) => search(w, { from: 0, size: 100 }, { filters });
      assert.deepEqual(sorted(await filtered({})), idsOf(d1, d2, d3, d4));
      assert.deepEqual(sorted(await filtered({ categoryId: 11 })), idsOf(d1, d2));
      assert.deepEqual(sorted(await filtered({ license: 'CC BY' })), idsOf(d1, d3));
      assert.deepEqual(sorted(await filtered({ tags: ['red'] })), idsOf(d1, d2, d3));
      assert.deepEqual(sorted(await filtered({ tags: ['RED', ' Blue'] })), idsOf(d1));
      assert.deepEqual(sorted(await filtered({ categoryId: 12, license: 'CC BY', tags: ['red'] })), idsOf(d3));
      assert.deepEqual(sorted(await filtered({ categoryId: 11, license: 'CC0' })), []);
      assert.deepEqual(sorted(await filtered({ categoryId: 13 })), []);
      const page = await search(w, { from: 0, size: 1 }, { filters: { license: 'CC BY' } });
      assert.equal(page.total, 2);
      assert.equal(page.hits.length, 1);
    });

    /** Twelve matches: 5 of category 21 "Physics", 3 of 22 "Algebra" (one still named "Algebra (old)"), 3 of 23 "Zoology", 1 of 24. */
    function facetDocs(w: string, tag: string): SearchDoc[] {
      const spec: [number, string, string, string[]][] = [
        [21, 'Physics', 'CC BY', [tag, tag.toUpperCase(), 'Misc']],
        [21, 'Physics', 'CC0', [tag]],
        [21, 'Physics', 'CC BY', ['misc']],
        [21, 'Physics', 'CC0', []],
        [21, 'Physics', 'CC BY', [`${tag} `]],
        [22, 'Algebra', 'CC0', ['misc']],
        [22, 'Algebra', 'CC BY', []],
        [22, 'Algebra (old)', 'CC0', ['Misc']],
        [23, 'Zoology', 'CC BY', ['Zeta']],
        [23, 'Zoology', 'CC0', ['zeta']],
        [23, 'Zoology', 'CC BY-SA', []],
        [24, 'Arts', 'CC0', ['alpha']],
      ];
      return spec.map(([categoryId, category, license, tags], i) => file({
        title: `Facet ${w}`, categoryId, category, license, tags, uploadedAt: new Date(Date.UTC(2024, 0, 1 + i)).toISOString(),
      }));
    }

    it('counts facets over every match (not just the page), most frequent first, ties by value or name', async () => {
      // After "misc", before "zeta": ties order by value.
      const [w, tag] = [word(), `n${word()}`];
      const docs = facetDocs(w, tag);
      await put(...docs, file({ title: `Facet ${w}`, categoryId: 21, tags: [tag], visible: false }));
      const result = await search(w, { from: 0, size: 2 }, { facets: true });
      assert.equal(result.total, 12);
      assert.equal(result.hits.length, 2);
      const expected: SearchFacets = {
        category: [
          { id: 21, name: 'Physics', count: 5 },
          { id: 22, name: 'Algebra', count: 3 },
          { id: 23, name: 'Zoology', count: 3 },
          { id: 24, name: 'Arts', count: 1 },
        ],
        license: [{ value: 'CC0', count: 6 }, { value: 'CC BY', count: 5 }, { value: 'CC BY-SA', count: 1 }],
        // A tag repeated in one document (as "x" and "X ") counts once for it.
        tag: [{ value: 'misc', count: 4 }, { value: tag, count: 3 }, { value: 'zeta', count: 2 }, { value: 'alpha', count: 1 }],
      };
      assert.deepEqual(result.facets, expected);
      // Without asking, no facets.
      assert.equal((await search(w, { from: 0, size: 2 })).facets, undefined);
      // Filters narrow the facets too.
      const filtered = await search(w, { from: 0, size: 1 }, { facets: true, filters: { license: 'CC BY' } });
      assert.equal(filtered.total, 5);
      assert.deepEqual(filtered.facets, {
        category: [{ id: 21, name: 'Physics', count: 3 }, { id: 22, name: 'Algebra', count: 1 }, { id: 23, name: 'Zoology', count: 1 }],
        license: [{ value: 'CC BY', count: 5 }],
        tag: [{ value: 'misc', count: 2 }, { value: tag, count: 2 }, { value: 'zeta', count: 1 }],
      });
      // No match: empty facets.
      assert.deepEqual((await search(word(10), { from: 0, size: 2 }, { facets: true })).facets, { category: [], license: [], tag: [] });
    });

    it(`keeps at most ${FACET_SIZE} values per facet`, async () => {
      const w = word();
      const docs = Array.from({ length: FACET_SIZE + 5 }, (_, i) => file({ title: `Many ${w}`, tags: [`t${String(i).padStart(3, '0')}`] }));
      await index.upsertMany(docs.map((doc) => ({ doc, version: 1 })));
      await index.refresh();
      await settle();
      const result = await search(w, { from: 0, size: 1 }, { facets: true });
      assert.equal(result.total, FACET_SIZE + 5);
      assert.equal(result.facets?.tag.length, FACET_SIZE);
      assert.deepEqual(result.facets?.tag[0], { value: 't000', count: 1 });
      assert.deepEqual(result.facets?.tag[FACET_SIZE - 1], { value: `t${String(FACET_SIZE - 1).padStart(3, '0')}`, count: 1 });
    });

    // ---- cursors ---------------------------------------------------------------------------

    /** Follows nextCursor from `first` to the end, with pages of `size` (or per page as `sizes` says). */
    async function walk(text: string, first: SearchResult, sizes: (n: number) => number, options: SearchOptions = {}): Promise<SearchResult[]> {
      const pages = [first];
      for (let n = 1; ; n++) {
        const cursor = pages[pages.length - 1]?.nextCursor;
        if (cursor === undefined) return pages;
        assert.ok(n < 1000, 'the walk never ends');
        pages.push(await search(text, { from: 999_999, size: sizes(n) }, { ...options, cursor }));
      }
    }

    const many = (w: string, n: number): SearchDoc[] => Array.from({ length: n }, (_, i) =>
      file({ title: `Paged ${w}`, uploadedAt: new Date(Date.UTC(2024, 0, 1, 0, i % 7)).toISOString() }));

    it('walks every match with cursors: no duplicates, no misses, total and from right, no cursor after the last page', async () => {
      const w = word();
      const docs = many(w, 25);
      await put(...docs);
      const full = await all(w);
      assert.equal(full.total, 25);
      assert.equal(full.nextCursor, undefined, 'every match fits the page: no cursor');
      const first = await search(w, { from: 0, size: 4 });
      assert.equal(typeof first.nextCursor, 'string');
      assert.match(cursorOf(first), /^[\w.-]+$/, 'URL-safe');
      const pages = await walk(w, first, () => 4);
      assert.deepEqual(pages.map((page) => page.hits.length), [4, 4, 4, 4, 4, 4, 1]);
      assert.deepEqual(pages.map((page) => page.from), [0, 4, 8, 12, 16, 20, 24]);
      for (const page of pages) assert.equal(page.total, 25);
      assert.equal(pages[pages.length - 1]?.nextCursor, undefined);
      // The same order as one big page.
      assert.deepEqual(pages.flatMap(ids), ids(full));

      // From a page other than the first, and with other page sizes on the way.
      const middle = await search(w, { from: 8, size: 3 });
      assert.equal(middle.from, 8);
      const rest = await walk(w, middle, (n) => (n === 1 ? 10 : 2));
      assert.deepEqual(rest.map((page) => page.from), [8, 11, 21, 23]);
      assert.deepEqual(rest.map((page) => page.hits.length), [3, 10, 2, 2]);
      assert.deepEqual(rest.flatMap(ids), ids(full).slice(8));
      // A page of size 0 gives no cursor; a cursor page of size 0 neither.
      assert.equal((await search(w, { from: 0, size: 0 })).nextCursor, undefined);
      const empty = await search(w, { from: 0, size: 5 }, { cursor: cursorOf(first) });
      assert.equal(empty.from, 4);
      assert.equal((await search(w, { from: 0, size: 0 }, { cursor: cursorOf(first) })).nextCursor, undefined);
    });

    it('walks the matches as of the first page, each as it is now: files hidden since are left out at once', async () => {
      const w = word();
      const docs = many(w, 25);
      await put(...docs);
      const first = await search(w, { from: 0, size: 4 }, { facets: true });
      assert.equal(first.total, 25);
      // Ranked 6th and 10th: after the first page, before the last one.
      const ranked = ids(await all(w));
      const docOf = (id: string | undefined): SearchDoc => {
        const doc = docs.find((candidate) => candidate.id === id);
        assert.ok(doc, `a document ranked ${id}`);
        return doc;
      };
      const [hidden, updated] = [docOf(ranked[5]), docOf(ranked[9])];
      // New, highly relevant matches; one match not yet returned hidden (deleted or disabled), another changed.
      const fresh = [file({ title: `${w} ${w} ${w}`, tags: [w], category: w }), file({ title: `${w} ${w}`, description: w })];
      for (const doc of fresh) assert.equal(await index.upsert(doc, 1), true);
      assert.equal(await index.upsert({ ...hidden, visible: false }, 2), true);
      const changed = { ...updated, title: `Changed ${w} ${w} ${w}`, description: 'New words', tags: [w] };
      assert.equal(await index.upsert(changed, 2), true);
      await settle();
      assert.equal((await all(w)).total, 26, 'the live index has changed');

      const pages = await walk(w, first, () => 4, { facets: true });
      const walked = pages.flatMap((page) => page.hits);
      // The snapshot's matches, in its order, without the hidden one; no new file.
      assert.deepEqual(walked.map((hit) => hit.id).sort(), docs.filter((doc) => doc !== hidden).map((doc) => doc.id).sort());
      assert.deepEqual(pages.map((page) => page.hits.length), [4, 4, 4, 4, 4, 4], 'pages refill past the hidden file');
      for (const page of pages) {
        assert.equal(page.total, 25, 'the total as of the first page');
        assert.deepEqual(page.facets, first.facets, 'facets of the same snapshot');
      }
      // The changed file as it is now.
      assert.deepEqual(walked.find((hit) => hit.id === updated.id), changed);
    });

    it('leaves out of every later page a file deleted or disabled after the cursor was given, even one the cursor stands before', async () => {
      const w = word();
      const docs = many(w, 12);
      await put(...docs);
      const first = await search(w, { from: 0, size: 2 });
      let cursor = cursorOf(first);
      const second = await search(w, { from: 0, size: 3 }, { cursor });
      cursor = cursorOf(second);
      assert.equal(typeof cursor, 'string');
      // Most of what follows, hidden after the cursor was taken: deleted ones and a disabled one.
      const shown = new Set([...ids(first), ...ids(second)]);
      const rest = docs.filter((doc) => !shown.has(doc.id));
      const gone = rest.slice(0, 5);
      for (const doc of gone) assert.equal(await index.upsert({ ...doc, visible: false }, 2), true);
      await settle();
      const pages = await walk(w, { ...second, nextCursor: cursor }, () => 2);
      const walked = pages.slice(1).flatMap(ids);
      assert.deepEqual(walked.sort(), rest.slice(5).map((doc) => doc.id).sort());
      assert.equal(pages[pages.length - 1]?.nextCursor, undefined);
      // Enabled again: shown again by cursors still walking.
      const back = at(gone, 0);
      assert.equal(await index.upsert(back, 3), true);
      await settle();
      assert.ok((await walk(w, { ...second, nextCursor: cursor }, () => 2)).flatMap(ids).includes(back.id));
    });

    it('refuses a cursor past its maximum age, however recently it was used', { timeout: 60_000 }, async () => {
      // A long TTL: only the maximum age can end this walk while it keeps being used.
      const short = await options.makeWith({ cursorTtlSeconds: 600, cursorMaxAgeSeconds: 1 });
      const w = word();
      const docs = many(w, 3);
      for (const doc of docs) assert.equal(await short.upsert(doc, 1), true);
      await short.refresh();
      await settle();
      const first = await short.search(w, { from: 0, size: 1 });
      const cursor = cursorOf(first);
      assert.equal(typeof cursor, 'string');
      // Used again and again, with the same cursor: refused once the second is over, whatever the machine's speed.
      for (let uses = 0; ; uses++) {
        try {
          const page = await short.search(w, { from: 0, size: 1 }, { cursor });
          assert.equal(page.hits.length, 1);
        } catch (error) {
          assert.ok(error instanceof InvalidCursor, String(error));
          break;
        }
        await sleep(50);
      }
      // A fresh search gives a fresh cursor.
      const again = await short.search(w, { from: 0, size: 1 });
      assert.equal((await short.search(w, { from: 0, size: 1 }, { cursor: cursorOf(again) })).from, 1);
    });

    it('refuses a cursor of another text or other filters, and a garbage or altered one, with InvalidCursor', async () => {
      const w = word();
      await put(...many(w, 6));
      const first = await search(w, { from: 0, size: 2 }, { filters: { license: 'CC BY' } });
      const cursor = cursorOf(first);
      assert.equal(typeof cursor, 'string');
      const isInvalid = (error: unknown): boolean => error instanceof InvalidCursor && error.name === 'InvalidCursor';
      const size = { from: 0, size: 2 };
      await assert.rejects(search(word(), size, { cursor, filters: { license: 'CC BY' } }), isInvalid);
      await assert.rejects(search(w, size, { cursor }), isInvalid);
      await assert.rejects(search(w, size, { cursor, filters: { license: 'CC0' } }), isInvalid);
      await assert.rejects(search(w, size, { cursor, filters: { license: 'CC BY', categoryId: 1 } }), isInvalid);
      const flip = (text: string, at: number): string => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
      for (const garbage of ['', 'garbage', 'a.b', '.', '%%%', `${cursor}x`, flip(cursor, 3), flip(cursor, cursor.length - 2), cursor.slice(0, -4), 'x'.repeat(10_000)]) {
        await assert.rejects(search(w, size, { cursor: garbage, filters: { license: 'CC BY' } }), isInvalid, JSON.stringify(garbage.slice(0, 40)));
      }
      // The same text in other words (case, punctuation) is the same search.
      const second = await search(` ${w.toUpperCase()}!`, size, { cursor, filters: { license: 'CC BY', tags: [] } });
      assert.equal(second.from, 2);
      assert.equal(second.hits.length, 2);
    });

    it('clear empties the index', async () => {
      const w = word();
      const doc = file({ title: `Cleared ${w}` });
      await put(doc);
      await index.clear();
      await settle();
      assert.equal(await index.get(doc.id), null);
      assert.deepEqual(await all(w), { total: 0, hits: [], from: 0 });
      // A rebuild starts over: version 1 is accepted again.
      assert.equal(await index.upsert(doc, 1), true);
      await settle();
      await finds(w, doc.id);
    });
  });
}
