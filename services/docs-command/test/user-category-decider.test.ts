import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError } from '@docshare/contracts';
import { decideUser, evolveUser, initialUserState } from '../src/commands/domain/user.ts';
import { decideCategory, evolveCategory, initialCategoryState } from '../src/commands/domain/category.ts';

const user = { userId: 1, name: 'Ada', email: 'ada@example.com', registeredAt: '2026-11-20T10:00:00.000Z' };
const category = { categoryId: 2, name: 'Science', description: '', tags: [], createdBy: 1, createdAt: '2026-11-20T10:00:00.000Z' };

describe('user decider', () => {
  it('given no user, when registering, then the user is registered', () =>
    assert.deepEqual(decideUser({ type: 'RegisterUser', user }, initialUserState()), [{ type: 'docs.user.registered.v1', data: user }]));
  it('given a registered user, when registering again, then it is a conflict', () => {
    const state = evolveUser(initialUserState(), { type: 'docs.user.registered.v1', data: user });
    assert.throws(() => decideUser({ type: 'RegisterUser', user }, state), (e: unknown) => e instanceof DocshareError && e.kind === 'conflict');
  });
  it('the registration event carries no password or hash', () => {
    const [event] = decideUser({ type: 'RegisterUser', user }, initialUserState());
    assert.doesNotMatch(JSON.stringify(event), /password|hash/i);
  });
});

describe('category decider', () => {
  it('given no category, when creating, then it is created', () =>
    assert.deepEqual(decideCategory({ type: 'CreateCategory', category }, initialCategoryState()), [{ type: 'docs.category.created.v1', data: category }]));
  it('given a category, when creating it again, then it is a conflict', () => {
    const state = evolveCategory(initialCategoryState(), { type: 'docs.category.created.v1', data: category });
    assert.throws(() => decideCategory({ type: 'CreateCategory', category }, state), (e: unknown) => e instanceof DocshareError && e.kind === 'conflict');
  });
});
