import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scryptAsync = (password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    scrypt(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key)));
  });

const DEFAULT_COST = 2 ** 15;
const BLOCK = 8;
const PARALLEL = 1;
const KEY_LENGTH = 32;

/** A slow salted hash, self-describing: `scrypt$N$r$p$salt$key` (base64url). */
export const hashPassword = async (password: string, cost = DEFAULT_COST): Promise<string> => {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, KEY_LENGTH, { N: cost, r: BLOCK, p: PARALLEL, maxmem: 256 * cost * BLOCK });
  return ['scrypt', cost, BLOCK, PARALLEL, salt.toString('base64url'), key.toString('base64url')].join('$');
};

/** True when `password` matches `stored`, compared in constant time. */
export const verifyPassword = async (password: string, stored: string): Promise<boolean> => {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const N = Number(n);
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64url'), expected.length, {
    N, r: Number(r), p: Number(p), maxmem: 256 * N * Number(r),
  });
  return timingSafeEqual(actual, expected);
};

let decoy: Promise<string> | undefined;
/** Spends the time of one verification, so an unknown e-mail answers as slowly as a wrong password. */
export const verifyDecoy = async (password: string): Promise<void> => {
  decoy ??= hashPassword('decoy-password');
  await verifyPassword(password, await decoy);
};
