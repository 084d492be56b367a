import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LICENSES } from '@docshare/contracts';
import {
  CONTENT_SECURITY_POLICY, contentDispositionFor, formatSize, LICENSE_DEEDS, licenseDeed, previewKind, renderFilePage,
} from '../src/pages/view-page.ts';

describe('file page pieces', () => {
  it('reads sizes in decimal units with the exact count', () => {
    assert.equal(formatSize(0), '0 bytes');
    assert.equal(formatSize(1), '1 byte');
    assert.equal(formatSize(999), '999 bytes');
    assert.equal(formatSize(1000), '1.0 kB (1,000 bytes)');
    assert.equal(formatSize(2_500), '2.5 kB (2,500 bytes)');
    assert.equal(formatSize(1_432_118), '1.4 MB (1,432,118 bytes)');
    assert.equal(formatSize(999_999), '1.0 MB (999,999 bytes)', 'rounds into the next unit, never "1000.0 kB"');
    assert.equal(formatSize(99_960), '100 kB (99,960 bytes)');
    assert.equal(formatSize(142_857_143), '143 MB (142,857,143 bytes)');
    assert.equal(formatSize(104_857_600), '105 MB (104,857,600 bytes)');
    assert.equal(formatSize(5_000_000_000), '5.0 GB (5,000,000,000 bytes)');
  });

  it('maps every licence to its Creative Commons deed, and nothing else', () => {
    assert.deepEqual(Object.keys(LICENSE_DEEDS).sort(), [...LICENSES].sort());
    for (const license of LICENSES) assert.match(licenseDeed(license) ?? '', /^https:\/\/creativecommons\.org\/(licenses\/[a-z-]+\/4\.0|publicdomain\/zero\/1\.0)\/$/);
    assert.equal(licenseDeed('CC BY-NC-ND'), 'https://creativecommons.org/licenses/by-nc-nd/4.0/');
    assert.equal(licenseDeed('CC0'), 'https://creativecommons.org/publicdomain/zero/1.0/');
    assert.equal(licenseDeed('GPL'), undefined);
    assert.equal(licenseDeed('constructor'), undefined, 'no inherited property');
  });

  it('previews only the types a browser shows without running them', () => {
    assert.equal(previewKind('application/pdf'), 'pdf');
    assert.equal(previewKind('Image/PNG'), 'image');
    assert.equal(previewKind('text/plain; charset=utf-8'), 'text');
    for (const type of ['text/html', 'image/svg+xml', 'application/xhtml+xml', 'text/xml', 'text/javascript', 'application/octet-stream', '', 'constructor']) {
      assert.equal(previewKind(type), null, type);
    }
  });

  it('serves inline only what is asked for and previewable; the sandbox holds for everything', () => {
    assert.match(contentDispositionFor('a "b".pdf', 'application/pdf', 'inline'), /^inline; filename="a _b_.pdf"; filename\*=UTF-8''/);
    assert.match(contentDispositionFor('a.pdf', 'application/pdf', undefined), /^attachment; /);
    assert.match(contentDispositionFor('a.pdf', 'application/pdf', ['inline']), /^attachment; /);
    assert.match(contentDispositionFor('a.html', 'text/html', 'inline'), /^attachment; /);
    assert.match(CONTENT_SECURITY_POLICY, /^sandbox;/);
  });

  it('renders the licence link, the readable size and the preview control', () => {
    const html = renderFilePage({
      fileId: 7, ownerId: 1, ownerName: 'Ada', title: 'T', description: 'D', tags: [], categoryId: 1, categoryName: 'C', license: 'CC BY-SA',
      videoUrl: null, originalFileName: 'f.png', contentType: 'image/png', size: 2_048, blobKey: 'k', uploadedAt: '2026-11-20T00:00:00Z',
      enabled: true, forSale: false, price: 0,
    }, 'https://docs.example', 'n0nce');
    assert.ok(html.includes('<a id="license" href="https://creativecommons.org/licenses/by-sa/4.0/" rel="license noopener noreferrer">CC BY-SA</a>'));
    assert.ok(html.includes('<dd id="file-size">2.0 kB (2,048 bytes)</dd>'));
    assert.ok(html.includes('data-preview="image"') && html.includes('id="preview-button"'));
    assert.ok(html.includes('<link rel="canonical" href="https://docs.example/docs/7">'));
    assert.ok(html.includes('<script nonce="n0nce">'));
    const unknown = renderFilePage({
      fileId: 8, ownerId: 1, ownerName: 'Ada', title: 'T', description: 'D', tags: [], categoryId: 1, categoryName: 'C', license: '<odd>',
      videoUrl: null, originalFileName: 'f.zip', contentType: 'application/zip', size: 1, blobKey: 'k', uploadedAt: '2026-11-20T00:00:00Z',
      enabled: true, forSale: false, price: 0,
    }, 'https://docs.example', 'n');
    assert.ok(unknown.includes('<dt>License</dt><dd>&lt;odd&gt;</dd>'), 'a label of no deed is escaped text');
    assert.ok(unknown.includes('data-preview=""') && !unknown.includes('id="preview-button"'));
  });
});
