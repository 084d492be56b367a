import { conflict, type UserRegistered } from '@docshare/contracts';

export type UserEventBody = { type: 'docs.user.registered.v1'; data: UserRegistered };
export type UserState = { status: 'none' } | { status: 'registered'; userId: number; name: string };

export const initialUserState = (): UserState => ({ status: 'none' });

/** Folds one event into the user's state. */
export const evolveUser = (_state: UserState, event: UserEventBody): UserState =>
  ({ status: 'registered', userId: event.data.userId, name: event.data.name });

export type UserCommand = { type: 'RegisterUser'; user: UserRegistered };

/** Registration records the user once; registering the same id again is a conflict. Pure. */
export const decideUser = (command: UserCommand, state: UserState): UserEventBody[] => {
  if (state.status !== 'none') throw conflict('User already registered');
  return [{ type: 'docs.user.registered.v1', data: command.user }];
};
