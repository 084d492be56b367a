import type { UrlSigner } from '@docshare/auth';

/** How long an erasure's status link answers (issue 24). */
export const ERASURE_LINK_TTL_SECONDS = 7 * 24 * 3_600;

const resource = (userId: number, erasureId: string): string => `/api/V1/users/api-erase/status/${erasureId}?user=${userId}`;

/**
 * An erasure's `status_url`: signed (the JWT secret's URL signer, like content links), so it
 * needs no token, which the erased user no longer has; valid 7 days.
 */
export const makeErasureLinks = ({ signer, publicBaseUrl, clock }: { signer: UrlSigner; publicBaseUrl: string; clock: () => Date }) => ({
  statusUrl: (userId: number, erasureId: string): string => {
    const expires = Math.floor(clock().getTime() / 1000) + ERASURE_LINK_TTL_SECONDS;
    return `${publicBaseUrl}${resource(userId, erasureId)}&${signer.sign(resource(userId, erasureId), expires)}`;
  },
  /** The user a status link is for, or null when it is not one docshare signed or it expired. */
  verify: (erasureId: string, query: { user?: unknown; expires?: unknown; signature?: unknown }): number | null => {
    const userId = typeof query.user === 'string' && /^\d{1,15}$/.test(query.user) ? Number(query.user) : null;
    if (userId === null || !/^[0-9a-f-]{36}$/.test(erasureId)) return null;
    return signer.verify(resource(userId, erasureId), query.expires, query.signature, Math.floor(clock().getTime() / 1000)) ? userId : null;
  },
});
