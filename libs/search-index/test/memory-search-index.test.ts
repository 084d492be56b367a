import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { searchIndexContract } from '../src/contract.ts';
import { makeMemorySearchIndex, tokenize } from '../src/memory-search-index.ts';
import { file, page, relevanceSuite } from './relevance.ts';

searchIndexContract('memory', async () => makeMemorySearchIndex());

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

  it('refuses an invalid page or version', async () => {
    const index = makeMemorySearchIndex();
    await assert.rejects(index.search('x', { from: -1, size: 10 }));
    await assert.rejects(index.search('x', { from: 0, size: 1.5 }));
    await assert.rejects(index.upsert(file(), Number.NaN));
  });
});
