import { conflict, DocshareError, M, streamIds, unauthorized } from '@docshare/contracts';
import type { ClaimStore } from '@docshare/claim-store';
import { hashPassword, verifyDecoy, verifyPassword, type Tokens } from '@docshare/auth';
import type { CommandMeta, Handled } from './command-handler.ts';
import { registered, userDecider, type CommandContext } from './context.ts';
import { recordedBy } from './recorded.ts';

/** What registering asks for (parsed by http/validation.ts). */
export interface Registration { name: string; email: string; password: string }

/** What the command side keeps about an account, outside the event log (never in an event). */
interface Account { userId: number; name: string; passwordHash: string }

export interface UserCommandsDeps {
  ctx: CommandContext;
  claims: ClaimStore;
  tokens: Tokens;
  passwordCost?: number;
}

/** Users: register, log in, a fresh token. The account (email, password hash) is a claim; the user a stream. */
export const makeUserCommands = ({ ctx, claims, tokens, passwordCost }: UserCommandsDeps) => {
  const { events, handler } = ctx;

  /** Makes sure the user's stream exists (repairs a registration cut off between its two writes). */
  const ensureUser = async (account: Account, email: string, meta: CommandMeta): Promise<Handled<unknown> | null> => {
    const { state } = await handler.load(userDecider, streamIds.user(account.userId), registered);
    if (state.status === 'registered') return null;
    try {
      const now = ctx.clock().toISOString();
      return ctx.committed(await handler.handle(userDecider, streamIds.user(account.userId), {
        type: 'RegisterUser', user: { userId: account.userId, name: account.name, email, registeredAt: now },
      }, now, meta));
    } catch (error) {
      // Registered meanwhile (the only conflict the user decider refuses with).
      if (error instanceof DocshareError && error.kind === 'conflict') return null;
      throw error;
    }
  };

  const register = async (input: Registration, meta: CommandMeta) => {
    if (await claims.get<Account>('account', input.email)) throw conflict(M.emailTaken);
    const userId = await events.nextId('user');
    const account: Account = { userId, name: input.name, passwordHash: await hashPassword(input.password, passwordCost) };
    const claimed = await claims.claim('account', input.email, account);
    if (!claimed.created) throw conflict(M.emailTaken);
    const recorded = recordedBy(await ensureUser(account, input.email, meta));
    return { userId, token: tokens.issue(userId), recorded };
  };

  const login = async (email: string, password: string, meta: CommandMeta) => {
    const account = await claims.get<Account>('account', email);
    if (!account) {
      await verifyDecoy(password);
      throw unauthorized(M.badCredentials);
    }
    if (!(await verifyPassword(password, account.passwordHash))) throw unauthorized(M.badCredentials);
    const recorded = recordedBy(await ensureUser(account, email, meta));
    return { userId: account.userId, token: tokens.issue(account.userId), recorded };
  };

  /** A fresh token for a registered user (an idempotent replay of a registration answers with one). */
  const issueToken = (userId: number): string => tokens.issue(userId);

  return { register, login, issueToken };
};
