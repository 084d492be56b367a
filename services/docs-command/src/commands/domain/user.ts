import { conflict, M, unauthorized, type UserErased, type UserErasureRequested, type UserExportRequested, type UserRegistered } from '@docshare/contracts';

export type UserEventBody =
  | { type: 'docs.user.registered.v1'; data: UserRegistered }
  | { type: 'docs.user.erasure_requested.v1'; data: UserErasureRequested }
  | { type: 'docs.user.erased.v1'; data: UserErased }
  | { type: 'docs.user.export_requested.v1'; data: UserExportRequested };

/**
 * The exports a user can still ask about: the newest EXPORTS_KEPT. At most one request per
 * EXPORT_INTERVAL_MS (15 min) is recorded, so 7 days of them (672) all fit: the state stays bounded.
 */
export const EXPORTS_KEPT = 1_000;
export interface ExportRequest { exportId: string; requestedAt: string }

/**
 * A user's account: registered, then (issue 24) erasing from the request on (the account no
 * longer works: login and tokens refused) until the accounts process manager records it erased.
 */
export type UserState =
  | { status: 'none' }
  | { status: 'registered'; userId: number; name: string; email: string; exports: readonly ExportRequest[] }
  | { status: 'erasing'; userId: number; email: string; exports: readonly ExportRequest[]; erasureId: string; requestedAt: string }
  | { status: 'erased'; userId: number; erasureId: string; filesDeleted: number; commentsRedacted: number; erasedAt: string };

export const initialUserState = (): UserState => ({ status: 'none' });

/** Folds one event into the user's state. */
export const evolveUser = (state: UserState, event: UserEventBody): UserState => {
  switch (event.type) {
    case 'docs.user.registered.v1':
      return { status: 'registered', userId: event.data.userId, name: event.data.name, email: event.data.email, exports: [] };
    case 'docs.user.export_requested.v1':
      return state.status !== 'registered' ? state
        : { ...state, exports: [...state.exports, { exportId: event.data.exportId, requestedAt: event.data.requestedAt }].slice(-EXPORTS_KEPT) };
    case 'docs.user.erasure_requested.v1':
      return {
        status: 'erasing', userId: event.data.userId, email: state.status === 'registered' ? state.email : '',
        exports: state.status === 'registered' ? state.exports : [],
        erasureId: event.data.erasureId, requestedAt: event.data.requestedAt,
      };
    case 'docs.user.erased.v1':
      return {
        status: 'erased', userId: event.data.userId, erasureId: event.data.erasureId,
        filesDeleted: event.data.filesDeleted, commentsRedacted: event.data.commentsRedacted, erasedAt: event.data.erasedAt,
      };
  }
};

export type UserCommand =
  | { type: 'RegisterUser'; user: UserRegistered }
  | { type: 'RequestErasure'; userId: number; erasureId: string; now: string }
  | { type: 'CompleteErasure'; userId: number; erasureId: string; filesDeleted: number; commentsRedacted: number; now: string }
  | { type: 'RequestExport'; userId: number; exportId: string; now: string };

/**
 * Pure. Registration records the user once. An erasure is requested once (asked again, nothing is
 * recorded: the use case answers the first request's id) and completed once; only a registered
 * user may ask for either or for an export, anyone else is an invalid token.
 */
export const decideUser = (command: UserCommand, state: UserState): UserEventBody[] => {
  switch (command.type) {
    case 'RegisterUser':
      if (state.status !== 'none') throw conflict('User already registered');
      return [{ type: 'docs.user.registered.v1', data: command.user }];
    case 'RequestErasure':
      if (state.status === 'erasing' || state.status === 'erased') return [];
      if (state.status !== 'registered') throw unauthorized(M.invalidToken);
      return [{ type: 'docs.user.erasure_requested.v1', data: { userId: command.userId, erasureId: command.erasureId, requestedAt: command.now } }];
    case 'CompleteErasure':
      if (state.status === 'erased') return [];
      if (state.status !== 'erasing' || state.erasureId !== command.erasureId) throw conflict('No such erasure in progress');
      return [{
        type: 'docs.user.erased.v1',
        data: {
          userId: command.userId, erasureId: command.erasureId, filesDeleted: command.filesDeleted,
          commentsRedacted: command.commentsRedacted, erasedAt: command.now,
        },
      }];
    case 'RequestExport':
      if (state.status !== 'registered') throw unauthorized(M.invalidToken);
      return [{ type: 'docs.user.export_requested.v1', data: { userId: command.userId, exportId: command.exportId, requestedAt: command.now } }];
  }
};
