// Validators and the evaluation of conditional requests (http-caching.ts, RFC 9110 §8.8 and §13).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  contentValidators, httpDate, notModified, pageValidators, parseEntityTags, parseHttpDate, rangeAllowed, strongMatch, weakMatch,
  type Validators,
} from '../src/http/http-caching.ts';
import { evolveFile, initialFileState, type FileEventBody, type FileState } from '../src/commands/domain/file.ts';

const UPLOADED = '2026-03-04T05:06:07.890Z';
const file = { blobKey: 'f1-6b1d1f0e-8a36-4c43-9f8e-0f7b7a0e0001', uploadedAt: UPLOADED };
const v: Validators = contentValidators(file);
const LAST_MODIFIED = 'Wed, 04 Mar 2026 05:06:07 GMT';

describe('validators', () => {
  it('content: a strong tag from the blob key (stable, one per upload), Last-Modified = the upload time to the second', () => {
    assert.match(v.etag, /^"[A-Za-z0-9_-]{24}"$/);
    assert.deepEqual(contentValidators({ ...file }), v, 'the same for the same blob');
    assert.notEqual(contentValidators({ ...file, blobKey: 'f2-6b1d1f0e-8a36-4c43-9f8e-0f7b7a0e0002' }).etag, v.etag);
    assert.equal(httpDate(v.lastModified), LAST_MODIFIED);
  });

  it('page: a weak tag of what the page shows, Last-Modified = when the file last changed', () => {
    const page = pageValidators('<html>one</html>', { uploadedAt: UPLOADED, changedAt: '2026-03-05T00:00:00.500Z' });
    assert.match(page.etag, /^W\/"[A-Za-z0-9_-]{24}"$/);
    assert.equal(pageValidators('<html>one</html>', { uploadedAt: UPLOADED }).etag, page.etag);
    assert.notEqual(pageValidators('<html>two</html>', { uploadedAt: UPLOADED }).etag, page.etag);
    assert.equal(httpDate(page.lastModified), 'Thu, 05 Mar 2026 00:00:00 GMT');
    assert.equal(httpDate(pageValidators('x', { uploadedAt: UPLOADED }).lastModified), LAST_MODIFIED, 'without changedAt: the upload');
  });

  it('a file changes (changedAt) with its upload, an update and the extraction report, not with views or downloads', () => {
    const base = { fileId: 1, ownerId: 2 };
    const events: FileEventBody[] = [
      { type: 'docs.file.uploaded.v1', data: { ...base, ownerName: 'o', title: 't', description: 'd', tags: [], categoryId: 1, categoryName: 'c', license: 'CC BY', videoUrl: null, originalFileName: 'a', contentType: 'text/plain', size: 1, blobKey: 'k', uploadedAt: '2026-01-01T00:00:00.000Z' } },
      { type: 'docs.file.viewed.v1', data: { ...base, viewedAt: '2026-01-02T00:00:00.000Z' } },
      { type: 'docs.file.updated.v1', data: { ...base, changes: { title: 'u' }, updatedAt: '2026-01-03T00:00:00.000Z' } },
      { type: 'docs.file.downloaded.v1', data: { ...base, downloadedBy: 3, downloadedAt: '2026-01-04T00:00:00.000Z' } },
    ];
    const changedAt = (state: FileState): string | undefined => (state.status === 'active' ? state.file.changedAt : undefined);
    const states = events.map((_, i) => events.slice(0, i + 1).reduce(evolveFile, initialFileState()));
    assert.deepEqual(states.map(changedAt), ['2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-03T00:00:00.000Z', '2026-01-03T00:00:00.000Z']);
    const extracted = evolveFile(states[3] as FileState, { type: 'docs.file.content-extraction-failed.v1', data: { ...base, blobKey: 'k', format: null, reason: 'unsupported_type', detail: '', durationMs: 1, failedAt: '2026-01-05T00:00:00.000Z' } });
    assert.equal(changedAt(extracted), '2026-01-05T00:00:00.000Z');
  });
});

