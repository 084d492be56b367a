import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError, M, type FileUploaded, type UploadStarted } from '@docshare/contracts';
import {
  decideUpload, evolveUpload, initialUploadState, layoutOf, MAX_PARTS, partSizeOf, phaseOf, sessionOf,
  type UploadCommand, type UploadEventBody, type UploadState,
} from '../src/commands/domain/upload.ts';
import { evolveFile, initialFileState, type FileEventBody, type FileState } from '../src/commands/domain/file.ts';

// The resumable upload session's decider (domain/upload.ts): given past events, when a command,
// then the events it records or its refusal; and the pure pieces (phase, part sizes, layout).

const MIB = 1024 * 1024;
const OWNER = 1;
const STRANGER = 2;
const UPLOAD_ID = '0b0f4c36-3f0e-4a8e-9d6b-2f1c0e9a7b11';
const STARTED_AT = '2026-11-20T10:00:00.000Z';
const EXPIRES_AT = '2026-11-21T10:00:00.000Z';
const NOW = '2026-11-20T11:00:00.000Z';

const session: UploadStarted = {
  uploadId: UPLOAD_ID, ownerId: OWNER, fileId: 7, blobKey: `f7-${UPLOAD_ID}`, storeUploadId: 'store-1',
  fileName: 'big.pdf', contentType: 'application/pdf', size: 20 * MIB + 3, partSize: 8 * MIB, partCount: 3,
  title: 'T', description: 'D', tags: ['a'], license: 'CC BY', category: { kind: 'existing', categoryId: 3 }, videoUrl: null,
  startedAt: STARTED_AT, expiresAt: EXPIRES_AT,
};
const started: UploadEventBody = { type: 'docs.upload.started.v1', data: session };
const abortedAs = (reason: 'aborted' | 'expired' | 'size_mismatch'): UploadEventBody => ({
  type: 'docs.upload.aborted.v1', data: { uploadId: UPLOAD_ID, ownerId: OWNER, fileId: 7, reason, abortedAt: NOW },
});
const start: UploadCommand = { type: 'StartUpload', session };
const abort = (actorId = OWNER, reason: 'aborted' | 'expired' = 'aborted'): UploadCommand =>
  ({ type: 'AbortUpload', uploadId: UPLOAD_ID, actorId, reason, now: NOW });

const isError = (kind: DocshareError['kind'], message: string) => (e: unknown): boolean =>
  e instanceof DocshareError && e.kind === kind && e.message === message;

/** given past events, when a command, then events or a refusal. */
const given = (events: UploadEventBody[]) => {
  const state = events.reduce(evolveUpload, initialUploadState());
  return {
    state,
    when: (command: UploadCommand) => ({
      then: (expected: UploadEventBody[]) => assert.deepEqual(decideUpload(command, state), expected),
      thenThrows: (kind: DocshareError['kind'], message: string) => assert.throws(() => decideUpload(command, state), isError(kind, message)),
    }),
  };
};

/** The file's state after it was recorded with `blobKey` (and maybe deleted). */
const fileWith = (blobKey: string, deleted = false): FileState => {
  const uploaded: FileUploaded = {
    fileId: 7, ownerId: OWNER, ownerName: 'Ada', title: 'T', description: 'D', tags: ['a'], categoryId: 3, categoryName: 'C',
    license: 'CC BY', videoUrl: null, originalFileName: 'big.pdf', contentType: 'application/pdf', size: session.size, blobKey, uploadedAt: NOW,
  };
  const events: FileEventBody[] = [{ type: 'docs.file.uploaded.v1', data: uploaded }];
  if (deleted) events.push({ type: 'docs.file.deleted.v1', data: { fileId: 7, ownerId: OWNER, blobKey, deletedAt: NOW } });
  return events.reduce(evolveFile, initialFileState());
};
const NO_FILE = initialFileState();
const stateOf = (events: UploadEventBody[]) => events.reduce(evolveUpload, initialUploadState()) as Exclude<UploadState, { status: 'none' }>;

describe('upload session decider', () => {
  it('starts a session on an empty stream', () => {
    given([]).when(start).then([started]);
    assert.deepEqual(given([started]).state, { status: 'open', session });
  });

  it('a start repeated (the same id and start time) records nothing; another start on the stream is a conflict', () => {
    given([started]).when(start).then([]);
    given([started]).when({ type: 'StartUpload', session: { ...session, startedAt: '2026-11-20T10:00:01.000Z' } })
      .thenThrows('conflict', 'Upload already exists');
  });

  it('aborting an open session records why; aborting an ended one records nothing', () => {
    given([started]).when(abort()).then([abortedAs('aborted')]);
    given([started]).when(abort(OWNER, 'expired')).then([abortedAs('expired')]);
    given([started, abortedAs('aborted')]).when(abort()).then([]);
    given([started, abortedAs('expired')]).when(abort()).then([]);
    assert.deepEqual(given([started, abortedAs('size_mismatch')]).state, { status: 'aborted', session, reason: 'size_mismatch' });
  });

  it('a second aborted event keeps the first reason (events fed twice fold the same)', () => {
    const once = given([started, abortedAs('expired')]).state;
    assert.deepEqual(given([started, abortedAs('expired'), abortedAs('aborted')]).state, once);
    assert.deepEqual(given([started, started, abortedAs('expired'), abortedAs('expired')]).state, once);
  });

  it('another user, or no session at all, finds nothing: 404 Upload not found', () => {
    given([started]).when(abort(STRANGER)).thenThrows('not_found', M.uploadNotFound);
    given([started, abortedAs('aborted')]).when(abort(STRANGER)).thenThrows('not_found', M.uploadNotFound);
    given([]).when(abort()).thenThrows('not_found', M.uploadNotFound);
    assert.throws(() => sessionOf(given([started]).state, STRANGER), isError('not_found', M.uploadNotFound));
    assert.equal(sessionOf(given([started]).state, OWNER), session);
  });
});

