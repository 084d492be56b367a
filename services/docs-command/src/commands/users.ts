import { randomUUID } from 'node:crypto';
import { conflict, DocshareError, forbidden, M, streamIds, unauthorized } from '@docshare/contracts';
import type { ClaimStore } from '@docshare/claim-store';
import { hashPassword, verifyDecoy, verifyPassword, type Tokens } from '@docshare/auth';
import type { PersonalData } from '@docshare/personal-data';
import type { CommandMeta, Handled } from './command-handler.ts';
import { registered, userDecider, type CommandContext } from './context.ts';
import { recordedBy } from './recorded.ts';
import type { UserState } from './domain/user.ts';

/** What registering asks for (parsed by http/validation.ts). */
export interface Registration { name: string; email: string; password: string }

/**
 * What the command side keeps about an account, outside the event log (never in an event): a
 * claim keyed by the e-mail's blind index (PersonalData.emailIndex), so neither the address nor
 * (sealed under the user's key) the name is in clear. Claims made before issue 24 are keyed by
 * the address itself and hold the name in clear (`npm run migrate -- encrypt-personal-data`
 * re-keys them); both are read.
 */
interface Account { userId: number; name: string; passwordHash: string; sealed?: true }

export interface UserCommandsDeps {
  ctx: CommandContext;
  claims: ClaimStore;
  tokens: Tokens;
  personalData: PersonalData;
  passwordCost?: number;
}

const ACCOUNT = 'account';
const NAME_AAD = 'account-name';

/** Users: register, log in, a fresh token, and (issue 24) ask to be erased. The account (e-mail, password hash) is a claim; the user a stream. */
export const makeUserCommands = ({ ctx, claims, tokens, personalData, passwordCost }: UserCommandsDeps) => {
  const { events, handler } = ctx;

  /** The account of an e-mail and the key it is claimed under (the blind index, or the address for a claim made before it). */
  const accountOf = async (email: string): Promise<{ key: string; account: Account } | null> => {
    const key = await personalData.emailIndex(email);
    const account = await claims.get<Account>(ACCOUNT, key);
    if (account) return { key, account };
    const legacy = await claims.get<Account>(ACCOUNT, email);
    return legacy ? { key: email, account: legacy } : null;
  };

  const nameOf = async (account: Account): Promise<string> =>
    (account.sealed ? personalData.openValue(account.userId, account.name, NAME_AAD) : account.name);

  const loadUser = async (userId: number): Promise<UserState> =>
    (await handler.load(userDecider, streamIds.user(userId), registered)).state;

  /** Makes sure the user's stream exists (repairs a registration cut off between its two writes). */
  const ensureUser = async (account: Account, email: string, meta: CommandMeta): Promise<Handled<unknown> | null> => {
    const state = await loadUser(account.userId);
    if (state.status !== 'none') return null;
    try {
      const now = ctx.clock().toISOString();
      return ctx.committed(await handler.handle(userDecider, streamIds.user(account.userId), {
        type: 'RegisterUser', user: { userId: account.userId, name: await nameOf(account), email, registeredAt: now },
      }, now, meta));
    } catch (error) {
      // Registered meanwhile (the only conflict the user decider refuses with).
      if (error instanceof DocshareError && error.kind === 'conflict') return null;
      throw error;
    }
  };

  const register = async (input: Registration, meta: CommandMeta) => {
    if (await accountOf(input.email)) throw conflict(M.emailTaken);
    const userId = await events.nextId('user');
    const account: Account = {
      userId, name: await personalData.sealValue(userId, input.name, NAME_AAD), passwordHash: await hashPassword(input.password, passwordCost), sealed: true,
    };
    const claimed = await claims.claim(ACCOUNT, await personalData.emailIndex(input.email), account);
    if (!claimed.created) throw conflict(M.emailTaken);
    const recorded = recordedBy(await ensureUser(account, input.email, meta));
    return { userId, token: tokens.issue(userId), recorded };
  };

  const login = async (email: string, password: string, meta: CommandMeta) => {
    const found = await accountOf(email);
    if (!found) {
      await verifyDecoy(password);
      throw unauthorized(M.badCredentials);
    }
    if (!(await verifyPassword(password, found.account.passwordHash))) throw unauthorized(M.badCredentials);
    // An account being erased answers as one that does not exist (its claim goes at the end of the erasure).
    const state = await loadUser(found.account.userId);
    if (state.status === 'erasing' || state.status === 'erased') throw unauthorized(M.badCredentials);
    const recorded = recordedBy(await ensureUser(found.account, email, meta));
    return { userId: found.account.userId, token: tokens.issue(found.account.userId), recorded };
  };

  /** A fresh token for a registered user (an idempotent replay of a registration answers with one). */
  const issueToken = (userId: number): string => tokens.issue(userId);

  /**
   * `POST api-erase` (issue 24): checks the password, then records the request; the account stops
   * working at once, the accounts process manager does the rest. Asked again (pending or done), it
   * answers the first request's id and records nothing.
   */
  const requestErasure = async (userId: number, password: string, meta: CommandMeta) => {
    const state = await loadUser(userId);
    if (state.status === 'erasing' || state.status === 'erased') return { erasureId: state.erasureId, recorded: recordedBy(null) };
    if (state.status !== 'registered') throw unauthorized(M.invalidToken);
    const found = await accountOf(state.email);
    if (!found || found.account.userId !== userId || !(await verifyPassword(password, found.account.passwordHash))) {
      throw forbidden(M.passwordIncorrect);
    }
    const now = ctx.clock().toISOString();
    const result = ctx.committed(await handler.handle(userDecider, streamIds.user(userId), {
      type: 'RequestErasure', userId, erasureId: randomUUID(), now,
    }, now, meta));
    const after = result.state;
    if (after.status !== 'erasing' && after.status !== 'erased') throw new Error(`user ${userId}: erasure not recorded`);
    return { erasureId: after.erasureId, recorded: recordedBy(result) };
  };

  /** Where an erasure is: pending until `docs.user.erased.v1`, then done with its counts; null for another id. */
  const erasureStatus = async (userId: number, erasureId: string) => {
    const state = (await handler.load(userDecider, streamIds.user(userId))).state;
    if ((state.status !== 'erasing' && state.status !== 'erased') || state.erasureId !== erasureId) return null;
    return state.status === 'erased'
      ? { state: 'done' as const, filesDeleted: state.filesDeleted, commentsRedacted: state.commentsRedacted }
      : { state: 'pending' as const, filesDeleted: 0, commentsRedacted: 0 };
  };

  /** The account claim of an erased user leaves the claim store (the e-mail may register again). */
  const releaseAccount = async (email: string): Promise<void> => {
    if (email === '') return;
    await claims.release(ACCOUNT, await personalData.emailIndex(email));
    await claims.release(ACCOUNT, email);
  };

  return { register, login, issueToken, requestErasure, erasureStatus, releaseAccount, loadUser };
};
