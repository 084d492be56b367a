import { retrying } from '@docshare/contracts';
import type { Logger } from '@docshare/http';
import type { DisableRecorder } from './module.ts';

/** docs-command answered 5xx or 429, or could not be reached: worth another attempt. */
class Unavailable extends Error {
  override readonly name = 'Unavailable';
}

export interface HttpRecorderOptions {
  /** One request's time limit (default 10 s). */
  timeoutMs?: number;
  /** Attempts in all (default 8: about a minute of backoff); the dispatcher tries again on the endpoint's next failure. */
  attempts?: number;
  baseMs?: number;
  capMs?: number;
  logger?: Logger;
}

/**
 * Records `docs.webhook.disabled.v1` through docs-command's internal route (distributed mode):
 * `POST {DOCS_COMMAND_URL}/internal/V1/webhooks/{id}/disabled` `{owner_id, reason}` with
 * X-Internal-Token. Idempotent on docs-command's side, so it is retried on 5xx, 429 and network
 * failures; 2xx ends it, and so does 404 (the endpoint is gone: nothing to disable). Any other
 * answer rejects (a configuration error: the token, the URL), and the dispatcher logs it.
 */
export const makeHttpRecorder = (docsCommandUrl: string, internalToken: string, options: HttpRecorderOptions = {}): DisableRecorder => {
  const base = docsCommandUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 10_000;
  return {
    disable: (webhookId, ownerId, reason) => retrying(async () => {
      let res: Response;
      try {
        res = await fetch(`${base}/internal/V1/webhooks/${webhookId}/disabled`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-internal-token': internalToken },
          body: JSON.stringify({ owner_id: ownerId, reason }),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        throw new Unavailable(`docs-command unreachable: ${error instanceof Error ? error.message : String(error)}`);
      }
      const text = await res.text();
      if (res.ok || res.status === 404) return;
      if (res.status === 429 || res.status >= 500) throw new Unavailable(`docs-command disable webhook: ${res.status} ${text.slice(0, 200)}`);
      throw new Error(`docs-command disable webhook: ${res.status} ${text.slice(0, 200)}`);
    }, {
      attempts: options.attempts ?? 8, baseMs: options.baseMs ?? 250, capMs: options.capMs ?? 15_000,
      retryIf: (error) => error instanceof Unavailable,
      onRetry: (error, attempt) => options.logger?.warn({ err: error, attempt, webhookId }, 'could not record a disabled webhook; retrying'),
    }),
  };
};
