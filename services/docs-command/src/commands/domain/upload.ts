import { conflict, M, notFound, type UploadAbortReason, type UploadAborted, type UploadStarted } from '@docshare/contracts';
import type { FileState } from './file.ts';

/*
 * A resumable upload's session (POST /api/V1/docs/api-uploads), its own stream `upload-<id>`: it
 * starts and may be aborted. Completion is not an event of this stream: it is the file's
 * `docs.file.uploaded.v1` with the session's blob key, in the file's stream (the file id is taken
 * when the session starts), so a session is completed exactly when its file is recorded, and a
 * completion repeated or raced finds it so. Expiry is the clock passing `expiresAt`: no event is
 * needed for it to hold (the sweeper records `aborted` with reason `expired` when it cleans up).
 */

export type UploadEventBody =
  | { type: 'docs.upload.started.v1'; data: UploadStarted }
  | { type: 'docs.upload.aborted.v1'; data: UploadAborted };

export type UploadState =
  | { status: 'none' }
  | { status: 'open'; session: UploadStarted }
  | { status: 'aborted'; session: UploadStarted; reason: UploadAbortReason };

export type UploadCommand =
  | { type: 'StartUpload'; session: UploadStarted }
  | { type: 'AbortUpload'; uploadId: string; actorId: number; reason: UploadAbortReason; now: string };

export const initialUploadState = (): UploadState => ({ status: 'none' });

export const evolveUpload = (state: UploadState, event: UploadEventBody): UploadState => {
  switch (event.type) {
    case 'docs.upload.started.v1':
      return { status: 'open', session: event.data };
    case 'docs.upload.aborted.v1':
      return state.status === 'open' ? { status: 'aborted', session: state.session, reason: event.data.reason } : state;
  }
};

/** The session as its owner may see it: anyone else finds nothing (no hint that it exists). */
export const sessionOf = (state: UploadState, actorId: number): UploadStarted => {
  if (state.status === 'none' || state.session.ownerId !== actorId) throw notFound(M.uploadNotFound);
  return state.session;
};

export const decideUpload = (command: UploadCommand, state: UploadState): UploadEventBody[] => {
  switch (command.type) {
    case 'StartUpload':
      if (state.status === 'none') return [{ type: 'docs.upload.started.v1', data: command.session }];
      if (state.session.uploadId === command.session.uploadId && state.session.startedAt === command.session.startedAt) return [];
      throw conflict('Upload already exists');
    case 'AbortUpload': {
      const session = sessionOf(state, command.actorId);
      if (state.status === 'aborted') return [];
      return [{
        type: 'docs.upload.aborted.v1',
        data: { uploadId: session.uploadId, ownerId: session.ownerId, fileId: session.fileId, reason: command.reason, abortedAt: command.now },
      }];
    }
  }
};

/** Where a session stands, as GET api-uploads/{id} says it. */
export type UploadPhase = 'pending' | 'completed' | 'aborted' | 'expired';

/** Whether the file's stream records this session's bytes: the session is completed. */
export const completedBy = (file: FileState, session: UploadStarted): boolean =>
  file.status !== 'none' && file.file.blobKey === session.blobKey;

/**
 * The session's phase from its stream, its file's stream and the clock. A completed session stays
 * completed whatever the clock says; an open one past `expiresAt` is expired.
 */
export const phaseOf = (state: Exclude<UploadState, { status: 'none' }>, file: FileState, now: Date): UploadPhase => {
  if (completedBy(file, state.session)) return 'completed';
  if (state.status === 'aborted') return state.reason === 'expired' ? 'expired' : 'aborted';
  return now.getTime() > Date.parse(state.session.expiresAt) ? 'expired' : 'pending';
};

/** The bytes part `partNumber` (1-based) must carry: `partSize`, except the last (the remainder). */
export const partSizeOf = (session: Pick<UploadStarted, 'size' | 'partSize' | 'partCount'>, partNumber: number): number =>
  partNumber < session.partCount ? session.partSize : session.size - session.partSize * (session.partCount - 1);

/** S3's most parts per upload. */
export const MAX_PARTS = 10_000;
const MIB = 1024 * 1024;

/** The layout of a file of `size` bytes: `preferred` bytes a part, or more (whole MiB) when that would need over 10,000 parts. */
export const layoutOf = (size: number, preferred: number): { partSize: number; partCount: number } => {
  const least = Math.ceil(size / MAX_PARTS / MIB) * MIB;
  const partSize = Math.max(preferred, least);
  return { partSize, partCount: Math.max(1, Math.ceil(size / partSize)) };
};
