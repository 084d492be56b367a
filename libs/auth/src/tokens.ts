import { createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';

const ALGORITHM = 'HS256';

export type Verified = { ok: true; userId: number } | { ok: false };

export interface Tokens {
  /** A signed JWT for the user: `sub` = user id, expiring after the configured lifetime. */
  issue(userId: number): string;
  /** The user id of a valid token; `{ok: false}` for anything else (expired, malformed, alg none, wrong key). */
  verify(token: string): Verified;
}

/** JWT issue and verify with HS256 pinned; the key is built once, here. */
export const makeTokens = (secret: string, ttlSeconds: number): Tokens => {
  if (Buffer.byteLength(secret) < 32) throw new Error('JWT secret must be at least 32 bytes');
  const key: KeyObject = createSecretKey(Buffer.from(secret, 'utf8'));
  return {
    issue: (userId) => jwt.sign({}, key, { algorithm: ALGORITHM, subject: String(userId), expiresIn: ttlSeconds }),
    verify: (token) => {
      try {
        const payload = jwt.verify(token, key, { algorithms: [ALGORITHM] });
        if (typeof payload === 'string' || typeof payload.sub !== 'string' || !/^[1-9]\d{0,14}$/.test(payload.sub)) {
          return { ok: false };
        }
        if (typeof payload.exp !== 'number') return { ok: false };
        return { ok: true, userId: Number(payload.sub) };
      } catch {
        return { ok: false };
      }
    },
  };
};

/**
 * The token of a request: `X-Authorization` first, then `Authorization`; `Bearer ` optional.
 * Undefined when neither header carries anything.
 */
export const tokenFrom = (xAuthorization: string | undefined, authorization: string | undefined): string | undefined => {
  const raw = [xAuthorization, authorization].find((h) => h !== undefined && h.trim() !== '');
  if (raw === undefined) return undefined;
  const value = raw.trim();
  const match = /^bearer\s+(.*)$/i.exec(value);
  const token = (match ? match[1] ?? '' : value).trim();
  return token === '' || /^bearer$/i.test(token) ? undefined : token;
};
