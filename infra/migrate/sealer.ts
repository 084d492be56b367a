import type { CloudEvent } from '@docshare/contracts';

/**
 * What the migration needs of the personal-data module (libs/personal-data's PersonalData): seal
 * events, seal one value, the e-mail blind index. A narrow port, so the rewrites are tested with
 * the real module and stay independent of the rest of it.
 */
export interface Sealer {
  seal(events: readonly CloudEvent[]): Promise<CloudEvent[]>;
  sealValue(userId: number, value: string, aad: string): Promise<string>;
  emailIndex(email: string): Promise<string>;
}

/** The additional data the account claim's sealed name is bound to (docs-command's users commands use the same). */
export const ACCOUNT_NAME_AAD = 'account-name';
/** A sealed value's prefix (libs/personal-data): a name already sealed is left alone. */
export const SEALED_PREFIX = 'pd1.';
