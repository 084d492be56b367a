import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { ExtractionFailure } from '@docshare/contracts';
import { makeExtractor } from '../src/index.ts';
import type { ExtractOutcome } from '../src/index.ts';
import { corruptDocx, corruptPdf, encryptedPdf, makeDocx, makePdf, millionPagePdf, zipBombDocx } from '../src/testing.ts';

/**
 * Small memory and size budgets, as a hostile file should meet them; a time budget no ordinary file
 * meets even on a loaded machine (3 s made encrypted and corrupt files `timeout` under load). The
 * test that expects `timeout` has its own short one.
 */
const extractor = makeExtractor({ timeoutMs: 60_000, memoryMb: 256, maxChars: 10_000, maxBytes: 8 * 1024 * 1024 });
after(() => extractor.close());

const assertFailed = (outcome: ExtractOutcome, reasons: ExtractionFailure[]): void => {
  assert.equal(outcome.ok, false, `expected a failure, got ${JSON.stringify(outcome).slice(0, 200)}`);
  if (outcome.ok) return;
  assert.ok(reasons.includes(outcome.reason), `reason ${outcome.reason} (${outcome.detail}) is not one of ${reasons.join(', ')}`);
  assert.ok(outcome.detail.length > 0 && outcome.detail.length <= 300 && !outcome.detail.includes('\n    at '), outcome.detail);
};

const pdfHint = { contentType: 'application/pdf', fileName: 'hostile.pdf' };
const docxHint = { contentType: '', fileName: 'hostile.docx' };

describe('hostile files', { timeout: 240_000 }, () => {
  it('an encrypted PDF is `encrypted`', async () => {
    assertFailed(await extractor.extract(await encryptedPdf(), pdfHint), ['encrypted']);
  });

  it('a PDF declaring a million pages runs out of time (`timeout`)', async () => {
    // Read page by page, pdfjs keeps every page it has seen: ~150 MB a second here. The memory
    // budget is raised so the time budget is what stops it, as the file's design intends.
    const patient = makeExtractor({ timeoutMs: 3_000, memoryMb: 1_536, maxChars: 10_000, maxBytes: 1024 * 1024 });
    try {
      const pdf = millionPagePdf();
      assert.ok(pdf.length < 32 * 1024);
      assertFailed(await patient.extract(pdf, pdfHint), ['timeout']);
    } finally {
      await patient.close();
    }
  });

  it('a zip bomb DOCX fails, its child contained, the parent staying small', async () => {
    const rssBefore = process.memoryUsage.rss();
    const honest = zipBombDocx();
    assertFailed(await extractor.extract(honest, docxHint), ['too_large', 'memory', 'corrupt', 'timeout']);
    const liar = zipBombDocx({ lieAboutSize: true });
    assertFailed(await extractor.extract(liar, docxHint), ['too_large', 'memory', 'corrupt', 'timeout']);
    const growthMb = (process.memoryUsage.rss() - rssBefore) / 1024 / 1024;
    assert.ok(growthMb < 200, `the parent grew by ${growthMb.toFixed(0)} MB`);
  });

  it('corrupt files are `corrupt`', async () => {
    assertFailed(await extractor.extract(corruptPdf(), pdfHint), ['corrupt']);
    assertFailed(await extractor.extract(corruptDocx(), docxHint), ['corrupt']);
    const truncated = (await makePdf(['cut short'])).subarray(0, 300);
    assertFailed(await extractor.extract(truncated, pdfHint), ['corrupt']);
    assertFailed(await extractor.extract(makeDocx(['fine']).subarray(0, 200), docxHint), ['corrupt']);
    assertFailed(await extractor.extract(new TextEncoder().encode('<not a zip>'), { contentType: '', fileName: 'x.odt' }), ['corrupt']);
  });

  it('an unknown type is `unsupported_type`', async () => {
    const outcome = await extractor.extract(Uint8Array.of(0x89, 0x50, 0x4e, 0x47), { contentType: 'image/png', fileName: 'photo.png' });
    assertFailed(outcome, ['unsupported_type']);
    assert.equal(outcome.format, null);
  });

  it('a file over maxBytes is `too_large`, without a child', async () => {
    const tiny = makeExtractor({ timeoutMs: 3_000, memoryMb: 256, maxChars: 1_000, maxBytes: 10 });
    try {
      const outcome = await tiny.extract(new Uint8Array(11), { contentType: 'text/plain', fileName: 'a.txt' });
      assertFailed(outcome, ['too_large']);
      assert.equal(outcome.format, 'text');
      assert.equal(tiny.stats().spawned, 0);
    } finally {
      await tiny.close();
    }
  });

  it('still extracts an ordinary file afterwards', async () => {
    const outcome = await extractor.extract(makeDocx(['all is well again']), docxHint);
    assert.ok(outcome.ok);
    assert.equal(outcome.text, 'all is well again');
  });
});
