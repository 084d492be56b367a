import { createHmac, timingSafeEqual } from 'node:crypto';
import { secretKeyBytes } from './secrets.ts';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com, "Signature scheme"): HMAC-SHA256
 * with the secret's key over `${webhook-id}.${webhook-timestamp}.${body}`, sent as `v1,<base64>`.
 * The header carries several space-separated signatures: during a rotation both secrets sign, so a
 * receiver verifies with either (what the `standardwebhooks` libraries do).
 */

const hmacOf = (secret: string, messageId: string, timestampSeconds: number | string, body: string): Buffer =>
  createHmac('sha256', secretKeyBytes(secret)).update(`${messageId}.${timestampSeconds}.${body}`, 'utf8').digest();

/** One signature, `v1,<base64 HMAC-SHA256>`. */
export const signWebhook = (secret: string, messageId: string, timestampSeconds: number, body: string): string =>
  `v1,${hmacOf(secret, messageId, timestampSeconds, body).toString('base64')}`;

/** The `webhook-signature` header: one signature per secret, in the order given (the current secret first). */
export const signatureHeader = (secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): string =>
  secrets.map((secret) => signWebhook(secret, messageId, timestampSeconds, body)).join(' ');

export interface WebhookSignatureHeaders {
  /** `webhook-id` */
  id: string;
  /** `webhook-timestamp`: unix seconds */
  timestamp: string;
  /** `webhook-signature`: space-separated `v1,<base64>` entries */
  signature: string;
}

/**
 * What a receiver does (the SDK's verifier): true when any `v1` signature of the header is the
 * body's under `secret` and the timestamp is within `toleranceSeconds` of now (a replayed old
 * request is refused). The comparison takes the same time whatever bytes differ.
 */
export const verifyWebhookSignature = (
  secret: string, headers: WebhookSignatureHeaders, body: string,
  nowSeconds: number = Math.floor(Date.now() / 1000), toleranceSeconds = 300,
): boolean => {
  if (!/^\d{1,15}$/.test(headers.timestamp)) return false;
  if (Math.abs(nowSeconds - Number(headers.timestamp)) > toleranceSeconds) return false;
  const expected = hmacOf(secret, headers.id, Number(headers.timestamp), body);
  let matched = false;
  for (const entry of headers.signature.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const given = Buffer.from(entry.slice(comma + 1), 'base64');
    // Every entry is compared (no early exit), so the time does not tell which one matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched;
};
