import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError, M } from '@docshare/contracts';
import { parsePartNumber, parseParts, parseStartUpload, parseUploadMetadata } from '../src/http/validation.ts';

// The resumable upload's request bodies (http/validation.ts): POST api-uploads checks the file's
// name, size and type, then the metadata exactly as api-upload's form (same messages, same order);
// the completion's part list; the part number of a part URL.

/** `kind: message` of what `fn` throws, or 'ok'. */
const outcome = (fn: () => unknown): string => {
  try {
    fn();
    return 'ok';
  } catch (error) {
    if (error instanceof DocshareError) return `${error.kind}: ${error.message}`;
    throw error;
  }
};

const META = { title: 'T', description: 'D', tags: 'a,b', cc_license: 'CC BY', new_category_name: 'Cat' };
const VALID = { file_name: 'big.pdf', size: 123, content_type: 'application/pdf', ...META };

describe('parseStartUpload', () => {
  it('checks the file name, then the size, then the content type, then the metadata', () => {
    assert.equal(outcome(() => parseStartUpload({})), `invalid: ${M.fileNameRequired}`);
    assert.equal(outcome(() => parseStartUpload({ size: 'x', content_type: 'x', title: '' })), `invalid: ${M.fileNameRequired}`);
    assert.equal(outcome(() => parseStartUpload({ file_name: 'a.pdf', content_type: 'x' })), `invalid: ${M.invalidUploadSize}`);
    assert.equal(outcome(() => parseStartUpload({ file_name: 'a.pdf', size: 1, content_type: 'x' })), `invalid: ${M.invalidContentType}`);
    assert.equal(outcome(() => parseStartUpload({ file_name: 'a.pdf', size: 1, content_type: 'text/plain' })), `invalid: ${M.titleRequired}`);
    assert.equal(outcome(() => parseStartUpload({ file_name: 'a.pdf', size: 1 })), `invalid: ${M.titleRequired}`, 'content_type is optional');
    assert.equal(outcome(() => parseStartUpload(VALID)), 'ok');
  });

  it('a missing or blank file name, or one that is not a string, is required', () => {
    for (const fileName of [undefined, null, '', '   ', 5, ['a'], { a: 1 }]) {
      assert.equal(outcome(() => parseStartUpload({ ...VALID, file_name: fileName })), `invalid: ${M.fileNameRequired}`, JSON.stringify(fileName));
    }
  });

  it('keeps the file name like a form\'s: its last path segment, without control characters, at most 255 characters', () => {
    assert.equal(parseStartUpload({ ...VALID, file_name: ' ../../etc/passwd ' }).fileName, 'passwd');
    assert.equal(parseStartUpload({ ...VALID, file_name: 'C:\\Users\\ada\\résumé 1.pdf' }).fileName, 'résumé 1.pdf');
    assert.equal(parseStartUpload({ ...VALID, file_name: 'a\u0007b\u202e.pdf' }).fileName, 'ab.pdf');
    assert.equal(parseStartUpload({ ...VALID, file_name: `${'n'.repeat(300)}.pdf` }).fileName.length, 255);
  });

  it('takes the size as a JSON integer or a digit string, at least 1', () => {
    for (const [size, expected] of [[1, 1], [5 * 1024 ** 3 + 1, 5 * 1024 ** 3 + 1], ['42', 42], ['0042', 42], [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]] as const) {
      assert.equal(parseStartUpload({ ...VALID, size }).size, expected, JSON.stringify(size));
    }
    for (const size of [undefined, null, 0, -1, 1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 1, '0', '-1', '1.5', '1e3', ' 12', '12 ', '', '0x10', '9'.repeat(16), '9'.repeat(17), true, [1], { n: 1 }]) {
      assert.equal(outcome(() => parseStartUpload({ ...VALID, size })), `invalid: ${M.invalidUploadSize}`, JSON.stringify(size));
    }
  });

  it('takes a media type when one is given, else application/octet-stream', () => {
    assert.equal(parseStartUpload({ ...VALID, content_type: undefined }).contentType, 'application/octet-stream');
    assert.equal(parseStartUpload({ ...VALID, content_type: null }).contentType, 'application/octet-stream');
    assert.equal(parseStartUpload({ ...VALID, content_type: '  ' }).contentType, 'application/octet-stream');
    assert.equal(parseStartUpload({ ...VALID, content_type: ' text/csv; charset=utf-8 ' }).contentType, 'text/csv; charset=utf-8');
    assert.equal(parseStartUpload({ ...VALID, content_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' }).contentType,
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    for (const contentType of ['pdf', 'text/', '/plain', 'text/plain/x', 'text plain', 'text/plain\r\nX-Evil: 1', 'téxt/plain', 5, true, ['text/plain']]) {
      assert.equal(outcome(() => parseStartUpload({ ...VALID, content_type: contentType })), `invalid: ${M.invalidContentType}`, JSON.stringify(contentType));
    }
  });

  it('checks the metadata exactly as api-upload\'s form does (same message for the same fields)', () => {
    const cases: Array<Record<string, string>> = [
      {}, { title: 't' }, { title: 't', description: 'd' }, { title: 't', description: 'd', tags: ' , ' },
      { ...META, title: 'x'.repeat(10_000) }, { ...META, title: 'a\u0000b' }, { ...META, description: 'a\u001bb' },
      { ...META, cc_license: 'GPL' }, { ...META, cc_license: '' }, { ...META, new_category_name: ' ' },
      { ...META, new_category_name: 'x'.repeat(10_000) }, { ...META, category_id: 'x' }, { ...META, category_id: '0' },
      { ...META, video: 'javascript:alert(1)' }, { ...META, video: '' }, { ...META, video: 'https://example.com/v' }, META,
    ];
    for (const fields of cases) {
      const expected = outcome(() => parseUploadMetadata(fields));
      assert.equal(outcome(() => parseStartUpload({ file_name: 'a.pdf', size: 10, ...fields })), expected, JSON.stringify(fields).slice(0, 120));
    }
    const { metadata } = parseStartUpload({ ...VALID, tags: 'b, a, B', video: 'https://example.com/v' });
    assert.deepEqual(metadata, parseUploadMetadata({ ...META, tags: 'b, a, B', video: 'https://example.com/v' }));
  });

  it('takes category_id as a JSON number or a digit string; an id that cannot exist is not found', () => {
    assert.deepEqual(parseStartUpload({ ...VALID, new_category_name: undefined, category_id: 3 }).metadata.category, { kind: 'existing', categoryId: 3 });
    assert.deepEqual(parseStartUpload({ ...VALID, new_category_name: undefined, category_id: '3' }).metadata.category, { kind: 'existing', categoryId: 3 });
    // An existing category wins over a new one, as in the form.
    assert.deepEqual(parseStartUpload({ ...VALID, category_id: 3 }).metadata.category, { kind: 'existing', categoryId: 3 });
    for (const categoryId of [0, -1, 3.5, 1e20, '3.5', 'abc']) {
      assert.equal(outcome(() => parseStartUpload({ ...VALID, category_id: categoryId })), `not_found: ${M.categoryNotFound}`, JSON.stringify(categoryId));
    }
    // Neither a category id of another JSON type nor a name: the category is required.
    for (const categoryId of [true, [3], { id: 3 }]) {
      assert.equal(outcome(() => parseStartUpload({ ...VALID, new_category_name: undefined, category_id: categoryId })), `invalid: ${M.categoryRequired}`, JSON.stringify(categoryId));
    }
  });

  it('a metadata field of another JSON type counts as missing', () => {
    assert.equal(outcome(() => parseStartUpload({ ...VALID, title: ['T'] })), `invalid: ${M.titleRequired}`);
    assert.equal(outcome(() => parseStartUpload({ ...VALID, description: { d: 1 } })), `invalid: ${M.descriptionRequired}`);
    assert.equal(outcome(() => parseStartUpload({ ...VALID, tags: null })), `invalid: ${M.tagsRequired}`);
    assert.equal(parseStartUpload({ ...VALID, title: 2026 }).metadata.title, '2026', 'a number is its digits, as a form field would carry it');
  });
});

describe('parseParts', () => {
  it('absent or null: every part received', () => {
    assert.equal(parseParts({}), undefined);
    assert.equal(parseParts({ parts: null }), undefined);
  });

  it('a list of {part_number, etag}, in the order given, extra fields ignored', () => {
    assert.deepEqual(parseParts({ parts: [] }), []);
    assert.deepEqual(parseParts({ parts: [{ part_number: 2, etag: '"b"' }, { part_number: 1, etag: 'a', size: 5 }] }),
      [{ partNumber: 2, etag: '"b"' }, { partNumber: 1, etag: 'a' }]);
    assert.deepEqual(parseParts({ parts: [{ part_number: 10_000, etag: 'e'.repeat(200) }] }), [{ partNumber: 10_000, etag: 'e'.repeat(200) }]);
  });

  it('anything else is invalid', () => {
    const ok = { part_number: 1, etag: 'a' };
    for (const parts of [
      'x', 5, true, {}, { 0: ok }, [null], [5], ['a'], [[1, 'a']],
      [{ etag: 'a' }], [{ part_number: 0, etag: 'a' }], [{ part_number: -1, etag: 'a' }], [{ part_number: 1.5, etag: 'a' }],
      [{ part_number: '1', etag: 'a' }], [{ part_number: Number.MAX_SAFE_INTEGER + 1, etag: 'a' }],
      [{ part_number: 1 }], [{ part_number: 1, etag: '' }], [{ part_number: 1, etag: 5 }], [{ part_number: 1, etag: 'e'.repeat(201) }],
      [ok, { part_number: 1, etag: 'b' }],
      Array.from({ length: 10_001 }, (_, i) => ({ part_number: i + 1, etag: 'a' })),
    ]) {
      assert.equal(outcome(() => parseParts({ parts })), `invalid: ${M.invalidParts}`, JSON.stringify(parts).slice(0, 80));
    }
  });
});

describe('parsePartNumber', () => {
  it('1 to 10,000 in plain digits', () => {
    for (const [value, expected] of [['1', 1], ['9', 9], ['10', 10], ['9999', 9999], ['10000', 10_000]] as const) assert.equal(parsePartNumber(value), expected);
  });

  it('anything else is null', () => {
    for (const value of [undefined, '', '0', '00', '01', '-1', '+1', '1.0', '1e3', ' 1', '1 ', '10001', '99999', '100000', 'abc', '0x10']) {
      assert.equal(parsePartNumber(value), null, JSON.stringify(value));
    }
  });
});
