import { ACCOUNT_NAME_AAD, SEALED_PREFIX, type Sealer } from './sealer.ts';

/*
 * The claim store's records (libs/claim-store: arrays of [scope, key, value]). Before issue 24 an
 * account claim was keyed by the plain e-mail, its value `{userId, name, passwordHash}` with the
 * name in clear; now the key is the e-mail's blind index (`pd.emailIndex`) and the name is sealed
 * under the user's key (ACCOUNT_NAME_AAD). A legacy key is told by its '@' (a blind index is
 * base64url, which has none). Every other claim (a category's name) is left as it is.
 */

export const ACCOUNT_SCOPE = 'account';

type Triple = [string, string, unknown];
const isTriple = (value: unknown): value is Triple =>
  Array.isArray(value) && value.length === 3 && typeof value[0] === 'string' && typeof value[1] === 'string';

interface Account { userId: number; name: string; passwordHash: string; sealed?: true }
const isAccount = (value: unknown): value is Account =>
  typeof value === 'object' && value !== null && Number.isInteger((value as Account).userId) && typeof (value as Account).name === 'string';

/** Whether the triple is an account claim still keyed by its plain e-mail. */
export const isLegacyAccount = (triple: Triple): boolean => triple[0] === ACCOUNT_SCOPE && triple[1].includes('@');

/** The account value with its name sealed (as it is when it already is). */
export const sealedAccount = async <A extends { userId: number; name: string; sealed?: true }>(pd: Sealer, value: A): Promise<A & { sealed: true }> => {
  const sealed = value.sealed === true || value.name.startsWith(SEALED_PREFIX);
  return { ...value, name: sealed ? value.name : await pd.sealValue(value.userId, value.name, ACCOUNT_NAME_AAD), sealed: true };
};

/** The claim re-keyed by the blind index, its name sealed (left as it is when it already is). */
const rekey = async (pd: Sealer, [scope, email, value]: Triple): Promise<Triple> => {
  if (!isAccount(value)) throw new Error(`account claim of ${scope}/<an e-mail> has no userId and name`);
  return [scope, await pd.emailIndex(email), await sealedAccount(pd, value)];
};

/** A `rewrite` for rewriteLog over claims.log: the records holding legacy account claims, re-keyed. */
export const rekeyClaimRecords = (pd: Sealer) => (payloads: readonly unknown[]): Promise<unknown[]> =>
  Promise.all(payloads.map(async (payload) => {
    if (!Array.isArray(payload) || !payload.every(isTriple)) throw new Error('claims.log holds a record that is not a list of [scope, key, value] claims');
    if (!payload.some(isLegacyAccount)) return undefined;
    return Promise.all(payload.map((triple) => (isLegacyAccount(triple) ? rekey(pd, triple) : Promise.resolve(triple))));
  }));
