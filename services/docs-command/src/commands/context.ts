import { M, streamIds, unauthorized } from '@docshare/contracts';
import type { EventStore } from '@docshare/event-store';
import { envelope, makeCommandHandler, type CommandMeta, type Decider, type Handled } from './command-handler.ts';
import { decideFile, evolveFile, initialFileState, type ActivityBody, type FileCommand, type FileEventBody, type FileState } from './domain/file.ts';
import { decideUser, evolveUser, initialUserState, type UserCommand, type UserEventBody, type UserState } from './domain/user.ts';
import {
  decideCategory, evolveCategory, initialCategoryState, type CategoryCommand, type CategoryEventBody, type CategoryState,
} from './domain/category.ts';
import type { Committed, Recorded } from './recorded.ts';

/*
 * What every use case module shares: one command handler (its cache of folded streams), the
 * clock, and the three entities' deciders; each module takes this and only the ports it uses.
 */

export const fileDecider: Decider<FileCommand, FileState, FileEventBody> = {
  initialState: initialFileState, evolve: evolveFile, decide: decideFile,
};
export const userDecider: Decider<UserCommand, UserState, UserEventBody> = {
  initialState: initialUserState, evolve: evolveUser, decide: decideUser,
};
export const categoryDecider: Decider<CategoryCommand, CategoryState, CategoryEventBody> = {
  initialState: initialCategoryState, evolve: evolveCategory, decide: decideCategory,
};

/** A registered user stays registered: a cached fold that says so needs no read (command-handler load). */
export const registered = (state: UserState): boolean => state.status === 'registered';

export type RegisteredUser = Extract<UserState, { status: 'registered' }>;

export interface CommandContext {
  events: EventStore;
  handler: ReturnType<typeof makeCommandHandler>;
  clock: () => Date;
  /** After an append: afterCommit is told (the outbox relay wakes); the result goes on to the use case. */
  committed: <R extends Handled<unknown> | null>(result: R) => R;
  /** Decides `command` on the file's stream and records what it decided. */
  onFile: (fileId: number, command: FileCommand, meta: CommandMeta) => Promise<Handled<FileState>>;
  /**
   * Records a view or a download outside the file's stream (EventStore.appendUnversioned): no
   * version, so never a conflict and no queue behind the file's other views; afterCommit is told.
   */
  recordActivity: (body: ActivityBody, meta: CommandMeta) => Promise<Recorded>;
  /** The file's current state, folded from its stream. */
  loadFile: (fileId: number) => Promise<FileState>;
  /** The acting user, registered; refused as an invalid token otherwise. */
  author: (userId: number) => Promise<RegisteredUser>;
}

export interface CommandContextDeps {
  events: EventStore;
  /** Told after each recorded append (wakes the outbox relay); never waited on by the answer. */
  afterCommit?: (committed: Committed) => void;
  now?: () => Date;
}

export const makeCommandContext = ({ events, afterCommit, now }: CommandContextDeps): CommandContext => {
  const handler = makeCommandHandler(events);
  const committed = <R extends Handled<unknown> | null>(result: R): R => {
    const last = result?.events.at(-1);
    if (result && result.position !== null && last) afterCommit?.({ position: result.position, subject: last.subject, version: last.streamversion });
    return result;
  };
  return {
    events,
    handler,
    clock: now ?? (() => new Date()),
    committed,
    onFile: async (fileId, command, meta) => {
      const at = command.type === 'UploadFile' ? command.file.uploadedAt : command.now;
      return committed(await handler.handle(fileDecider, streamIds.file(fileId), command, at, meta));
    },
    recordActivity: async (body, meta) => {
      const subject = streamIds.file(body.data.fileId);
      const time = body.type === 'docs.file.viewed.v2' ? body.data.viewedAt : body.data.downloadedAt;
      const { position } = await events.appendUnversioned([envelope(body, subject, 0, time, meta)]);
      afterCommit?.({ position, subject, version: 0 });
      return { position, users: [body.data.ownerId] };
    },
    loadFile: async (fileId) => (await handler.load(fileDecider, streamIds.file(fileId))).state,
    author: async (userId) => {
      const { state } = await handler.load(userDecider, streamIds.user(userId), registered);
      if (state.status !== 'registered') throw unauthorized(M.invalidToken);
      return state;
    },
  };
};
