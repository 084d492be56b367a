import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError, M, type FileUploaded } from '@docshare/contracts';
import {
  decideDownload, decideFile, decideView, evolveFile, initialFileState,
  type ActivityBody, type FileCommand, type FileEventBody, type FileState,
} from '../src/commands/domain/file.ts';

const NOW = '2026-11-20T10:00:00.000Z';
const OWNER = 1;
const STRANGER = 2;

const uploaded: FileUploaded = {
  fileId: 7, ownerId: OWNER, ownerName: 'Ada', title: 'Notes', description: 'Lecture notes', tags: ['math'],
  categoryId: 3, categoryName: 'Science', license: 'CC BY', videoUrl: null, originalFileName: 'notes.pdf',
  contentType: 'application/pdf', size: 10, blobKey: 'f7-x', uploadedAt: NOW,
};
const upload: FileEventBody = { type: 'docs.file.uploaded.v1', data: uploaded };
const update = (changes: Record<string, unknown>): FileEventBody =>
  ({ type: 'docs.file.updated.v1', data: { fileId: 7, ownerId: OWNER, changes, updatedAt: NOW } });
const deleted: FileEventBody = { type: 'docs.file.deleted.v1', data: { fileId: 7, ownerId: OWNER, blobKey: 'f7-x', deletedAt: NOW } };

/** given past events, when a command, then events or a refusal. */
const given = (events: FileEventBody[]) => {
  const state: FileState = events.reduce(evolveFile, initialFileState());
  return {
    /** A view or a download (recorded outside the stream): the event, or a refusal. */
    whenActivity: (decide: (state: FileState) => { event: ActivityBody }) => ({
      then: (expected: ActivityBody) => assert.deepEqual(decide(state).event, expected),
      thenThrows: (kind: DocshareError['kind'], message: string) =>
        assert.throws(() => decide(state), (e: unknown) => e instanceof DocshareError && e.kind === kind && e.message === message),
    }),
    when: (command: FileCommand) => ({
      then: (expected: FileEventBody[]) => assert.deepEqual(decideFile(command, state), expected),
      thenThrows: (kind: DocshareError['kind'], message: string) =>
        assert.throws(() => decideFile(command, state), (e: unknown) =>
          e instanceof DocshareError && e.kind === kind && e.message === message),
    }),
  };
};

const del = (actorId: number): FileCommand => ({ type: 'DeleteFile', fileId: 7, actorId, now: NOW });
const download = (actorId: number) => (state: FileState) => decideDownload(state, actorId, NOW);
const view = (state: FileState) => decideView(state, 'u:2', NOW);
const purchase = (actorId: number): FileCommand => ({ type: 'PurchaseFile', fileId: 7, actorId, saleId: 9, now: NOW });
const comment = (actorId: number): FileCommand => ({ type: 'PostComment', fileId: 7, actorId, commentId: 4, comment: 'Nice', now: NOW });
const change = (actorId: number, changes: Record<string, unknown>): FileCommand =>
  ({ type: 'UpdateFile', fileId: 7, actorId, changes, now: NOW });

