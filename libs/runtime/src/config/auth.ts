import { ConfigError, intVar, optionalVar } from '@docshare/http';
import { concern } from './concern.ts';

const AUTH_VARS = {
  /** HS256 key of the tokens and the signed download links, at least 32 bytes. */
  JWT_SECRET: optionalVar(),
  /** Token lifetime. */
  JWT_TTL_SECONDS: intVar(86_400, 1),
};

/** JWT_SECRET (required) and JWT_TTL_SECONDS: the write side, which verifies and signs. */
export const auth = () => concern(AUTH_VARS, (v) => {
  if (v.JWT_SECRET === undefined) throw new ConfigError(['JWT_SECRET is required']);
  return { jwtSecret: v.JWT_SECRET, jwtTtlSeconds: v.JWT_TTL_SECONDS };
});

/** JWT_SECRET (optional: `npm start` generates one into DATA_DIR) and JWT_TTL_SECONDS. */
export const optionalAuth = () => concern(AUTH_VARS, (v) => ({ jwtSecret: v.JWT_SECRET, jwtTtlSeconds: v.JWT_TTL_SECONDS }));

/**
 * The edge's: JWT_SECRET, or JWT_SECRET_FILE, a file it creates with a new secret when missing
 * (so JWT_SECRET_FILE is a variable of its own here, not the generic `X_FILE` secret).
 */
export const authOrSecretFile = () => concern({
  ...AUTH_VARS,
  JWT_SECRET_FILE: optionalVar(),
}, (v): { jwtTtlSeconds: number; secret: { kind: 'value'; value: string } | { kind: 'file'; path: string } } => {
  if (v.JWT_SECRET !== undefined) return { jwtTtlSeconds: v.JWT_TTL_SECONDS, secret: { kind: 'value', value: v.JWT_SECRET } };
  if (v.JWT_SECRET_FILE !== undefined) return { jwtTtlSeconds: v.JWT_TTL_SECONDS, secret: { kind: 'file', path: v.JWT_SECRET_FILE } };
  throw new ConfigError(['JWT_SECRET or JWT_SECRET_FILE is required']);
});