describe('upload session phase', () => {
  const before = new Date(Date.parse(EXPIRES_AT) - 1);
  const atExpiry = new Date(EXPIRES_AT);
  const past = new Date(Date.parse(EXPIRES_AT) + 1);

  it('an open session is pending until its expiry (inclusive), expired after it', () => {
    assert.equal(phaseOf(stateOf([started]), NO_FILE, before), 'pending');
    assert.equal(phaseOf(stateOf([started]), NO_FILE, atExpiry), 'pending');
    assert.equal(phaseOf(stateOf([started]), NO_FILE, past), 'expired');
  });

  it('an aborted session is aborted whatever the clock; one aborted because it expired is expired', () => {
    assert.equal(phaseOf(stateOf([started, abortedAs('aborted')]), NO_FILE, before), 'aborted');
    assert.equal(phaseOf(stateOf([started, abortedAs('aborted')]), NO_FILE, past), 'aborted');
    assert.equal(phaseOf(stateOf([started, abortedAs('size_mismatch')]), NO_FILE, before), 'aborted');
    assert.equal(phaseOf(stateOf([started, abortedAs('expired')]), NO_FILE, before), 'expired');
  });

  it('completed (the file records the session\'s blob key) wins over aborted, expired and a later deletion', () => {
    const file = fileWith(session.blobKey);
    assert.equal(phaseOf(stateOf([started]), file, before), 'completed');
    assert.equal(phaseOf(stateOf([started]), file, past), 'completed');
    assert.equal(phaseOf(stateOf([started, abortedAs('aborted')]), file, before), 'completed');
    assert.equal(phaseOf(stateOf([started, abortedAs('expired')]), file, past), 'completed');
    assert.equal(phaseOf(stateOf([started]), fileWith(session.blobKey, true), past), 'completed');
  });

  it('a file with another blob key does not complete the session', () => {
    assert.equal(phaseOf(stateOf([started]), fileWith('f7-other'), before), 'pending');
    assert.equal(phaseOf(stateOf([started]), fileWith('f7-other'), past), 'expired');
  });
});

describe('upload layout', () => {
  it('cuts a file into parts of the preferred size (8 MiB by default), the last one the remainder', () => {
    assert.deepEqual(layoutOf(20 * MIB + 3, 8 * MIB), { partSize: 8 * MIB, partCount: 3 });
    assert.equal(partSizeOf(session, 1), 8 * MIB);
    assert.equal(partSizeOf(session, 2), 8 * MIB);
    assert.equal(partSizeOf(session, 3), 4 * MIB + 3);
    // A size that is a whole number of parts: the last is a whole part.
    const even = { size: 16 * MIB, ...layoutOf(16 * MIB, 8 * MIB) };
    assert.deepEqual(even, { size: 16 * MIB, partSize: 8 * MIB, partCount: 2 });
    assert.equal(partSizeOf(even, 2), 8 * MIB);
    assert.deepEqual(layoutOf(5 * 1024 ** 3, 8 * MIB), { partSize: 8 * MIB, partCount: 640 });
  });

  it('a 1-byte file is one part of one byte', () => {
    const layout = layoutOf(1, 8 * MIB);
    assert.deepEqual(layout, { partSize: 8 * MIB, partCount: 1 });
    assert.equal(partSizeOf({ size: 1, ...layout }, 1), 1);
  });

  it('exactly 10,000 parts keeps the preferred size; more grows the part to whole MiB', () => {
    assert.deepEqual(layoutOf(MAX_PARTS * 8 * MIB, 8 * MIB), { partSize: 8 * MIB, partCount: MAX_PARTS });
    const over = layoutOf(MAX_PARTS * 8 * MIB + 1, 8 * MIB);
    assert.deepEqual(over, { partSize: 9 * MIB, partCount: Math.ceil((MAX_PARTS * 8 * MIB + 1) / (9 * MIB)) });
    assert.deepEqual(layoutOf(100 * 1024 ** 3, 8 * MIB), { partSize: 11 * MIB, partCount: Math.ceil(102_400 / 11) });
    // A larger preferred size than needed stays.
    assert.deepEqual(layoutOf(MAX_PARTS * 8 * MIB + 1, 16 * MIB), { partSize: 16 * MIB, partCount: 5001 });
  });

  it('whatever the size, at most 10,000 parts, every part but the last is whole, and the parts add up to the size', () => {
    for (const size of [1, 5 * MIB - 1, 5 * MIB, 8 * MIB - 1, 8 * MIB, 8 * MIB + 1, 123_456_789, MAX_PARTS * 8 * MIB + 1, 80 * 1024 ** 3 + 7, 5 * 1024 ** 4]) {
      const layout = { size, ...layoutOf(size, 8 * MIB) };
      assert.ok(layout.partCount >= 1 && layout.partCount <= MAX_PARTS, `${size}: ${layout.partCount} parts`);
      assert.equal(layout.partSize % MIB, 0, `${size}: whole MiB`);
      const last = partSizeOf(layout, layout.partCount);
      assert.ok(last >= 1 && last <= layout.partSize, `${size}: last part ${last}`);
      assert.equal(layout.partSize * (layout.partCount - 1) + last, size, `${size}: parts add up`);
      if (layout.partCount > 1) assert.equal(partSizeOf(layout, layout.partCount - 1), layout.partSize);
    }
  });
});
