import { intVar, optionalIntVar, optionalVar, stringVar, ConfigError } from '@docshare/http';
import type { z } from 'zod';
import { concern } from './concern.ts';

/** MongoDB: where, which databases, and how long an operation waits. */
export interface MongoSettings {
  mongoUrl: string;
  /** Credentials given apart from the URL (a password in MONGO_URL itself works too). */
  mongoUsername: string | undefined;
  mongoPassword: string | undefined;
  commandDb: string;
  readDb: string;
  mongoServerSelectionTimeoutMs: number;
  mongoConnectTimeoutMs: number;
  mongoSocketTimeoutMs: number;
}

/**
 * MONGO_SOCKET_TIMEOUT_MS: 10 s for every service but one. The write side's appends must know
 * whether a failed insert reached the server (an unknown outcome is read back, never answered as
 * "try again"), so it has no socket timeout by default: a frozen server holds its writes in flight
 * until it answers (new ones fail at server selection). Declared here, the one place.
 */
export const MONGO_SOCKET_TIMEOUT_MS = { default: 10_000, writeSide: 0 } as const;

const MONGO_VARS = {
  MONGO_URL: optionalVar(),
  /** Credentials apart from MONGO_URL, so the password can come from a secret file (MONGO_PASSWORD_FILE). */
  MONGO_USERNAME: optionalVar(),
  MONGO_PASSWORD: optionalVar(),
  MONGO_COMMAND_DB: stringVar('docshare'),
  MONGO_READ_DB: stringVar('docshare_read'),
  /** How long a MongoDB operation waits for a reachable server before failing (a 503). */
  MONGO_SERVER_SELECTION_TIMEOUT_MS: intVar(2_000, 100),
  /** Connecting a socket to MongoDB. */
  MONGO_CONNECT_TIMEOUT_MS: intVar(2_000, 100),
  /** The longest a sent operation waits for its answer (0: no limit); default: MONGO_SOCKET_TIMEOUT_MS above. */
  MONGO_SOCKET_TIMEOUT_MS: optionalIntVar(0),
};

export interface MongoOptions {
  /** `writeSide` for the service that appends events (MONGO_SOCKET_TIMEOUT_MS.writeSide), else the default. */
  socketTimeout?: keyof typeof MONGO_SOCKET_TIMEOUT_MS;
}

const settingsOf = (v: z.output<z.ZodObject<typeof MONGO_VARS>>, url: string, options: MongoOptions): MongoSettings => ({
  mongoUrl: url,
  mongoUsername: v.MONGO_USERNAME,
  mongoPassword: v.MONGO_PASSWORD,
  commandDb: v.MONGO_COMMAND_DB,
  readDb: v.MONGO_READ_DB,
  mongoServerSelectionTimeoutMs: v.MONGO_SERVER_SELECTION_TIMEOUT_MS,
  mongoConnectTimeoutMs: v.MONGO_CONNECT_TIMEOUT_MS,
  mongoSocketTimeoutMs: v.MONGO_SOCKET_TIMEOUT_MS ?? MONGO_SOCKET_TIMEOUT_MS[options.socketTimeout ?? 'default'],
});

const documented = { MONGO_SOCKET_TIMEOUT_MS: MONGO_SOCKET_TIMEOUT_MS.default };

/** MONGO_*: MONGO_URL required. */
export const mongo = (options: MongoOptions = {}) => concern(MONGO_VARS, (v): MongoSettings => {
  if (v.MONGO_URL === undefined) throw new ConfigError(['MONGO_URL is required']);
  return settingsOf(v, v.MONGO_URL, options);
}, documented);

/** MONGO_*, MONGO_URL optional (the edge: with it, it answers api-stats from the read model itself): undefined without it. */
export const optionalMongo = (options: MongoOptions = {}) => concern(MONGO_VARS, (v): MongoSettings | undefined =>
  (v.MONGO_URL === undefined ? undefined : settingsOf(v, v.MONGO_URL, options)), documented);
