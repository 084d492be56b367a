import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DocshareError, M } from '@docshare/contracts';
import { makeUrlSigner } from '@docshare/auth';
import {
  decideUser, evolveUser, EXPORTS_KEPT, initialUserState, type UserCommand, type UserEventBody, type UserState,
} from '../src/commands/domain/user.ts';
import { makeErasureLinks } from '../src/commands/user-links.ts';

// Leaving (issue 24, domain/user.ts): given the user's past events, when an erasure or export
// command, then the events it records or its refusal.

const NOW = '2026-11-29T10:00:00.000Z';
const registered: UserEventBody = {
  type: 'docs.user.registered.v1', data: { userId: 7, name: 'Ada', email: 'ada@example.com', registeredAt: '2026-11-20T10:00:00.000Z' },
};
const requested = (erasureId = 'e-1'): UserEventBody => ({ type: 'docs.user.erasure_requested.v1', data: { userId: 7, erasureId, requestedAt: NOW } });
const erased: UserEventBody = {
  type: 'docs.user.erased.v1', data: { userId: 7, erasureId: 'e-1', filesDeleted: 3, commentsRedacted: 2, erasedAt: NOW },
};
const exported = (exportId: string): UserEventBody => ({ type: 'docs.user.export_requested.v1', data: { userId: 7, exportId, requestedAt: NOW } });
const given = (events: UserEventBody[]): UserState => events.reduce(evolveUser, initialUserState());
const isError = (kind: DocshareError['kind'], message?: string) => (e: unknown): boolean =>
  e instanceof DocshareError && e.kind === kind && (message === undefined || e.message === message);

const requestErasure: UserCommand = { type: 'RequestErasure', userId: 7, erasureId: 'e-2', now: NOW };
const complete = (erasureId = 'e-1'): UserCommand => ({ type: 'CompleteErasure', userId: 7, erasureId, filesDeleted: 3, commentsRedacted: 2, now: NOW });

describe('user decider: erasure', () => {
  it('given a registered user, when an erasure is requested, then it is recorded (pending)', () => {
    assert.deepEqual(decideUser(requestErasure, given([registered])), [
      { type: 'docs.user.erasure_requested.v1', data: { userId: 7, erasureId: 'e-2', requestedAt: NOW } },
    ]);
    const state = given([registered, requested()]);
    assert.equal(state.status, 'erasing');
    assert.equal(state.status === 'erasing' && state.email, 'ada@example.com');
  });

  it('given an erasure pending or done, when requested again, then nothing is recorded (the first one stands)', () => {
    assert.deepEqual(decideUser(requestErasure, given([registered, requested()])), []);
    assert.deepEqual(decideUser(requestErasure, given([registered, requested(), erased])), []);
  });

  it('given no user, when an erasure or an export is requested, then it is an invalid token', () => {
    assert.throws(() => decideUser(requestErasure, initialUserState()), isError('unauthorized', M.invalidToken));
    assert.throws(() => decideUser({ type: 'RequestExport', userId: 7, exportId: 'x', now: NOW }, initialUserState()), isError('unauthorized', M.invalidToken));
  });

  it('given a pending erasure, when it completes, then erased is recorded once, with its counts', () => {
    assert.deepEqual(decideUser(complete(), given([registered, requested()])), [erased]);
    assert.deepEqual(given([registered, requested(), erased]), {
      status: 'erased', userId: 7, erasureId: 'e-1', filesDeleted: 3, commentsRedacted: 2, erasedAt: NOW,
    });
    assert.deepEqual(decideUser(complete(), given([registered, requested(), erased])), []);
  });

  it('given no erasure, or another one, when one completes, then it is a conflict', () => {
    assert.throws(() => decideUser(complete(), given([registered])), isError('conflict'));
    assert.throws(() => decideUser(complete('other'), given([registered, requested()])), isError('conflict'));
  });

  it('given an erasure pending, when an export is requested, then it is an invalid token (the account stopped)', () => {
    assert.throws(() => decideUser({ type: 'RequestExport', userId: 7, exportId: 'x', now: NOW }, given([registered, requested()])),
      isError('unauthorized', M.invalidToken));
  });

  it('the exports a user can ask about stay bounded (the newest EXPORTS_KEPT), and an erasure keeps them to remove', () => {
    const many = Array.from({ length: EXPORTS_KEPT + 5 }, (_, i) => exported(`x-${i}`));
    const state = given([registered, ...many]);
    assert.equal(state.status === 'registered' && state.exports.length, EXPORTS_KEPT);
    assert.equal(state.status === 'registered' && state.exports[0]!.exportId, 'x-5');
    const erasing = given([registered, exported('x-a'), requested()]);
    assert.deepEqual(erasing.status === 'erasing' && erasing.exports.map((e) => e.exportId), ['x-a']);
  });
});

describe('erasure status links', () => {
  const at = new Date('2026-11-29T10:00:00Z');
  const links = makeErasureLinks({ signer: makeUrlSigner('x'.repeat(32)), publicBaseUrl: 'https://docs.example', clock: () => at });
  const erasureId = '5b0f8a52-7c2e-4a4e-9f65-0a5a1f6a3c11';
  const queryOf = (url: string) => Object.fromEntries(new URL(url).searchParams);

  it('a link docshare signed names its user; altered, for another erasure, or expired, it names nobody', () => {
    const url = links.statusUrl(42, erasureId);
    assert.ok(url.startsWith(`https://docs.example/api/V1/users/api-erase/status/${erasureId}?user=42&expires=`));
    assert.equal(links.verify(erasureId, queryOf(url)), 42);
    assert.equal(links.verify(erasureId, { ...queryOf(url), user: '43' }), null);
    assert.equal(links.verify('6b0f8a52-7c2e-4a4e-9f65-0a5a1f6a3c11', queryOf(url)), null);
    const later = makeErasureLinks({ signer: makeUrlSigner('x'.repeat(32)), publicBaseUrl: '', clock: () => new Date(at.getTime() + 8 * 86_400_000) });
    assert.equal(later.verify(erasureId, queryOf(url)), null);
  });
});
