import { hostname } from 'node:os';
import { MongoClient, type Db } from 'mongodb';

/** How long MongoDB operations wait before failing (the mongo configuration's MONGO_*_TIMEOUT_MS, libs/runtime/src/config/mongo.ts). */
export interface MongoTimeouts {
  mongoServerSelectionTimeoutMs: number;
  mongoConnectTimeoutMs: number;
  mongoSocketTimeoutMs: number;
  /** Credentials given apart from the URL (a password in MONGO_URL itself works too). */
  mongoUsername?: string | undefined;
  mongoPassword?: string | undefined;
}

/**
 * A connected MongoDB client and one of its databases.
 *
 * Timeouts make a server that is down or frozen a fast 503 instead of a request that hangs: no
 * reachable server fails after `mongoServerSelectionTimeoutMs` (the driver's default is 30 s),
 * and an operation sent to a server that stops answering fails after `mongoSocketTimeoutMs`.
 * Options in MONGO_URL itself win.
 */
export const connectMongo = async (
  url: string, dbName: string,
  timeouts: MongoTimeouts = { mongoServerSelectionTimeoutMs: 2_000, mongoConnectTimeoutMs: 2_000, mongoSocketTimeoutMs: 10_000 },
  /**
   * false for a writer that must know whether a failed write was sent (the write side): with
   * retryable writes the driver may send an insert, lose the connection, and then fail the
   * retry's server selection, which would look like "never sent".
   */
  options: { retryWrites?: boolean } = {},
): Promise<{ client: MongoClient; db: Db }> => {
  // An acknowledged append or claim must survive a mongod crash: journaled, and on a replica set
  // on a majority. A write concern in MONGO_URL itself wins.
  const explicit = /[?&](w|journal|wtimeoutMS)=/i.test(url);
  const client = new MongoClient(url, {
    appName: `docshare-${hostname()}`,
    // commandStarted events: docshare_store_commands_total (countStoreCommands).
    monitorCommands: true,
    serverSelectionTimeoutMS: timeouts.mongoServerSelectionTimeoutMs,
    connectTimeoutMS: timeouts.mongoConnectTimeoutMs,
    socketTimeoutMS: timeouts.mongoSocketTimeoutMs,
    ...(options.retryWrites === undefined || /[?&]retryWrites=/i.test(url) ? {} : { retryWrites: options.retryWrites }),
    ...(explicit ? {} : { writeConcern: { w: 'majority', journal: true } }),
    ...(timeouts.mongoPassword === undefined ? {} : { auth: { username: timeouts.mongoUsername ?? 'docshare', password: timeouts.mongoPassword } }),
  });
  await client.connect();
  return { client, db: client.db(dbName) };
};

/**
 * The relay's lease owner: stable across restarts of one instance (INSTANCE_ID, else host name +
 * port), so a restarted write side takes its own unexpired lease back at once instead of
 * waiting for it to lapse. Two live processes must never share one: on one host they differ by port.
 */
export const instanceId = (env: NodeJS.ProcessEnv, port: number): string =>
  env.INSTANCE_ID !== undefined && env.INSTANCE_ID !== '' ? env.INSTANCE_ID : `${hostname()}:${port}`;