describe('file decider', () => {
  describe('upload', () => {
    it('records a new file', () => given([]).when({ type: 'UploadFile', file: uploaded }).then([upload]));
    it('records nothing for the same bytes again (a resumable completion repeated or raced)', () =>
      given([upload]).when({ type: 'UploadFile', file: uploaded }).then([]));
    it('refuses a second upload under the same id with other bytes', () =>
      given([upload]).when({ type: 'UploadFile', file: { ...uploaded, blobKey: `${uploaded.blobKey}-other` } }).thenThrows('conflict', 'File already exists'));
  });

  describe('delete', () => {
    it('lets the owner delete', () => given([upload]).when(del(OWNER)).then([deleted]));
    it('forbids anyone else', () => given([upload]).when(del(STRANGER)).thenThrows('forbidden', M.notOwner));
    it('does not find a missing file', () => given([]).when(del(OWNER)).thenThrows('not_found', M.fileNotFound));
    it('does not find a deleted file', () => given([upload, deleted]).when(del(OWNER)).thenThrows('not_found', M.fileNotFound));
    it('hides a disabled file from others', () =>
      given([upload, update({ enabled: false })]).when(del(STRANGER)).thenThrows('not_found', M.fileNotFound));
  });

  describe('download', () => {
    it('counts a download of an enabled file not for sale', () => given([upload]).whenActivity(download(STRANGER)).then({
      type: 'docs.file.downloaded.v2', data: { fileId: 7, ownerId: OWNER, downloadedBy: STRANGER, downloadedAt: NOW },
    }));
    it('refuses a file for sale', () =>
      given([upload, update({ forSale: true })]).whenActivity(download(STRANGER)).thenThrows('forbidden', M.notDownloadable));
    it('refuses a disabled file to its owner too', () =>
      given([upload, update({ enabled: false })]).whenActivity(download(OWNER)).thenThrows('forbidden', M.notDownloadable));
    it('refuses a disabled file to others with the same message (spec §7)', () =>
      given([upload, update({ enabled: false })]).whenActivity(download(STRANGER)).thenThrows('forbidden', M.notDownloadable));
    it('does not find a deleted file', () => given([upload, deleted]).whenActivity(download(OWNER)).thenThrows('not_found', M.fileNotFound));
    it('downloads again once the file is off sale', () =>
      given([upload, update({ forSale: true }), update({ forSale: false })]).whenActivity(download(STRANGER)).then({
        type: 'docs.file.downloaded.v2', data: { fileId: 7, ownerId: OWNER, downloadedBy: STRANGER, downloadedAt: NOW },
      }));
  });

  describe('view', () => {
    it('counts a view by its viewer', () => given([upload]).whenActivity(view).then(
      { type: 'docs.file.viewed.v2', data: { fileId: 7, ownerId: OWNER, viewer: 'u:2', viewedAt: NOW } },
    ));
    it('has no page for a disabled file, its owner included', () =>
      given([upload, update({ enabled: false })]).whenActivity((state) => decideView(state, 'u:1', NOW)).thenThrows('not_found', M.fileNotFound));
    it('leaves the file\'s state as it was: a view is no event of its stream', () => {
      const before = [upload].reduce(evolveFile, initialFileState());
      assert.deepEqual(decideView(before, 'a:x', NOW).file, before.status === 'active' ? before.file : null);
    });
    it('has no page for a disabled file', () => given([upload, update({ enabled: false })]).whenActivity(view).thenThrows('not_found', M.fileNotFound));
    it('has no page for a deleted file', () => given([upload, deleted]).whenActivity(view).thenThrows('not_found', M.fileNotFound));
  });

  describe('purchase', () => {
    it('records a sale at the current price', () => given([upload, update({ forSale: true, price: 4.5 })]).when(purchase(STRANGER)).then([{
      type: 'docs.file.purchased.v1',
      data: { fileId: 7, ownerId: OWNER, saleId: 9, buyerId: STRANGER, price: 4.5, purchasedAt: NOW },
    }]));
    it('refuses a file not for sale', () => given([upload]).when(purchase(STRANGER)).thenThrows('conflict', M.notForSale));
    it('does not find a deleted file', () => given([upload, deleted]).when(purchase(STRANGER)).thenThrows('not_found', M.fileNotFound));
  });

  describe('comment', () => {
    it('records the comment with the file title and owner', () => given([upload]).when(comment(STRANGER)).then([{
      type: 'docs.comment.posted.v1',
      data: { commentId: 4, fileId: 7, fileOwnerId: OWNER, fileTitle: 'Notes', authorId: STRANGER, comment: 'Nice', postedAt: NOW },
    }]));
    it('uses the current title', () => {
      const state = [upload, update({ title: 'New title' })].reduce(evolveFile, initialFileState());
      const [event] = decideFile(comment(STRANGER), state);
      assert.equal(event?.type === 'docs.comment.posted.v1' && event.data.fileTitle, 'New title');
    });
    it('does not find a missing file', () => given([]).when(comment(STRANGER)).thenThrows('not_found', M.fileNotFound));
    it('lets the owner comment on a disabled file', () =>
      assert.equal(decideFile(comment(OWNER), [upload, update({ enabled: false })].reduce(evolveFile, initialFileState())).length, 1));
  });

  describe('update', () => {
    it('records only what changes', () => given([upload]).when(change(OWNER, { title: 'Notes', forSale: true })).then([
      update({ forSale: true }),
    ]));
    it('records nothing when nothing changes', () => given([upload]).when(change(OWNER, { enabled: true })).then([]));
    it('forbids anyone else', () => given([upload]).when(change(STRANGER, { title: 'x' })).thenThrows('forbidden', M.notOwner));
    it('does not find a deleted file', () => given([upload, deleted]).when(change(OWNER, { title: 'x' })).thenThrows('not_found', M.fileNotFound));
  });

  describe('evolve', () => {
    it('keeps a deleted file deleted whatever follows', () => {
      const state = [upload, deleted, update({ title: 'x' })].reduce(evolveFile, initialFileState());
      assert.equal(state.status, 'deleted');
      assert.equal(state.status === 'deleted' && state.file.title, 'Notes');
    });
  });

  describe('text extraction', () => {
    const text = 'Quarterly figures\nwith more lines';
    const extracted: FileEventBody = {
      type: 'docs.file.content-extracted.v1',
      data: {
        fileId: 7, ownerId: OWNER, blobKey: 'f7-x', format: 'pdf', extractor: 'pdfjs-dist@6', characters: text.length,
        truncated: false, language: null, text, durationMs: 12, extractedAt: NOW,
      },
    };
    const failed: FileEventBody = {
      type: 'docs.file.content-extraction-failed.v1',
      data: { fileId: 7, ownerId: OWNER, blobKey: 'f7-x', format: 'pdf', reason: 'encrypted', detail: 'password required', durationMs: 3, failedAt: NOW },
    };
    const record = (report: Extract<FileCommand, { type: 'RecordExtraction' }>['report'], blobKey = 'f7-x'): FileCommand =>
      ({ type: 'RecordExtraction', fileId: 7, blobKey, report, now: NOW });
    const ok = record({ ok: true, format: 'pdf', extractor: 'pdfjs-dist@6', text, truncated: false, language: null, durationMs: 12 });
    const refused = record({ ok: false, format: 'pdf', reason: 'encrypted', detail: 'password required', durationMs: 3 });

    it('records the text, with its character count', () => given([upload]).when(ok).then([extracted]));
    it('records a failure with its reason', () => given([upload]).when(refused).then([failed]));
    it('records once: a repeated report records nothing', () => {
      given([upload, extracted]).when(ok).then([]);
      given([upload, failed]).when(ok).then([]);
    });
    it('records nothing for a deleted file, or for bytes that are not the file\'s', () => {
      given([upload, deleted]).when(ok).then([]);
      given([upload]).when(record({ ok: true, format: 'pdf', extractor: 'x', text, truncated: false, language: null, durationMs: 1 }, 'f7-other')).then([]);
    });
    it('does not find a file never uploaded', () => given([]).when(ok).thenThrows('not_found', M.fileNotFound));
    it('keeps an excerpt and the status in the file\'s state; other facts stay', () => {
      const state = [upload, update({ title: 'Changed' }), extracted].reduce(evolveFile, initialFileState());
      assert.equal(state.status, 'active');
      assert.equal(state.status === 'active' && state.file.title, 'Changed');
      assert.deepEqual(state.status === 'active' && state.file.extraction, {
        status: 'extracted', format: 'pdf', extractor: 'pdfjs-dist@6', characters: text.length, truncated: false, language: null, excerpt: text,
      });
      const failedState = [upload, failed].reduce(evolveFile, initialFileState());
      assert.deepEqual(failedState.status === 'active' && failedState.file.extraction, {
        status: 'failed', format: 'pdf', reason: 'encrypted', detail: 'password required',
      });
    });
    it('changes nothing a download, view or comment decides', () => {
      given([upload, extracted]).whenActivity(download(STRANGER)).then({
        type: 'docs.file.downloaded.v2', data: { fileId: 7, ownerId: OWNER, downloadedBy: STRANGER, downloadedAt: NOW },
      });
    });
  });
});
