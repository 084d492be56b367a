import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ExtractFormat } from '@docshare/contracts';
import { cutText, decodeText, normaliseText } from '../src/extract.ts';
import { DEFAULT_EXTRACT_LIMITS, makeExtractor } from '../src/index.ts';
import type { ExtractOutcome } from '../src/index.ts';
import { makeCsv, makeDocx, makeHtml, makeMarkdown, makeOdt, makePdf, makePptx } from '../src/testing.ts';

/** An English paragraph long enough for franc, with a word found nowhere else ("quillwort"). */
const ENGLISH = [
  'The committee met on Tuesday morning to review the annual budget and the plans for the new library.',
  'Everyone agreed that the quillwort garden behind the town hall should be kept open to the public all year.',
  'After a long discussion about the roads, the members decided to meet again at the end of the month.',
];

const extractor = makeExtractor({ ...DEFAULT_EXTRACT_LIMITS, concurrency: 2 });
after(() => extractor.close());

const assertExtracted: (outcome: ExtractOutcome, format: ExtractFormat) => asserts outcome is Extract<ExtractOutcome, { ok: true }> = (outcome, format) => {
  assert.ok(outcome.ok, `expected text, got ${JSON.stringify(outcome)}`);
  assert.equal(outcome.format, format);
};

const files: Array<[ExtractFormat, string, string, () => Promise<Uint8Array> | Uint8Array]> = [
  ['pdf', 'minutes.pdf', 'application/pdf', () => makePdf(ENGLISH)],
  ['docx', 'minutes.docx', 'application/octet-stream', () => makeDocx(ENGLISH)],
  ['odt', 'minutes.odt', '', () => makeOdt(ENGLISH)],
  ['pptx', 'minutes.pptx', '', () => makePptx([ENGLISH.slice(0, 2), ENGLISH.slice(2)])],
  ['html', 'minutes.html', 'text/html', () => makeHtml(ENGLISH, 'Minutes')],
  ['markdown', 'minutes.md', 'text/markdown', () => makeMarkdown(ENGLISH, 'Minutes')],
  ['text', 'minutes.txt', 'text/plain', () => new TextEncoder().encode(ENGLISH.join('\n\n'))],
  ['csv', 'minutes.csv', 'text/csv', () => makeCsv(ENGLISH.map((line, i) => [String(i + 1), line]))],
];

describe('extracting each format', () => {
  for (const [format, fileName, contentType, make] of files) {
    it(`${format}: the body's text, its length and its language`, async () => {
      const outcome = await extractor.extract(await make(), { contentType, fileName });
      assertExtracted(outcome, format);
      assert.match(outcome.text, /quillwort/);
      assert.match(outcome.text, /annual budget/);
      assert.equal(outcome.characters, outcome.text.length);
      assert.equal(outcome.truncated, false);
      assert.equal(outcome.language, 'eng');
      assert.match(outcome.extractor, /^[a-z-]+@\d+\.\d+\.\d+/);
      assert.ok(outcome.durationMs >= 0);
    });
  }

  it('keeps paragraphs apart and markup out of the text', async () => {
    const html = await extractor.extract(makeHtml(['first <b>bold</b> words', 'second']), { contentType: 'text/html', fileName: 'a.html' });
    assertExtracted(html, 'html');
    assert.equal(html.text, 'Document\n\nfirst <b>bold</b> words\n\nsecond');
    const markdown = await extractor.extract(new TextEncoder().encode('# Title\n\nSome *emphasis* and [a link](https://example.com).\n'), { contentType: '', fileName: 'a.md' });
    assertExtracted(markdown, 'markdown');
    assert.equal(markdown.text, 'Title\n\nSome emphasis and a link.');
    const pptx = await extractor.extract(makePptx([['one', 'two'], ['three']]), { contentType: '', fileName: 'a.pptx' });
    assertExtracted(pptx, 'pptx');
    assert.equal(pptx.text, 'one\ntwo\n\nthree');
    assert.equal(pptx.language, null, 'too short to guess');
  });

  it('reads UTF-16 text by its byte-order mark', async () => {
    const utf16 = Buffer.from('\ufeffcaf\u00e9 au lait', 'utf16le');
    const outcome = await extractor.extract(utf16, { contentType: 'text/plain', fileName: 'a.txt' });
    assertExtracted(outcome, 'text');
    assert.equal(outcome.text, 'caf\u00e9 au lait');
  });
});

describe('the character cap', () => {
  const long = Array.from({ length: 400 }, (_, i) => `Paragraph ${i} of the long report, with enough words to fill the page quickly.`);

  for (const [format, fileName, make] of [
    ['pdf', 'long.pdf', () => makePdf(long)],
    ['docx', 'long.docx', () => makeDocx(long)],
    ['odt', 'long.odt', () => makeOdt(long)],
    ['csv', 'long.csv', () => makeCsv(long.map((line) => [line]))],
    ['text', 'long.txt', () => new TextEncoder().encode(long.join('\n'))],
  ] as const) {
    it(`${format}: cuts the text at maxChars and says so`, async () => {
      const small = makeExtractor({ ...DEFAULT_EXTRACT_LIMITS, maxChars: 1_000 });
      try {
        const outcome = await small.extract(await make(), { contentType: '', fileName });
        assertExtracted(outcome, format);
        assert.equal(outcome.truncated, true);
        assert.ok(outcome.characters <= 1_000 && outcome.characters > 900, `${outcome.characters} characters`);
        assert.match(outcome.text, /^Paragraph 0 of the long report/);
      } finally {
        await small.close();
      }
    });
  }

  it('is capped at MAX_EXTRACT_CHARS whatever maxChars says', async () => {
    const generous = makeExtractor({ ...DEFAULT_EXTRACT_LIMITS, maxChars: 10_000_000 });
    try {
      const outcome = await generous.extract(new TextEncoder().encode('word '.repeat(100_000)), { contentType: 'text/plain', fileName: 'a.txt' });
      assertExtracted(outcome, 'text');
      assert.equal(outcome.truncated, true);
      assert.ok(outcome.characters <= 200_000);
    } finally {
      await generous.close();
    }
  });
});

describe('text normalisation', () => {
  it('drops control characters, collapses spaces and blank lines, trims', () => {
    assert.equal(normaliseText('  a\u0000b\u0007  c \r\n\r\n\r\n\r\nd\te\u000c  \n  f  '), 'ab c\n\nd\te\nf');
    // C1 controls and bidi embeddings, overrides and isolates go too; the marks RTL text needs stay.
    assert.equal(normaliseText('x\u009b2Jy \u202eevil\u202c \u2066z\u2069 \u200fmark'), 'x2Jy evil z \u200fmark');
  });

  it('never cuts between the halves of a surrogate pair', () => {
    assert.deepEqual(cutText('ab\u{1f600}cd', 3), { text: 'ab', cut: true });
    assert.deepEqual(cutText('ab\u{1f600}cd', 4), { text: 'ab\u{1f600}', cut: true });
    assert.deepEqual(cutText('abc', 3), { text: 'abc', cut: false });
  });

  it('decodes UTF-8 (dropping its BOM) and UTF-16 BE', () => {
    assert.equal(decodeText(Uint8Array.of(0xef, 0xbb, 0xbf, 0x68, 0x69)).text, 'hi');
    assert.equal(decodeText(Uint8Array.of(0xfe, 0xff, 0x00, 0x68, 0x00, 0x69)).text, 'hi');
    assert.equal(decodeText(Uint8Array.of(0x68, 0xff, 0x69)).text, 'h\ufffdi');
  });
});
