import { parseExtractionReport } from '../src/http/extraction-report.ts';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseRange } from '../src/http/app.ts';
import { escapeHtml, renderFilePage } from '../src/pages/view-page.ts';
import { parseChanges, parseUploadMetadata } from '../src/http/validation.ts';
import { DocshareError } from '@docshare/contracts';

describe('Range header', () => {
  it('reads the three forms of one range', () => {
    assert.deepEqual(parseRange('bytes=0-9', 100), { start: 0, end: 9 });
    assert.deepEqual(parseRange('bytes=90-', 100), { start: 90, end: 99 });
    assert.deepEqual(parseRange('bytes=-10', 100), { start: 90, end: 99 });
    assert.deepEqual(parseRange('bytes=95-200', 100), { start: 95, end: 99 });
  });
  it('is unsatisfiable past the end, and ignored when malformed or multiple', () => {
    assert.equal(parseRange('bytes=100-', 100), 'unsatisfiable');
    assert.equal(parseRange('bytes=-0', 100), 'unsatisfiable');
    assert.equal(parseRange('bytes=5-1', 100), undefined);
    assert.equal(parseRange('bytes=0-1,5-6', 100), undefined);
    assert.equal(parseRange('items=0-1', 100), undefined);
    assert.equal(parseRange(undefined, 100), undefined);
  });
});

describe('view page', () => {
  it('escapes every user-supplied value', () => {
    const evil = '<script>alert("x")</script>';
    const html = renderFilePage({
      fileId: 1, ownerId: 1, ownerName: evil, title: evil, description: evil, tags: [evil], categoryId: 1,
      categoryName: evil, license: 'CC BY', videoUrl: `https://example.com/"><script>`, originalFileName: evil,
      contentType: 'text/plain', size: 1, blobKey: 'k', uploadedAt: '2026-11-20T00:00:00Z', enabled: true, forSale: false, price: 0,
    }, 'http://localhost', 'nonce123');
    assert.equal(html.match(/<script/g)?.length, 1, 'only the page\'s own script');
    assert.match(html, /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt;/);
    assert.equal(escapeHtml(`&<>"'`), '&amp;&lt;&gt;&quot;&#39;');
  });

  const file = {
    fileId: 1, ownerId: 1, ownerName: 'Ada', title: 'T', description: 'D', tags: ['a'], categoryId: 1, categoryName: 'C', license: 'CC BY',
    videoUrl: null, originalFileName: 'f.pdf', contentType: 'application/pdf', size: 1, blobKey: 'k', uploadedAt: '2026-11-20T00:00:00Z',
    enabled: true, forSale: false, price: 0,
  };

  it('shows the extraction status: pending, failed with its reason, or the text\'s first lines escaped', () => {
    assert.match(renderFilePage(file, 'http://x', 'n'), /Status: <strong>pending<\/strong>/);
    const failed = renderFilePage({ ...file, extraction: { status: 'failed', format: 'pdf', reason: 'encrypted', detail: 'x' } }, 'http://x', 'n');
    assert.match(failed, /Status: <strong>failed<\/strong>: the file is encrypted/);
    const lines = ['<script>alert(1)</script> first', '', ...Array.from({ length: 30 }, (_, i) => `line ${i}`)];
    const excerpt = lines.join('\n');
    const html = renderFilePage({
      ...file, extraction: { status: 'extracted', format: 'pdf', extractor: 'pdfjs-dist@6', characters: 5000, truncated: false, language: 'eng', excerpt },
    }, 'http://x', 'n');
    assert.match(html, /Status: <strong>extracted<\/strong> \(5000 characters, PDF, language eng\)/);
    assert.equal(html.match(/<script/g)?.length, 1, 'only the page\'s own script');
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt; first\nline 0/);
    assert.ok(html.includes('line 10') && !html.includes('line 11'), 'the first 12 lines with text');
    assert.ok(html.includes('…'));
  });
});

const message = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    if (error instanceof DocshareError) return `${error.kind}: ${error.message}`;
    throw error;
  }
  return 'ok';
};

describe('upload validation', () => {
  const valid = { title: 't', description: 'd', tags: 'a, b,,A', cc_license: ' cc  by-nc-nd ', new_category_name: 'Science' };
  it('normalises license and tags', () => {
    const parsed = parseUploadMetadata(valid);
    assert.equal(parsed.license, 'CC BY-NC-ND');
    assert.deepEqual(parsed.tags, ['a', 'b']);
    assert.deepEqual(parsed.category, { kind: 'new', name: 'Science', description: '', tags: [] });
  });
  it('checks in the documented order', () => {
    assert.equal(message(() => parseUploadMetadata({})), 'invalid: Title is required');
    assert.equal(message(() => parseUploadMetadata({ title: 't' })), 'invalid: Description is required');
    assert.equal(message(() => parseUploadMetadata({ title: 't', description: 'd', tags: ' , ' })), 'invalid: Tags are required');
    assert.equal(message(() => parseUploadMetadata({ ...valid, cc_license: 'GPL' })), 'invalid: Invalid license');
    assert.equal(message(() => parseUploadMetadata({ ...valid, new_category_name: ' ' })), 'invalid: Category ID or new category name is required');
    assert.equal(message(() => parseUploadMetadata({ ...valid, category_id: 'x' })), 'not_found: Category not found');
    assert.equal(message(() => parseUploadMetadata({ ...valid, video: 'javascript:alert(1)' })), 'invalid: Invalid video URL');
    assert.equal(message(() => parseUploadMetadata({ ...valid, video: '' })), 'ok');
  });
});

describe('update validation', () => {
  it('needs at least one change, each of the right type', () => {
    assert.equal(message(() => parseChanges({ id: 1 })), 'invalid: Nothing to update');
    assert.equal(message(() => parseChanges({ for_sale: 'yes' })), 'invalid: for_sale must be a boolean');
    assert.equal(message(() => parseChanges({ enabled: 1 })), 'invalid: enabled must be a boolean');
    assert.equal(message(() => parseChanges({ price: -1 })), 'invalid: price must be a non-negative number');
    assert.equal(message(() => parseChanges({ title: ' ' })), 'invalid: Title is required');
    assert.deepEqual(parseChanges({ for_sale: true, price: '2.5', tags: 'x,y' }), { forSale: true, price: 2.5, tags: ['x', 'y'] });
  });
});

describe('extraction report validation', () => {
  const good = { blobKey: 'f1-x', report: { ok: true, format: 'pdf', extractor: 'pdfjs-dist@6', text: 'hi', truncated: false, language: null, durationMs: 3 } };
  it('takes a well-formed report, success or failure', () => {
    assert.deepEqual(parseExtractionReport(good), good);
    const failed = { blobKey: 'k', report: { ok: false, format: null, reason: 'unsupported_type', detail: 'x', durationMs: 0 } };
    assert.deepEqual(parseExtractionReport(failed), failed);
  });
  it('refuses anything else with Bad request', () => {
    for (const body of [
      {}, { blobKey: 'k' }, { ...good, report: { ...good.report, format: 'exe' } }, { ...good, report: { ...good.report, text: 'x'.repeat(200_001) } },
      { ...good, report: { ...good.report, language: 'english' } }, { ...good, report: { ok: false, format: 'pdf', reason: 'bored', detail: '', durationMs: 1 } },
      { ...good, blobKey: '' },
    ]) assert.equal(message(() => parseExtractionReport(body)), 'invalid: Bad request', JSON.stringify(body).slice(0, 80));
  });
});
