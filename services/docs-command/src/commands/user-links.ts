import type { UrlSigner } from '@docshare/auth';

/** How long an erasure's status link answers (issue 24). */
export const ERASURE_LINK_TTL_SECONDS = 7 * 24 * 3_600;

export type LinkQuery = { user?: unknown; expires?: unknown; signature?: unknown };

/**
 * Links about one user's request (issue 24: an erasure's status, an export's ZIP) that need no
 * token, since the erased user has none that works: `<path>?user=<id>&expires=&signature=`, the
 * path naming the request by its UUID, signed with the JWT secret's URL signer like content links
 * (the gateway checks the same signature to leave them outside the rate limit).
 */
export const makeUserLinks = (
  { signer, publicBaseUrl, clock }: { signer: UrlSigner; publicBaseUrl: string; clock: () => Date },
  pathOf: (requestId: string) => string,
) => {
  const resource = (userId: number, requestId: string): string => `${pathOf(requestId)}?user=${userId}`;
  return {
    /** The link, valid until `expiresAt` (epoch seconds). */
    url: (userId: number, requestId: string, expiresAt: number): string =>
      `${publicBaseUrl}${resource(userId, requestId)}&${signer.sign(resource(userId, requestId), expiresAt)}`,
    /** The user a link is for, or null when it is not one docshare signed for this request, or it expired. */
    verify: (requestId: string, query: LinkQuery): number | null => {
      const userId = typeof query.user === 'string' && /^\d{1,15}$/.test(query.user) ? Number(query.user) : null;
      if (userId === null || !/^[0-9a-f-]{36}$/.test(requestId)) return null;
      return signer.verify(resource(userId, requestId), query.expires, query.signature, Math.floor(clock().getTime() / 1000)) ? userId : null;
    },
  };
};

/** An erasure's `status_url`: valid 7 days. */
export const makeErasureLinks = (deps: { signer: UrlSigner; publicBaseUrl: string; clock: () => Date }) => {
  const links = makeUserLinks(deps, (erasureId) => `/api/V1/users/api-erase/status/${erasureId}`);
  return {
    statusUrl: (userId: number, erasureId: string): string =>
      links.url(userId, erasureId, Math.floor(deps.clock().getTime() / 1000) + ERASURE_LINK_TTL_SECONDS),
    verify: links.verify,
  };
};
