import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { detectFormat } from '../src/formats.ts';

const none = new Uint8Array();
const pdfHead = new TextEncoder().encode('%PDF-1.7\n');

describe('detectFormat', () => {
  it('reads the file name extension, case-insensitively', () => {
    const cases: Array<[string, string]> = [
      ['report.pdf', 'pdf'], ['Letter.DOCX', 'docx'], ['notes.odt', 'odt'], ['deck.pptx', 'pptx'],
      ['page.html', 'html'], ['page.htm', 'html'], ['README.md', 'markdown'], ['a.markdown', 'markdown'],
      ['a.txt', 'text'], ['a.text', 'text'], ['server.log', 'text'], ['data.csv', 'csv'], ['dir/x.y/z.CSV', 'csv'],
    ];
    for (const [fileName, format] of cases) {
      assert.equal(detectFormat({ contentType: 'application/octet-stream', fileName }, none), format, fileName);
    }
  });

  it('falls back to the declared content type, ignoring its parameters', () => {
    const cases: Array<[string, string]> = [
      ['application/pdf', 'pdf'],
      ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'docx'],
      ['application/vnd.oasis.opendocument.text', 'odt'],
      ['application/vnd.openxmlformats-officedocument.presentationml.presentation', 'pptx'],
      ['text/html; charset=utf-8', 'html'], ['text/markdown', 'markdown'], ['TEXT/PLAIN', 'text'], ['text/csv', 'csv'],
    ];
    for (const [contentType, format] of cases) {
      assert.equal(detectFormat({ contentType, fileName: 'upload' }, none), format, contentType);
    }
  });

  it('prefers the extension to the declared type', () => {
    assert.equal(detectFormat({ contentType: 'application/vnd.ms-excel', fileName: 'table.csv' }, none), 'csv');
  });

  it('falls back to the PDF magic bytes', () => {
    assert.equal(detectFormat({ contentType: 'application/octet-stream', fileName: 'scan' }, pdfHead), 'pdf');
  });

  it('answers null for anything else', () => {
    assert.equal(detectFormat({ contentType: 'image/png', fileName: 'photo.png' }, none), null);
    assert.equal(detectFormat({ contentType: '', fileName: 'x.constructor' }, none), null);
    assert.equal(detectFormat({ contentType: 'application/octet-stream', fileName: '.pdf' }, none), null);
  });
});
