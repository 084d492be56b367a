import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeSnippets, SNIPPET_CONTENT_LENGTH, SNIPPET_FUZZY_WORK_PER_PAGE, snippetOf } from '../src/snippet.ts';
import { file } from './relevance.ts';

describe('snippetOf', () => {
  it('marks the query words in the title, folding accents and case, escaping HTML', () => {
    const doc = file({ title: 'Le Café <b>& "Zoë\'s"</b>', description: 'Nothing' });
    assert.equal(snippetOf(doc, 'cafe zoe'), 'Le <mark>Café</mark> &lt;b&gt;&amp; &quot;<mark>Zoë</mark>&#39;s&quot;&lt;/b&gt;');
    assert.equal(snippetOf(doc, 'CAFÉ'), 'Le <mark>Café</mark> &lt;b&gt;&amp; &quot;Zoë&#39;s&quot;&lt;/b&gt;');
  });

  it('prefers the window with the most distinct query words, across fields', () => {
    const doc = file({
      title: 'Quarterly report',
      description: 'The budget of the year, with its plan.',
      content: 'Unrelated. '.repeat(50) + 'Here the quarterly budget and the plan meet. ' + 'More filler text. '.repeat(50),
    });
    // One of three words in the title, two in the description; all three in one window of the content.
    const snippet = snippetOf(doc, 'quarterly budget plan');
    assert.match(snippet, /<mark>quarterly<\/mark> <mark>budget<\/mark> and the <mark>plan<\/mark>/);
    assert.ok(snippet.startsWith('…') && snippet.endsWith('…'), snippet);
    // Ties go to the title, then the description.
    assert.equal(snippetOf(doc, 'report'), 'Quarterly <mark>report</mark>');
    assert.equal(snippetOf(doc, 'budget'), 'The <mark>budget</mark> of the year, with its <mark>plan</mark>.'.replace('<mark>plan</mark>', 'plan'));
    assert.equal(snippetOf(doc, 'budget plan'), 'The <mark>budget</mark> of the year, with its <mark>plan</mark>.');
  });

  it('marks fuzzy matches within the AUTO distance, and prefers exact ones', () => {
    const doc = file({ title: 'Notes', description: 'A lantern and a lamp.', content: 'The lanturn stands here.' });
    assert.equal(snippetOf(doc, 'lanturn'), 'The <mark>lanturn</mark> stands here.');
    assert.equal(snippetOf(doc, 'lantren'), 'A <mark>lantern</mark> and a lamp.');
    assert.equal(snippetOf(doc, 'lamb'), 'A lantern and a <mark>lamp</mark>.');
    // Two letters: exact only; three to five: one edit.
    assert.equal(snippetOf(file({ title: 'ox ax', description: '' }), 'ox'), '<mark>ox</mark> ax');
    assert.equal(snippetOf(file({ title: 'Title', description: 'lamp' }), 'lxmb'), 'lamp');
  });

  it('cuts on word boundaries to maxLength, with ellipses, around the match', () => {
    const words = Array.from({ length: 400 }, (_, i) => `word${i}`);
    words[200] = 'needle';
    const doc = file({ title: 'T', description: 'D', content: words.join(' ') });
    const snippet = snippetOf(doc, 'needle', { maxLength: 60 });
    const text = snippet.replace(/<\/?mark>/g, '');
    assert.ok(text.length <= 60, `${text.length}: ${text}`);
    assert.ok(text.startsWith('…word') && text.endsWith('…'), text);
    assert.match(text, /^…(word\d+ )+needle( word\d+)+…$/);
    assert.match(snippet, /<mark>needle<\/mark>/);
    // Centred: words on both sides.
    const [before, after] = text.split('needle') as [string, string];
    assert.ok(Math.abs(before.length - after.length) < 15, text);
  });

  it('falls back to the start of the description, else the title, when no word matches', () => {
    const long = 'A description that is fairly long and goes on. '.repeat(10);
    const snippet = snippetOf(file({ title: 'Title', description: long, category: 'Physics' }), 'physics');
    assert.ok(snippet.startsWith('A description that') && snippet.endsWith('…') && snippet.length <= 160, snippet);
    assert.ok(!snippet.includes('<mark>'));
    assert.equal(snippetOf(file({ title: 'Only <title>', description: '' }), 'zzz'), 'Only &lt;title&gt;');
    assert.equal(snippetOf(file({ title: 'Only title', description: '' }), ''), 'Only title');
  });

  it('collapses whitespace and never throws on odd input', () => {
    assert.equal(snippetOf(file({ title: 'a', description: 'one\n\n  two\tthree' }), 'two'), 'one <mark>two</mark> three');
    const odd = { ...file(), content: undefined, description: null } as unknown as ReturnType<typeof file>;
    assert.equal(typeof snippetOf(odd, 'plain'), 'string');
    assert.equal(typeof snippetOf(file(), undefined as unknown as string), 'string');
    assert.equal(typeof snippetOf(file({ content: '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 '.repeat(100) + 'x'.repeat(500) }), 'unicode xxxx', { maxLength: 40 }), 'string');
    const astral = snippetOf(file({ title: 'T', description: '', content: `${'😀 '.repeat(100)}needle ${'😀 '.repeat(100)}` }), 'needle', { maxLength: 30 });
    assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(astral), 'no lone surrogate');
  });

  it('reads a long content up to its first SNIPPET_CONTENT_LENGTH characters only, whatever its length', () => {
    const vocabulary = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}ord${(i * 7919).toString(36)}`);
    let filler = '';
    for (let i = 0; filler.length < 200_000; i++) filler += `${vocabulary[(i * 31) % vocabulary.length]} `;
    const doc = file({ title: 'Big', description: 'Huge text', content: `the early needle ${filler}the final needle` });
    const snippets = makeSnippets('neadle wordy something else entirely different quarterly budgets');
    const snippet = snippets(doc);
    assert.match(snippet, /^the early <mark>needle<\/mark> w/);
    assert.ok(snippet.endsWith('…'), snippet);
    // Title, description and the content's start: never the 200,000 characters.
    assert.ok(snippets.work.characters <= 'Big'.length + 'Huge text'.length + SNIPPET_CONTENT_LENGTH, String(snippets.work.characters));
    // A word found only past that start is not looked for: the opening of the description instead.
    assert.equal(snippetOf({ ...doc, content: `${filler}the final needle` }, 'needle'), 'Huge text');
    // A content cut inside a word: the cut word is not read (it could fuzzily match as a fragment).
    const cut = `${'x '.repeat((SNIPPET_CONTENT_LENGTH - 4) / 2)}needlework`;
    assert.equal(snippetOf(file({ title: 'T', description: 'D', content: cut }), 'needle'), 'D');
  });

  it('fills at most its budget of edit-distance cells per page, then matches words exactly only', () => {
    const doc = file({ title: 'Title', description: 'lantern lanturn lamp', content: '' });
    const generous = makeSnippets('lantern');
    assert.equal(generous(doc), '<mark>lantern</mark> <mark>lanturn</mark> lamp');
    assert.ok(generous.work.fuzzyWork > 0);
    // The same words in the next hit of the page are matched from what the page already knows.
    const spent = generous.work.fuzzyWork;
    generous(file({ title: 'Again', description: 'lamp lanturn lantern', content: '' }));
    assert.equal(generous.work.fuzzyWork, spent);
    // No budget: exact matches only, still marked.
    const none = makeSnippets('lantern', { fuzzyWork: 0 });
    assert.equal(none(doc), '<mark>lantern</mark> lanturn lamp');
    assert.equal(none.work.fuzzyWork, 0);
  });

  it('bounds the work of a page of hostile hits: random six-letter words over "abcdef", 28 of them in the query', () => {
    const six = (i: number): string => Array.from({ length: 6 }, (_, k) => 'abcdef'[Math.floor(i / 6 ** k) % 6]).join('');
    // Every one of the 46,656 words, in a scrambled order, ~99,000 characters per document.
    const words = Array.from({ length: 6 ** 6 }, (_, i) => six((i * 7919) % 6 ** 6));
    const docs = Array.from({ length: 100 }, (_, d) => file({
      title: `Random ${d}`, description: 'Six letters at a time', content: words.slice((d * 14_000) % 30_000, (d * 14_000) % 30_000 + 14_140).join(' '),
    }));
    const query = Array.from({ length: 28 }, (_, i) => six(i * 1601 + 7)).join(' ');
    const snippets = makeSnippets(query);
    for (const doc of docs) assert.equal(typeof snippets(doc), 'string');
    const perHit = 'Random 00'.length + 'Six letters at a time'.length + SNIPPET_CONTENT_LENGTH;
    assert.ok(snippets.work.characters <= docs.length * perHit, `${snippets.work.characters} characters read`);
    // At most the budget, plus the one table that crossed it.
    assert.ok(snippets.work.fuzzyWork <= SNIPPET_FUZZY_WORK_PER_PAGE + 36, `${snippets.work.fuzzyWork} cells`);
  });
});