describe('HTTP dates', () => {
  it('reads the three forms of RFC 9110 §5.6.7, all UTC', () => {
    const ms = Date.UTC(1994, 10, 6, 8, 49, 37);
    assert.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'), ms);
    assert.equal(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'), ms);
    assert.equal(parseHttpDate('Sun Nov  6 08:49:37 1994'), ms);
  });

  it('anything else is no date', () => {
    for (const bad of ['', 'yesterday', '2026-03-04T05:06:07Z', '1772600767', 'Sun, 06 Nov 1994 08:49:37 PST', 'Sun, 32 Nov 1994 08:49:37 GMT']) {
      assert.equal(parseHttpDate(bad), undefined, bad);
    }
  });
});

describe('entity tags', () => {
  it('parses lists, weak tags and *', () => {
    assert.deepEqual(parseEntityTags('"a", W/"b" ,"c,d"'), ['"a"', 'W/"b"', '"c,d"']);
    assert.deepEqual(parseEntityTags(' * '), ['*']);
    assert.deepEqual(parseEntityTags('unquoted'), []);
  });

  it('compares weakly and strongly (RFC 9110 §8.8.3.2)', () => {
    assert.ok(weakMatch('W/"1"', '"1"'));
    assert.ok(weakMatch('W/"1"', 'W/"1"'));
    assert.ok(!weakMatch('"1"', '"2"'));
    assert.ok(strongMatch('"1"', '"1"'));
    assert.ok(!strongMatch('W/"1"', '"1"'));
    assert.ok(!strongMatch('W/"1"', 'W/"1"'));
  });
});

describe('notModified', () => {
  it('If-None-Match: a weak match or * → 304; another tag → 200', () => {
    assert.ok(notModified({ ifNoneMatch: v.etag }, v));
    assert.ok(notModified({ ifNoneMatch: `"other", W/${v.etag}` }, v));
    assert.ok(notModified({ ifNoneMatch: '*' }, v));
    assert.ok(!notModified({ ifNoneMatch: '"other"' }, v));
    assert.ok(!notModified({ ifNoneMatch: 'garbage' }, v));
  });

  it('If-Modified-Since: not modified since → 304; modified after, or not a date → 200', () => {
    assert.ok(notModified({ ifModifiedSince: LAST_MODIFIED }, v));
    assert.ok(notModified({ ifModifiedSince: 'Thu, 05 Mar 2026 00:00:00 GMT' }, v));
    assert.ok(!notModified({ ifModifiedSince: 'Wed, 04 Mar 2026 05:06:06 GMT' }, v));
    assert.ok(!notModified({ ifModifiedSince: 'not a date' }, v));
    assert.ok(!notModified({}, v));
  });

  it('If-Modified-Since is ignored when If-None-Match is present', () => {
    assert.ok(!notModified({ ifNoneMatch: '"other"', ifModifiedSince: LAST_MODIFIED }, v));
    assert.ok(notModified({ ifNoneMatch: v.etag, ifModifiedSince: 'Wed, 04 Mar 2026 05:06:06 GMT' }, v));
  });
});

describe('rangeAllowed (If-Range)', () => {
  it('without If-Range: the range', () => assert.ok(rangeAllowed(undefined, v)));

  it('an entity tag: only a strong match', () => {
    assert.ok(rangeAllowed(v.etag, v));
    assert.ok(!rangeAllowed(`W/${v.etag}`, v));
    assert.ok(!rangeAllowed('"other"', v));
  });

  it('a date: only exactly Last-Modified', () => {
    assert.ok(rangeAllowed(LAST_MODIFIED, v));
    assert.ok(!rangeAllowed('Wed, 04 Mar 2026 05:06:08 GMT', v));
    assert.ok(!rangeAllowed('Wed, 04 Mar 2026 05:06:06 GMT', v));
    assert.ok(!rangeAllowed('whenever', v));
  });
});
