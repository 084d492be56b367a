import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';

/**
 * The services' internal routes (docs-command's extraction and disable reports, the webhook
 * dispatcher's URL check): reached on the back network only, never routed by the gateway, and
 * answered only for a request carrying `X-Internal-Token` = INTERNAL_TOKEN.
 */
export const INTERNAL_TOKEN_HEADER = 'x-internal-token';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/**
 * A middleware that lets a request with the token through, compared in constant time (as digests,
 * so lengths never leak); anyone else goes on to the next route: the same 404 as any unknown path.
 */
export const internalOnly = (token: string) => {
  const expected = digest(token);
  return (req: Request, _res: Response, next: (error?: unknown) => void): void => {
    const sent = req.get(INTERNAL_TOKEN_HEADER);
    if (sent === undefined || !timingSafeEqual(digest(sent), expected)) return next('route');
    next();
  };
};
