import { createHmac, timingSafeEqual } from 'node:crypto';

export interface UrlSigner {
  /** Query string (`expires=...&signature=...`) granting access to `resource` until `expiresAt` (unix seconds). */
  sign(resource: string, expiresAt: number): string;
  /** True when the signature matches and has not expired at `nowSeconds`. */
  verify(resource: string, expires: unknown, signature: unknown, nowSeconds: number): boolean;
}

/** HMAC-SHA256 signed, expiring links (decisions §5: download_url needs no token). */
export const makeUrlSigner = (secret: string): UrlSigner => {
  const key = createHmac('sha256', secret).update('docshare download urls').digest();
  const mac = (resource: string, expiresAt: number): string =>
    createHmac('sha256', key).update(`${resource}\n${expiresAt}`).digest('hex');
  return {
    sign: (resource, expiresAt) => `expires=${expiresAt}&signature=${mac(resource, expiresAt)}`,
    verify: (resource, expires, signature, nowSeconds) => {
      if (typeof expires !== 'string' || typeof signature !== 'string' || !/^\d{1,12}$/.test(expires)) return false;
      if (!/^[0-9a-f]{64}$/.test(signature)) return false;
      const expiresAt = Number(expires);
      if (expiresAt < nowSeconds) return false;
      return timingSafeEqual(Buffer.from(mac(resource, expiresAt), 'hex'), Buffer.from(signature, 'hex'));
    },
  };
};
