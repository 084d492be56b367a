import { M } from '@docshare/contracts';
import type { Upstream } from '@docshare/contracts/services';
import { routeMatcher } from './cors.ts';

/** The services behind the gateway: their names in the registry (libs/contracts/src/services.ts, `upstream`). */
export type { Upstream };

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface Route {
  method: Method;
  /** Express path pattern. */
  path: string;
  upstream: Upstream;
  /** Needs a valid token (everything under /api/V1 except register and login). */
  auth: boolean;
  summary: string;
  operationId: string;
  /** The message when the service behind the route fails or cannot be reached (the spec names three). */
  failure?: string;
  /** A GET that records something (a download): HEAD must not reach it. */
  recordsOnGet?: boolean;
  /**
   * A transfer (an upload, a file's bytes, an upload's part): it takes as long as its bytes take,
   * bounded by their progress (the socket's idle timeout), never by a total time.
   */
  transfer?: boolean;
  /**
   * False: the rate limit does not apply at all (no point spent, never 429, no RateLimit headers).
   * A resumable upload's part PUTs: 1 GiB is 128 of them, bounded per user in bytes per second by
   * docs-command instead (issue 22). Default true.
   */
  rateLimited?: boolean;
  /**
   * What the link's signature covers when it is not the path alone: `user`, the path and its
   * `user` query value (`<path>?user=<id>`, as docs-command signs an erasure's status link and an
   * export's link, libs/auth UrlSigner). Absent: the path.
   */
  signedLink?: 'user';
}

/**
 * The resource a signed link's signature covers (docs-command signs the same): the path, or for a
 * route with `signedLink: 'user'` the path and its `user` query value.
 */
export const signedResource = (route: Pick<Route, 'signedLink'>, path: string, query: Record<string, unknown>): string | undefined => {
  if (route.signedLink !== 'user') return path;
  const user = query.user;
  return typeof user === 'string' && /^[1-9]\d{0,15}$/.test(user) ? `${path}?user=${user}` : undefined;
};

