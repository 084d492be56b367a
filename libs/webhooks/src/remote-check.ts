import { DocshareError, M } from '@docshare/contracts';
import type { UrlCheck, WebhookUrlPolicy } from './url-guard.ts';

/**
 * Where an endpoint's URL is checked at registration when the write side cannot resolve public
 * names itself (compose: docs-command sits on a network with no way out, the webhook dispatcher is
 * the one service with egress): the dispatcher's internal route answers `checkWebhookUrl` under its
 * own policy and with the DNS its deliveries connect through.
 */
export const URL_CHECK_PATH = '/internal/V1/webhook-urls/check';

/** The route's answer: what `checkWebhookUrl` said, the URL as a string. */
export type UrlCheckAnswer = { ok: true; url: string } | { ok: false; message: string };

export const urlCheckAnswer = (check: UrlCheck): UrlCheckAnswer =>
  (check.ok ? { ok: true, url: check.url.href } : { ok: false, message: check.message });

/**
 * `checkWebhookUrl`'s shape, asked of the dispatcher at `dispatcherUrl` with the internal token.
 * The policy argument is ignored: the dispatcher's own applies (the one its connections keep to).
 * The dispatcher unreachable or failing: 503 `Service unavailable, try again later`.
 */
export const remoteUrlCheck = (dispatcherUrl: string, internalToken: string, timeoutMs = 10_000) => {
  const endpoint = `${dispatcherUrl.replace(/\/+$/, '')}${URL_CHECK_PATH}`;
  return async (raw: unknown, _policy?: WebhookUrlPolicy): Promise<UrlCheck> => {
    let answer: UrlCheckAnswer;
    try {
      const res = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-internal-token': internalToken },
        body: JSON.stringify({ url: raw }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) throw new Error(`webhook dispatcher URL check: HTTP ${res.status}`);
      answer = await res.json() as UrlCheckAnswer;
    } catch {
      throw new DocshareError('unavailable', M.unavailable);
    }
    if (answer.ok) return { ok: true, url: new URL(answer.url) };
    return { ok: false, message: typeof answer.message === 'string' ? answer.message : M.webhookUrlInvalid };
  };
};
