// A file's folded state keeps an excerpt of its extracted text, not the text (issue 17). V8 makes
// `text.slice(0, n)` a view that keeps the whole text alive, so an excerpt taken that way would hold
// every character of every cached file's text (the command handler caches 10,000 states).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { FileUploaded } from '@docshare/contracts';
import { EXCERPT_CHARS, evolveFile, initialFileState, type FileEventBody, type FileState } from '../src/commands/domain/file.ts';

// The test runner starts this file without --expose-gc; the flag can still be set at run time.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const settledHeap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const NOW = '2026-11-28T06:00:00.000Z';
const FILES = 40;
const CHARS = 200_000;

const eventsOf = (fileId: number): FileEventBody[] => {
  const upload: FileUploaded = {
    fileId, ownerId: 1, ownerName: 'Ada', title: 'T', description: 'D', tags: ['x'], categoryId: 1, categoryName: 'C',
    license: 'CC BY', videoUrl: null, originalFileName: 'a.txt', contentType: 'text/plain', size: CHARS, blobKey: `f${fileId}`, uploadedAt: NOW,
  };
  // Built per file, as parsing each event from the log would: nothing else holds the text.
  const text = String.fromCharCode(97 + (fileId % 26)).repeat(CHARS);
  return [
    { type: 'docs.file.uploaded.v1', data: upload },
    {
      type: 'docs.file.content-extracted.v1',
      data: {
        fileId, ownerId: 1, blobKey: `f${fileId}`, format: 'text', extractor: 'x', characters: CHARS, truncated: false,
        language: null, text, durationMs: 1, extractedAt: NOW,
      },
    },
  ];
};

describe('file state memory', () => {
  it('a folded state keeps its excerpt, not the extracted text it was cut from', () => {
    const before = settledHeap();
    const states: FileState[] = [];
    for (let fileId = 1; fileId <= FILES; fileId++) states.push(eventsOf(fileId).reduce(evolveFile, initialFileState()));
    const retained = settledHeap() - before;

    const excerpts = states.map((state) => (state.status === 'active' && state.file.extraction?.status === 'extracted' ? state.file.extraction.excerpt : ''));
    assert.deepEqual(excerpts.map((excerpt) => excerpt.length), Array(FILES).fill(EXCERPT_CHARS));
    assert.ok(excerpts[0] === 'b'.repeat(EXCERPT_CHARS), 'the excerpt of file 1 is the start of its text');
    // 40 texts of 200,000 characters are 8 MB; 40 excerpts are 80 KB. A quarter of the texts is the bound.
    const bound = (FILES * CHARS) / 4;
    assert.ok(retained < bound, `${FILES} states retain ${retained} bytes (bound ${bound}): the excerpts hold their texts`);
  });
});
