import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { snippetOf } from '../src/snippet.ts';
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

  it('is fast on a 200,000-character content', () => {
    const vocabulary = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}ord${(i * 7919).toString(36)}`);
    let content = '';
    for (let i = 0; content.length < 200_000; i++) content += `${vocabulary[(i * 31) % vocabulary.length]} `;
    content += 'the final needle';
    const doc = file({ title: 'Big', description: 'Huge text', content });
    const began = performance.now();
    const snippet = snippetOf(doc, 'neadle wordy something else entirely different quarterly budgets');
    const ms = performance.now() - began;
    assert.match(snippet, /<mark>needle<\/mark>/);
    assert.ok(ms < 500, `${ms} ms`);
  });
});
