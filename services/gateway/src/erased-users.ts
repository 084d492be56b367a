import type { RequestHandler, Response } from 'express';
import { ERASED_USER_HEADER } from '@docshare/contracts';
import type { Logger } from '@docshare/http';
import type { RevokedUsers } from './revocations.ts';
import type { SessionTokens } from './consistency.ts';

/** The internal header of docs-command's answer to an erasure request (one constant, in contracts). Never leaves the gateway. */
export { ERASED_USER_HEADER };

export interface ForgetErasedUsersOptions {
  revocations: RevokedUsers;
  sessions: SessionTokens;
  /** Removes the user's rate-limit budget (the limiter's key of their token). */
  forgetLimits: (userId: number) => Promise<void>;
  logger: Logger;
}

const userIdOf = (value: unknown): number | null => {
  const text = Array.isArray(value) ? value[0] : value;
  return typeof text === 'string' && /^[1-9]\d{0,15}$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : null;
};

/**
 * When a service's answer names an erased user (`x-docshare-erased-user`), before the answer
 * leaves: revokes the user (this process refuses their tokens at once, the others once the
 * revocation is shared: revocations.ts), forgets their consistency token and their rate-limit
 * budget, and strips the header. The client's next request with the erased account's token is
 * `Invalid JWT token` whichever replica it reaches (Redis, or within the replicas' 1 s cache).
 */
export const forgetErasedUsers = (options: ForgetErasedUsersOptions): RequestHandler => (_req, res, next) => {
  const writeHead = res.writeHead;
  res.writeHead = function (this: Response, ...args: unknown[]) {
    const userId = userIdOf(res.getHeader(ERASED_USER_HEADER));
    res.removeHeader(ERASED_USER_HEADER);
    if (userId !== null) {
      const failed = (what: string) => (err: unknown) => options.logger.warn({ err, userId }, `erased user: could not ${what}`);
      options.revocations.revoke(userId).catch(failed('record the revocation'));
      options.sessions.forget(userId);
      options.forgetLimits(userId).catch(failed('remove the rate-limit budget'));
      options.logger.info({ userId }, 'erased user: tokens refused from now on');
    }
    return (writeHead as (...a: unknown[]) => Response).apply(this, args);
  } as typeof res.writeHead;
  next();
};
