import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { makeOriginalNamer, safeFileName } from '../src/entry-names.ts';

describe('safeFileName', () => {
  it('keeps an ordinary name as it is', () => {
    assert.equal(safeFileName('Report 2025 (final).pdf'), 'Report 2025 (final).pdf');
    assert.equal(safeFileName('Übersicht – März.docx'), 'Übersicht – März.docx');
  });

  it('keeps only the last path segment: no traversal, no absolute path, no drive', () => {
    assert.equal(safeFileName('../../etc/passwd'), 'passwd');
    assert.equal(safeFileName('..\\..\\Windows\\win.ini'), 'win.ini');
    assert.equal(safeFileName('/var/data/secret.txt'), 'secret.txt');
    assert.equal(safeFileName('C:\\boot.ini'), 'boot.ini');
    assert.equal(safeFileName('C:evil.txt'), 'C_evil.txt');
    assert.equal(safeFileName('notes.txt/..'), 'notes.txt');
  });

  it('never gives an empty name, `.` or `..`', () => {
    for (const name of ['', '.', '..', '../..', '/', '\\\\', '   ', '\u0000\u0001', '...', '\u202e']) {
      const safe = safeFileName(name);
      assert.equal(safe, 'file', JSON.stringify(name));
    }
  });

  it('drops control and invisible formatting characters', () => {
    assert.equal(safeFileName('a\u0000b\u001b[31mc\u007f.txt'), 'ab[31mc.txt');
    assert.equal(safeFileName('invoice\u202Efdp.exe'), 'invoicefdp.exe');
    assert.equal(safeFileName('zero\u200Bwidth\u2028line.txt'), 'zerowidthline.txt');
    assert.equal(safeFileName('tab\there\nnew.txt'), 'tabherenew.txt');
  });

  it('replaces what Windows refuses, and drops trailing dots and spaces', () => {
    assert.equal(safeFileName('a<b>c:d"e|f?g*h.txt'), 'a_b_c_d_e_f_g_h.txt');
    assert.equal(safeFileName('name.txt. . '), 'name.txt');
  });

  it('mends lone surrogates instead of writing invalid UTF-8', () => {
    const safe = safeFileName('bad\uD800name.txt');
    assert.equal(safe.isWellFormed(), true);
    assert.equal(safe, 'bad\uFFFDname.txt');
  });

  it('shortens a long name to 200 UTF-8 bytes, keeping its extension and whole characters', () => {
    const ascii = safeFileName(`${'a'.repeat(300)}.pdf`);
    assert.equal(ascii, `${'a'.repeat(196)}.pdf`);
    const wide = safeFileName(`${'€'.repeat(100)}.pdf`);
    assert.ok(Buffer.byteLength(wide) <= 200);
    assert.equal(wide, `${'€'.repeat(65)}.pdf`);
    assert.equal(safeFileName('x'.repeat(500)).length, 200);
  });
});

describe('makeOriginalNamer', () => {
  it('puts the file id in front, under originals/', () => {
    const name = makeOriginalNamer();
    assert.equal(name(12, 'a.pdf'), 'originals/12-a.pdf');
    assert.equal(name(13, '../../x.pdf'), 'originals/13-x.pdf');
  });

  it('makes every name unique, without regard to case', () => {
    const name = makeOriginalNamer();
    assert.equal(name(1, 'a.pdf'), 'originals/1-a.pdf');
    assert.equal(name(1, 'A.PDF'), 'originals/1-A (2).PDF');
    assert.equal(name(1, 'a.pdf'), 'originals/1-a (3).pdf');
    assert.equal(name(1, 'dir/a.pdf'), 'originals/1-a (4).pdf');
    assert.equal(name(2, 'a.pdf'), 'originals/2-a.pdf');
    assert.equal(name(3, ''), 'originals/3-file');
    assert.equal(name(3, '..'), 'originals/3-file (2)');
  });

  it('refuses a file id that is not a non-negative integer (it would become part of a path)', () => {
    const name = makeOriginalNamer();
    for (const id of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60]) assert.throws(() => name(id, 'a'), TypeError);
  });
});
