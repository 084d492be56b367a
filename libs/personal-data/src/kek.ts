import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { WrappedKey } from './port.ts';

/**
 * The operator's key-encryption key(s) (DATA_KEK / DATA_KEK_FILE): the only secret that opens the
 * data keys. Several may be given, one per line or comma, so a KEK can be rotated: the first wraps
 * every key made or rewrapped from now on, the others only open keys wrapped before.
 */
export interface Kek {
  current: { kid: string; key: Buffer };
  byKid: ReadonlyMap<string, Buffer>;
}

const KEY_BYTES = 32;

const kidOf = (key: Buffer): string => createHash('sha256').update(key).digest('hex').slice(0, 8);

/** DATA_KEK's text: `<kid>:<key>` or a bare key (its kid derived from it), each key 32 bytes as base64url or 64 hex digits; first = current. */
export const parseKek = (text: string): Kek => {
  const entries = text.split(/[\n,]/).map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
  if (entries.length === 0) throw new Error('DATA_KEK holds no key');
  const byKid = new Map<string, Buffer>();
  const keys = entries.map((entry, i) => {
    const colon = entry.indexOf(':');
    const encoded = colon < 0 ? entry : entry.slice(colon + 1);
    const key = /^[0-9a-fA-F]{64}$/.test(encoded) ? Buffer.from(encoded, 'hex') : Buffer.from(encoded, 'base64url');
    if (key.length !== KEY_BYTES) throw new Error(`DATA_KEK key ${i + 1} is not ${KEY_BYTES} bytes of base64url`);
    const kid = colon < 0 ? kidOf(key) : entry.slice(0, colon);
    if (!/^[\w.-]{1,64}$/.test(kid)) throw new Error(`DATA_KEK key ${i + 1} has an invalid kid`);
    if (byKid.has(kid)) throw new Error(`DATA_KEK names kid ${kid} twice`);
    byKid.set(kid, key);
    return { kid, key };
  });
  return { current: keys[0]!, byKid };
};

/** A new KEK's text (one bare key), as `npm start` generates into DATA_DIR/secrets/data-kek. */
export const generateKekText = (): string => randomBytes(KEY_BYTES).toString('base64url');

const aadOf = (id: string): Buffer => Buffer.from(`docshare-data-key:${id}`);

/** `dataKey` sealed under the current KEK, bound to `id` (a wrapped key moved to another id does not open). */
export const wrapKey = (kek: Kek, id: string, dataKey: Buffer): WrappedKey => {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', kek.current.key, iv);
  cipher.setAAD(aadOf(id));
  const ct = Buffer.concat([cipher.update(dataKey), cipher.final()]);
  return { kid: kek.current.kid, iv: iv.toString('base64url'), ct: ct.toString('base64url'), tag: cipher.getAuthTag().toString('base64url') };
};

/** The data key of `id`; throws when its KEK is not given or the wrapping does not authenticate. */
export const unwrapKey = (kek: Kek, id: string, wrapped: WrappedKey): Buffer => {
  const key = kek.byKid.get(wrapped.kid);
  if (key === undefined) throw new Error(`data key ${id} is wrapped under KEK ${wrapped.kid}, which DATA_KEK does not hold`);
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(wrapped.iv, 'base64url'));
  decipher.setAAD(aadOf(id));
  decipher.setAuthTag(Buffer.from(wrapped.tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(wrapped.ct, 'base64url')), decipher.final()]);
};

export const newDataKey = (): Buffer => randomBytes(KEY_BYTES);
