import { conflict, type CategoryCreated } from '@docshare/contracts';

export type CategoryEventBody = { type: 'docs.category.created.v1'; data: CategoryCreated };
export type CategoryState = { status: 'none' } | { status: 'created'; category: CategoryCreated };

export const initialCategoryState = (): CategoryState => ({ status: 'none' });

/** Folds one event into the category's state. */
export const evolveCategory = (_state: CategoryState, event: CategoryEventBody): CategoryState =>
  ({ status: 'created', category: event.data });

export type CategoryCommand = { type: 'CreateCategory'; category: CategoryCreated };

/** A category is created once. Pure. */
export const decideCategory = (command: CategoryCommand, state: CategoryState): CategoryEventBody[] => {
  if (state.status !== 'none') throw conflict('Category already exists');
  return [{ type: 'docs.category.created.v1', data: command.category }];
};