/** Every route of api-spec.md and decisions.md, and which service answers it. */
export const ROUTES: readonly Route[] = [
  { method: 'post', path: '/api/V1/users/api-register', upstream: 'docs', auth: false, operationId: 'register', summary: 'Register a user; returns a JWT' },
  { method: 'post', path: '/api/V1/users/api-login', upstream: 'docs', auth: false, operationId: 'login', summary: 'Log in; returns a JWT' },
  { method: 'post', path: '/api/V1/docs/api-upload', upstream: 'docs', auth: true, operationId: 'upload', summary: 'Upload a file with its metadata', transfer: true },
  // Resumable uploads (issue 22, docs/api-decisions.md): three control calls per file, the bytes in parts.
  { method: 'post', path: '/api/V1/docs/api-uploads', upstream: 'docs', auth: true, operationId: 'createUpload', summary: 'Start a resumable upload: answers the part size and a URL per part' },
  { method: 'get', path: '/api/V1/docs/api-uploads/:uploadId', upstream: 'docs', auth: true, operationId: 'getUpload', summary: 'A resumable upload\'s state: the parts received, fresh URLs for the others' },
  { method: 'post', path: '/api/V1/docs/api-uploads/:uploadId/complete', upstream: 'docs', auth: true, operationId: 'completeUpload', summary: 'Complete a resumable upload: records the file' },
  { method: 'delete', path: '/api/V1/docs/api-uploads/:uploadId', upstream: 'docs', auth: true, operationId: 'abortUpload', summary: 'Abort a resumable upload: its parts removed, its quota released' },
  // The signature in the query is the credential (no token); never rate limited (docs-command bounds its bytes per second).
  { method: 'put', path: '/api/V1/docs/api-uploads/:uploadId/parts/:partNumber', upstream: 'docs', auth: false, operationId: 'uploadPart', summary: 'Send one part\'s bytes to a signed part URL', transfer: true, rateLimited: false },
  { method: 'get', path: '/api/V1/docs/api-download', upstream: 'docs', auth: true, operationId: 'download', summary: 'Authorise a download: counts it and returns a signed download_url', recordsOnGet: true },
  { method: 'delete', path: '/api/V1/docs/api-delete', upstream: 'docs', auth: true, operationId: 'deleteFile', summary: 'Delete one of your files', failure: M.deletionFailed },
  { method: 'post', path: '/api/V1/docs/api-comment', upstream: 'docs', auth: true, operationId: 'postComment', summary: 'Comment on a file' },
  { method: 'post', path: '/api/V1/docs/api-update', upstream: 'docs', auth: true, operationId: 'updateFile', summary: 'Change one of your files: sale, price, enabled, title, description, tags' },
  { method: 'post', path: '/api/V1/docs/api-purchase', upstream: 'docs', auth: true, operationId: 'purchase', summary: 'Record the purchase of a file that is for sale' },
  { method: 'get', path: '/api/V1/docs/api-categories', upstream: 'files', auth: true, operationId: 'listCategories', summary: 'List categories' },
  { method: 'post', path: '/api/V1/stats/api-search', upstream: 'search', auth: true, operationId: 'search', summary: 'Search files', failure: M.searchFailed },
  { method: 'post', path: '/api/V1/stats/api-stats', upstream: 'stats', auth: true, operationId: 'stats', summary: "The authenticated user's statistics", failure: M.statsFailed },
  { method: 'get', path: '/api/V1/stats/api-daily', upstream: 'stats', auth: true, operationId: 'dailyStats', summary: 'Your statistics per UTC day: views, unique viewers, downloads, sales, comments', failure: M.statsFailed },
  { method: 'get', path: '/api/V1/stats/api-top', upstream: 'stats', auth: true, operationId: 'topFiles', summary: 'Your files ranked by a metric over the last days', failure: M.statsFailed },
  { method: 'get', path: '/api/V1/stats/api-trending', upstream: 'stats', auth: true, operationId: 'trendingFiles', summary: "Everyone's visible files ranked by unique viewers over the last hours", failure: M.statsFailed },
  { method: 'get', path: '/api/V1/users/api-files', upstream: 'files', auth: true, operationId: 'listFiles', summary: 'Files of a user' },
  { method: 'post', path: '/api/V1/users/api-comments', upstream: 'files', auth: true, operationId: 'listComments', summary: 'Comments received on your files' },
  // docs-command answers it (from the files read model) because it signs the links.
  { method: 'get', path: '/api/V1/users/api-purchases', upstream: 'docs', auth: true, operationId: 'listPurchases', summary: 'Files you bought, each with a signed download_url' },
  // Creators' webhooks (issue 23, docs/api-decisions.md "Webhooks"): docs-command decides on the
  // user's `webhooks-<userId>` stream and reads deliveries from the dispatcher's store. Its internal
  // route (/internal/V1/webhooks/:id/disabled, the dispatcher's) is never routed here.
  { method: 'post', path: '/api/V1/users/api-webhooks', upstream: 'docs', auth: true, operationId: 'createWebhook', summary: 'Register a webhook endpoint; answers its signing secret, once' },
  { method: 'get', path: '/api/V1/users/api-webhooks', upstream: 'docs', auth: true, operationId: 'listWebhooks', summary: 'Your webhook endpoints, oldest first' },
  { method: 'get', path: '/api/V1/users/api-webhooks/:webhookId', upstream: 'docs', auth: true, operationId: 'getWebhook', summary: 'One of your webhook endpoints' },
  { method: 'patch', path: '/api/V1/users/api-webhooks/:webhookId', upstream: 'docs', auth: true, operationId: 'updateWebhook', summary: 'Change a webhook endpoint: url, events, description, enabled' },
  { method: 'delete', path: '/api/V1/users/api-webhooks/:webhookId', upstream: 'docs', auth: true, operationId: 'deleteWebhook', summary: 'Delete a webhook endpoint: nothing more is sent to it' },
  { method: 'post', path: '/api/V1/users/api-webhooks/:webhookId/rotate-secret', upstream: 'docs', auth: true, operationId: 'rotateWebhookSecret', summary: 'A new signing secret; the old one keeps signing beside it for 24 h' },
  { method: 'post', path: '/api/V1/users/api-webhooks/:webhookId/test', upstream: 'docs', auth: true, operationId: 'testWebhook', summary: 'Send a webhook.test message to the endpoint now' },
  { method: 'get', path: '/api/V1/users/api-webhooks/:webhookId/deliveries', upstream: 'docs', auth: true, operationId: 'listWebhookDeliveries', summary: 'Delivery attempts to an endpoint, newest first' },
  { method: 'get', path: '/api/V1/users/api-webhooks/:webhookId/dead-letters', upstream: 'docs', auth: true, operationId: 'listWebhookDeadLetters', summary: 'Messages whose retries an endpoint exhausted, newest first' },
  { method: 'post', path: '/api/V1/users/api-webhooks/:webhookId/replay', upstream: 'docs', auth: true, operationId: 'replayWebhook', summary: 'Deliver again, from the event log, the messages of a time range or listed by id' },
  // Leaving (issue 24, docs/api-decisions.md "Leaving: erasure and export"): docs-command decides on the
  // user's `user-<userId>` stream; the erasure's answer names the user (x-docshare-erased-user) so the
  // gateway refuses their tokens at once (revocations.ts). The status and content links need no token:
  // their signature is the credential, and a genuine one is outside the rate limit (as a part link).
  { method: 'post', path: '/api/V1/users/api-erase', upstream: 'docs', auth: true, operationId: 'eraseAccount', summary: 'Erase your account: every file deleted, your personal data made unreadable' },
  { method: 'get', path: '/api/V1/users/api-erase/status/:erasureId', upstream: 'docs', auth: false, operationId: 'erasureStatus', summary: 'An erasure\'s state behind its signed status link', rateLimited: false, signedLink: 'user' },
  { method: 'post', path: '/api/V1/users/api-export', upstream: 'docs', auth: true, operationId: 'exportAccount', summary: 'Start an export of your account: a ZIP of your data and files' },
  { method: 'get', path: '/api/V1/users/api-export', upstream: 'docs', auth: true, operationId: 'exportStatus', summary: 'An export\'s state; once ready, its signed download_url' },
  { method: 'get', path: '/api/V1/users/api-export/:exportId/content', upstream: 'docs', auth: false, operationId: 'exportContent', summary: 'An export\'s ZIP behind its signed link', transfer: true, rateLimited: false, signedLink: 'user' },
  { method: 'get', path: '/docs/:fileId', upstream: 'docs', auth: false, operationId: 'viewPage', summary: 'Public HTML page of a file; counts a view under a viewer key' },
  { method: 'get', path: '/files/:fileId/content', upstream: 'docs', auth: false, operationId: 'fileContent', summary: 'File bytes behind a signed, expiring link (Range supported)', transfer: true },
];

/**
 * Whether a request is for one of `routes`: its method (HEAD goes with GET) and its path, matched
 * as Express matches it (routeMatcher).
 */
export const requestMatcher = (routes: readonly Route[]): ((req: { method: string; path: string }) => boolean) => {
  const methods = (route: Route): string[] => (route.method === 'get' ? ['GET', 'HEAD'] : [route.method.toUpperCase()]);
  const byMethod = new Map<string, (path: string) => string | undefined>();
  for (const method of new Set(routes.flatMap(methods))) {
    byMethod.set(method, routeMatcher(routes.filter((route) => methods(route).includes(method)).map((route) => route.path)));
  }
  return (req) => byMethod.get(req.method)?.(req.path) !== undefined;
};
