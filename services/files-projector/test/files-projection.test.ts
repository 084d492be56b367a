import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { makeMemoryReadStore } from '@docshare/read-store';
import { applyProjection } from '@docshare/projection';
import { deliveredTwice, makeHistory } from '@docshare/projection/testing';
import type { StoredEvent } from '@docshare/contracts';
import { filesProjection } from '../src/projection.ts';
import { makeFilesQueries } from '../src/queries.ts';

const BASE = 'http://docs.example';
const page = { page: 1, perPage: 20 };

const history = () => {
  const h = makeHistory();
  h.user(1, 'Ada'); h.user(2, 'Bob');
  h.category(1, 'General');
  h.upload(10, 1, 'first'); h.upload(11, 1, 'second'); h.upload(12, 1, 'third'); h.upload(13, 2, 'bobs');
  h.update(11, 1, { enabled: false });
  h.update(12, 1, { title: 'third, renamed' });
  h.comment(1, 10, 1, 2, 'on first', 'first'); h.comment(2, 12, 1, 2, 'on third', 'third'); h.comment(3, 13, 2, 1, 'on bobs', 'bobs');
  h.comment(4, 10, 1, 2, 'again', 'first');
  h.remove(10, 1);
  return h.records;
};

const project = async (records: readonly StoredEvent[]) => {
  const store = makeMemoryReadStore();
  for (const record of records) await applyProjection(store, filesProjection, record);
  return makeFilesQueries(store, BASE);
};

describe('files projection', () => {
  it('lists the owner all of their files but deleted ones, newest first', async () => {
    const q = await project(history());
    const list = await q.filesOf(1, 1, page);
    assert.deepEqual(list.user, { id: 1, name: 'Ada' });
    assert.deepEqual(list.files.map((f) => f.file_id), [12, 11]);
    assert.deepEqual(list.files[0], {
      file_id: 12, upload_date: '2026-11-20', title: 'third, renamed', description: 'About third', file_url: `${BASE}/docs/12`,
    });
    assert.equal(list.total, 2);
  });

  it('shows other users only enabled files', async () => {
    const q = await project(history());
    assert.deepEqual((await q.filesOf(1, 2, page)).files.map((f) => f.file_id), [12]);
  });

  it('answers User not found for an unknown user', async () => {
    const q = await project(history());
    await assert.rejects(q.filesOf(99, 1, page), /User not found/);
    await assert.rejects(q.commentsReceivedBy(99), /User not found/);
  });

  it('lists comments received on live files, newest first, with the current title', async () => {
    const q = await project(history());
    assert.deepEqual(await q.commentsReceivedBy(1), [
      { comment_id: 2, submission_date: '2026-11-20', title: 'third, renamed', comment: 'on third', link: `${BASE}/docs/12` },
    ]);
    assert.deepEqual((await q.commentsReceivedBy(2)).map((c) => c.comment_id), [3]);
  });

  it('lists categories', async () => {
    const q = await project(history());
    assert.deepEqual(await q.categories(), [{ id: 1, name: 'General', description: 'General things', tags: 'a,b' }]);
  });

  it('ends in the same state when every event is delivered twice and the history replayed', async () => {
    const once = await project(history());
    const twice = await project(deliveredTwice(history()));
    assert.deepEqual(await twice.filesOf(1, 1, page), await once.filesOf(1, 1, page));
    assert.deepEqual(await twice.filesOf(2, 1, page), await once.filesOf(2, 1, page));
    assert.deepEqual(await twice.commentsReceivedBy(1), await once.commentsReceivedBy(1));
    assert.deepEqual(await twice.categories(), await once.categories());
  });
});
