import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { parseRetryAfter } from './retry.ts';
import { signatureHeader } from './signing.ts';
import { guardedLookup, isSpecialAddress, PRIVATE_ADDRESS_CODE, type WebhookUrlPolicy } from './url-guard.ts';

/**
 * One delivery attempt over HTTP (issue 23, Standard Webhooks): a signed POST whose outcome the
 * dispatcher turns into the task's next state. node:http rather than fetch: the connect-time
 * address check needs the socket's `lookup`, redirects must never be followed, and a response must
 * be cut off after 64 KiB without reading the rest.
 */

export interface DeliveryRequest {
  url: string;
  /** `webhook-id`: stable across retries, replays and crash re-sends. */
  messageId: string;
  /** `webhook-timestamp`: unix seconds of this attempt (signed with the body). */
  timestampSeconds: number;
  /** The JSON payload, sent and signed exactly as given. */
  body: string;
  /** The secrets in clear, the current one first (two during a rotation). */
  secrets: readonly string[];
}

export type DeliveryOutcome = 'succeeded' | 'failed' | 'gone';

export interface DeliveryResult {
  /** 2xx succeeded; 410 gone; anything else (3xx included, never followed), a network error or the timeout: failed. */
  outcome: DeliveryOutcome;
  /** The HTTP status, null when none came. */
  status: number | null;
  /** Request start → response end (or failure). */
  latencyMs: number;
  /** A short text for the owner's delivery log ('HTTP 500', 'connection refused', ...): never a secret, a header or the body. */
  error: string | null;
  /** The receiver's Retry-After on a failed status, in ms. */
  retryAfterMs?: number;
}

export interface Deliverer {
  /** Never throws: every failure is a result. */
  deliver(request: DeliveryRequest): Promise<DeliveryResult>;
  /** Closes the kept-alive connections. */
  close(): void;
}

export interface DelivererOptions {
  policy: WebhookUrlPolicy;
  /** The whole attempt, connect to the last byte read (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Response bytes read at most; then the connection is dropped (a receiver cannot make docshare read a large answer). */
  maxResponseBytes?: number;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 65_536;
export const WEBHOOK_USER_AGENT = 'docshare-webhooks/1';
/** Idle kept-alive connections are closed before the common 5 s server idle timeout, so a reused one is rarely reset under a request. */
const IDLE_SOCKET_MS = 4_000;

/** The short text of a network error: what the owner can act on, never the error's message (it may name internals). */
const errorText = (error: unknown): string => {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case PRIVATE_ADDRESS_CODE: return 'refused: private address';
    case 'ECONNREFUSED': return 'connection refused';
    case 'ENOTFOUND': return 'host not found';
    case undefined: return 'request failed';
    default: return code;
  }
};

const outcomeOf = (status: number): DeliveryOutcome =>
  status >= 200 && status < 300 ? 'succeeded' : status === 410 ? 'gone' : 'failed';

/**
 * The deliverer: keep-alive agents whose connects go through `guardedLookup` (a name is checked
 * at every new connection; an IP-literal host, which Node connects to without a lookup, is checked
 * here first). Headers: content-type application/json, user-agent, webhook-id, webhook-timestamp,
 * webhook-signature.
 */
export const makeDeliverer = (options: DelivererOptions): Deliverer => {
  const { policy, timeoutMs } = options;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const lookup = guardedLookup(policy);
  const agentOptions = { keepAlive: true, timeout: IDLE_SOCKET_MS, lookup };
  const httpAgent = new HttpAgent(agentOptions);
  const httpsAgent = new HttpsAgent(agentOptions);

  const attempt = (request: DeliveryRequest, url: URL, started: number): Promise<DeliveryResult> => new Promise((resolve) => {
    let settled = false;
    let status: number | null = null;
    let retryAfterMs: number | undefined;
    let req: ClientRequest | undefined;
    // One timer for the whole attempt (connect, send, wait, read): it settles the attempt, then
    // destroying the request drops the socket (whatever errors that raises come too late to count).
    const timer = setTimeout(() => {
      finish(`timeout after ${timeoutMs} ms`);
      req?.destroy();
    }, timeoutMs);
    const finish = (error: string | null, outcome?: DeliveryOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const result: DeliveryResult = {
        outcome: outcome ?? 'failed', status, latencyMs: Math.round(performance.now() - started), error,
      };
      if (retryAfterMs !== undefined) result.retryAfterMs = retryAfterMs;
      resolve(result);
    };
    const fail = (error: unknown): void => finish(errorText(error));

    const body = Buffer.from(request.body, 'utf8');
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    try {
      req = send(url, {
        method: 'POST',
        agent: url.protocol === 'https:' ? httpsAgent : httpAgent,
        lookup,
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'user-agent': WEBHOOK_USER_AGENT,
          'webhook-id': request.messageId,
          'webhook-timestamp': String(request.timestampSeconds),
          'webhook-signature': signatureHeader(request.secrets, request.messageId, request.timestampSeconds, request.body),
        },
      });
    } catch (error) {
      return fail(error);
    }
    req.on('error', fail);
    req.on('response', (res: IncomingMessage) => {
      status = res.statusCode ?? null;
      const outcome = status === null ? 'failed' : outcomeOf(status);
      if (outcome !== 'succeeded') {
        const header = res.headers['retry-after'];
        retryAfterMs = parseRetryAfter(Array.isArray(header) ? header[0] : header, Date.now());
      }
      const statusError = outcome === 'succeeded' ? null : `HTTP ${status ?? '?'}`;
      let received = 0;
      // The body is read only to reuse the connection, and only so far: past the limit the socket is dropped.
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > maxResponseBytes) {
          finish(statusError, outcome);
          res.destroy();
        }
      });
      res.on('end', () => finish(statusError, outcome));
      res.on('error', fail);
      res.on('close', () => {
        if (!res.complete) fail(Object.assign(new Error('connection closed'), { code: 'ECONNRESET' }));
      });
    });
    req.end(body);
  });

  return {
    async deliver(request) {
      const started = performance.now();
      const refused = (error: string): DeliveryResult => ({ outcome: 'failed', status: null, latencyMs: Math.round(performance.now() - started), error });
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        return refused('invalid url');
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') return refused('invalid url');
      if (url.protocol === 'http:' && !policy.allowHttp) return refused('refused: http not allowed');
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      if (!policy.allowPrivate && isIpLiteral(host) && isSpecialAddress(host)) return refused('refused: private address');
      try {
        return await attempt(request, url, started);
      } catch (error) {
        return refused(errorText(error));
      }
    },
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
};

/** Node connects to an IP literal without calling `lookup`, so such a host is checked before. */
const isIpLiteral = (host: string): boolean => isIP(host) !== 0;
