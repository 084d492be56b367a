// The receiver's side of docshare's webhooks: checks a delivery as the Standard Webhooks
// specification says (the `webhook-id`, `webhook-timestamp` and `webhook-signature` headers, an
// HMAC-SHA256 of `id.timestamp.body` under the endpoint's `whsec_` secret) and hands back the typed
// payload. Node's crypto only: the SDK targets Node (engines >= 20), not browsers, and a receiver
// is a server anyway.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookPayload } from './webhook-payloads.ts';

/** A delivery that must not be trusted: a header missing, a timestamp out of tolerance, no signature matching, a body that is not a payload. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

/** Headers as Node gives them (`req.headers`), a fetch `Headers`, or a plain record (names matched ignoring case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** How far (seconds) the timestamp may be from now, either way (default 300): an old delivery replayed by someone else is refused. */
  toleranceSeconds?: number;
  /** The clock (epoch ms; default Date.now). */
  now?: () => number;
}

const header = (headers: WebhookHeaders, name: string): string | undefined => {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    return Array.isArray(value) ? value.join(' ') : value;
  }
  return undefined;
};

/** The HMAC key of a secret: the base64 after `whsec_` (a bare base64 secret is taken too, as the `standardwebhooks` library does). */
const keyOf = (secret: string): Buffer => {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  if (key.length === 0) throw new TypeError('a webhook secret is `whsec_` followed by base64 bytes');
  return key;
};

const signature = (key: Buffer, id: string, timestamp: string, body: Buffer): Buffer =>
  createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();

/**
 * Verifies a delivery and returns its parsed payload; throws `WebhookVerificationError` when it
 * cannot be trusted. `secrets`: the endpoint's secret, or several (after `rotateSecret`, the new
 * and the old one until the old one stops signing). `rawBody`: the body's bytes exactly as they
 * came (parse nothing before verifying: a re-serialised JSON body does not match its signature).
 */
export function verifyWebhook(
  secrets: string | readonly string[], headers: WebhookHeaders, rawBody: string | Uint8Array, options: VerifyWebhookOptions = {},
): WebhookPayload {
  const keys = (typeof secrets === 'string' ? [secrets] : secrets).map(keyOf);
  if (keys.length === 0) throw new TypeError('verifyWebhook needs at least one secret');
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing required headers (webhook-id, webhook-timestamp, webhook-signature)');
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError('Invalid webhook-timestamp');
  const tolerance = options.toleranceSeconds ?? 300;
  const nowSeconds = Math.floor((options.now?.() ?? Date.now()) / 1000);
  const at = Number(timestamp);
  if (nowSeconds - at > tolerance) throw new WebhookVerificationError('Message timestamp too old');
  if (at - nowSeconds > tolerance) throw new WebhookVerificationError('Message timestamp too new');

  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  const expected = keys.map((key) => signature(key, id, timestamp, body));
  const matches = signatures.split(' ').some((versioned) => {
    const comma = versioned.indexOf(',');
    if (comma < 0 || versioned.slice(0, comma) !== 'v1') return false;
    const given = Buffer.from(versioned.slice(comma + 1), 'base64');
    // Every expected signature is compared (no early exit on the first secret), each in constant time.
    return expected.reduce((found, e) => (e.length === given.length && timingSafeEqual(e, given)) || found, false);
  });
  if (!matches) throw new WebhookVerificationError('No matching signature found');

  let payload: unknown;
  try {
    payload = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('The body is not JSON');
  }
  const p = payload as { type?: unknown; timestamp?: unknown; data?: unknown } | null;
  if (p === null || typeof p !== 'object' || typeof p.type !== 'string' || typeof p.timestamp !== 'string' || p.data === null || typeof p.data !== 'object') {
    throw new WebhookVerificationError('The body is not a webhook payload ({type, timestamp, data})');
  }
  return payload as WebhookPayload;
}
