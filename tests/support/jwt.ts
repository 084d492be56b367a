// Hand-made JWTs (HMAC via node:crypto) for the token tests.
import { createHmac } from 'node:crypto';

/** The JWT_SECRET given to spawned servers; against DOCSHARE_BASE_URL, DOCSHARE_JWT_SECRET if set. */
export const TEST_JWT_SECRET = process.env['DOCSHARE_JWT_SECRET'] || 'docshare-test-secret-7f3a9c2e1b5d4e6f8a0b1c2d3e4f5a6b';

const HASHES: Record<string, string> = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' };

export function b64url(data: string | Buffer): string {
  return Buffer.from(data).toString('base64url');
}

export function decodePart(token: string, index: 0 | 1): Record<string, unknown> {
  const part = token.split('.')[index];
  if (part === undefined) throw new Error(`not a JWT: ${token}`);
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}

export function hmac(alg: string, secret: string, input: string): string {
  const hash = HASHES[alg];
  if (hash === undefined) throw new Error(`unsupported alg ${alg}`);
  return createHmac(hash, secret).update(input).digest('base64url');
}

/** Sign `payload` with `secret`. `alg` defaults to HS256; `alg: "none"` gives an unsigned token. */
export function signJwt(payload: Record<string, unknown>, secret: string, header: Record<string, unknown> = { alg: 'HS256', typ: 'JWT' }): string {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  const alg = String(header['alg']);
  if (alg === 'none') return `${input}.`;
  return `${input}.${hmac(alg, secret, input)}`;
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
