// Extracted text is bounded by the file's bytes (issue 17; docs/api-decisions.md, Text extraction):
// a file keeps at most TEXT_CHARS_PER_BYTE characters of text per byte it counts against its
// owner's quota, so a full quota cannot buy unbounded text.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FileUploaded } from '@docshare/contracts';
import { decideFile, evolveFile, initialFileState, type FileCommand, type FileEventBody } from '../src/commands/domain/file.ts';
import { keptText, TEXT_CHARS_PER_BYTE, textAllowance } from '../src/commands/domain/extraction-text.ts';

const NOW = '2026-11-28T06:00:00.000Z';

const uploadOf = (size: number): FileEventBody => ({
  type: 'docs.file.uploaded.v1',
  data: {
    fileId: 7, ownerId: 1, ownerName: 'Ada', title: 'Notes', description: 'd', tags: ['x'], categoryId: 3, categoryName: 'C',
    license: 'CC BY', videoUrl: null, originalFileName: 'notes.odt', contentType: 'application/vnd.oasis.opendocument.text',
    size, blobKey: 'f7-x', uploadedAt: NOW,
  } satisfies FileUploaded,
});

const report = (text: string, truncated = false): FileCommand => ({
  type: 'RecordExtraction', fileId: 7, blobKey: 'f7-x', now: NOW,
  report: { ok: true, format: 'odt', extractor: 'fflate+saxes', text, truncated, language: null, durationMs: 5 },
});

/** given a file of `size` bytes, when the extractor reports `text`, then what is recorded. */
const recorded = (size: number, text: string, truncated = false) => {
  const state = [uploadOf(size)].reduce(evolveFile, initialFileState());
  const [event, ...more] = decideFile(report(text, truncated), state);
  assert.equal(more.length, 0);
  assert.equal(event?.type, 'docs.file.content-extracted.v1');
  return event.data as { text: string; characters: number; truncated: boolean };
};

describe('extracted text allowance', () => {
  it('keeps text within the allowance as it came', () => {
    const text = 'word '.repeat(400).trim();
    const data = recorded(2_000, text);
    assert.deepEqual([data.text, data.characters, data.truncated], [text, text.length, false]);
    assert.equal(recorded(2_000, text, true).truncated, true, 'the extractor\'s own cut is kept');
  });

  it('cuts text over TEXT_CHARS_PER_BYTE characters a byte, and says it was cut', () => {
    // A 2 KB ODT that inflates to 100,000 characters (issue 17).
    const data = recorded(2_000, 'abcdef '.repeat(100_000 / 7));
    assert.equal(data.characters, data.text.length);
    assert.ok(data.characters <= 2_000 * TEXT_CHARS_PER_BYTE, `${data.characters} characters kept of a 2,000-byte file`);
    assert.ok(data.characters > 2_000 * TEXT_CHARS_PER_BYTE - 10, 'the allowance is used, not thrown away');
    assert.equal(data.truncated, true);
  });

  it('keeps no text of an empty file', () => {
    const data = recorded(0, 'text from nowhere');
    assert.deepEqual([data.text, data.characters, data.truncated], ['', 0, true]);
  });

  it('never cuts between the halves of a surrogate pair', () => {
    assert.equal(textAllowance(1), TEXT_CHARS_PER_BYTE);
    const text = `${'a'.repeat(TEXT_CHARS_PER_BYTE - 1)}😀tail`;
    const kept = keptText(text, 1);
    assert.deepEqual(kept, { text: 'a'.repeat(TEXT_CHARS_PER_BYTE - 1), cut: true });
  });
});
