import { ConfigError, optionalVar } from '@docshare/http';
import { concern } from './concern.ts';

const PERSONAL_DATA_VARS = {
  /**
   * The key-encryption key(s) that wrap every person's data key (issue 24): one key per line (or
   * comma), `<kid>:<base64url of 32 bytes>` or a bare base64url key; the first wraps new keys, the
   * others only open keys wrapped before a rotation. Give it as DATA_KEK_FILE (a secret file);
   * never store it beside the data it protects.
   */
  DATA_KEK: optionalVar(),
};

/** DATA_KEK (or DATA_KEK_FILE), required: every distributed service that writes or reads events. */
export const personalData = () => concern(PERSONAL_DATA_VARS, (v) => {
  if (v.DATA_KEK === undefined) throw new ConfigError(['DATA_KEK or DATA_KEK_FILE is required']);
  return { kek: v.DATA_KEK };
});

/** DATA_KEK optional: `npm start` generates one into DATA_DIR/secrets/data-kek when unset. */
export const optionalPersonalData = () => concern(PERSONAL_DATA_VARS, (v) => ({ kek: v.DATA_KEK }));
