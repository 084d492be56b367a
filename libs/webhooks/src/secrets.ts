import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { SealedSecret } from '@docshare/contracts';

/**
 * Webhook secrets (issue 23). A secret is shown to its owner once and then lives only sealed in
 * the webhook events (`docs.webhook.registered|secret_rotated.v1`): the event log is copied to
 * the bus, backups and read models, so nothing in it may sign a delivery without the key
 * (WEBHOOK_SECRET_KEY), which only docs-command and the dispatcher hold.
 */

const PREFIX = 'whsec_';

/** A new secret, as Standard Webhooks writes them: `whsec_` and the base64 of 32 random bytes (the HMAC key). */
export const newWebhookSecret = (): string => `${PREFIX}${randomBytes(32).toString('base64')}`;

/** The HMAC key of a secret: the base64-decoded part after `whsec_` (what receivers' libraries use too). */
export const secretKeyBytes = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');

export interface SecretSealer {
  /** AES-256-GCM under a random 12-byte iv; the webhook's id is authenticated with it (aad), so a sealed secret cannot be moved to another endpoint. */
  seal(secret: string, webhookId: number): SealedSecret;
  /** The secret in clear; throws when it was sealed under another key, was altered, or belongs to another webhook. */
  open(sealed: SealedSecret, webhookId: number): string;
}

const aadOf = (webhookId: number): Buffer => Buffer.from(`webhook-${webhookId}`, 'utf8');

/**
 * A sealer keyed by WEBHOOK_SECRET_KEY: the AES key is derived with HKDF-SHA256 (salt `docshare`,
 * info `webhook-secrets/v1`), so the variable can be any long text; `kid` (8 hex characters of the
 * key's SHA-256) names the key, so a secret sealed under another one is told apart from a forgery.
 */
export const makeSecretSealer = (keyMaterial: string): SecretSealer => {
  const key = Buffer.from(hkdfSync('sha256', keyMaterial, 'docshare', 'webhook-secrets/v1', 32));
  const kid = createHash('sha256').update(key).digest('hex').slice(0, 8);
  return {
    seal(secret, webhookId) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(aadOf(webhookId));
      const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
      return { kid, iv: iv.toString('base64url'), ct: ct.toString('base64url'), tag: cipher.getAuthTag().toString('base64url') };
    },
    open(sealed, webhookId) {
      if (sealed.kid !== kid) throw new Error(`webhook ${webhookId}: its secret is sealed under another key (kid ${sealed.kid}, this one ${kid})`);
      const tag = Buffer.from(sealed.tag, 'base64url');
      if (tag.length !== 16) throw new Error(`webhook ${webhookId}: its sealed secret is damaged`);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64url'), { authTagLength: 16 });
        decipher.setAAD(aadOf(webhookId));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(Buffer.from(sealed.ct, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        // The cause (OpenSSL's "unable to authenticate data") says nothing more; never the secret.
        throw new Error(`webhook ${webhookId}: its sealed secret does not open (altered, or sealed for another webhook)`);
      }
    },
  };
};
