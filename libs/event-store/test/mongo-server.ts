import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import type { CommandStartedEvent, Db, Document } from 'mongodb';

export interface TestServer {
  client: MongoClient;
  /** What answered, e.g. "FerretDB 2.5.0 standing in for MongoDB (reports MongoDB 7.0.77)". */
  server: string;
  /** A fresh database with a random name; every database handed out is dropped by `cleanup`. */
  freshDb(label: string): Db;
  /**
   * A fresh database on a client of its own that records every command sent through it (the
   * driver's command monitoring), to check what an adapter asks of the server.
   */
  recordedDb(label: string): Promise<{ db: Db; commands: CommandStartedEvent[] }>;
  cleanup(): Promise<void>;
}

/** Commands that open, commit or abort a multi-document transaction. */
const TRANSACTION_COMMANDS = new Set(['commitTransaction', 'abortTransaction']);

/**
 * What in `commands` uses a multi-document transaction or a change stream, described (empty when
 * nothing does). The stand-in differs from MongoDB in both (it accepts a transaction, applies its
 * writes at once and fails the commit; it has no change streams), so docshare uses neither.
 * Implicit sessions (`lsid`, on every command) and retryable writes (`txnNumber` alone) are not
 * transactions.
 */
export function transactionsOrChangeStreams(commands: readonly CommandStartedEvent[]): string[] {
  const found: string[] = [];
  for (const { commandName, command } of commands) {
    const body = command;
    if (TRANSACTION_COMMANDS.has(commandName) || body['startTransaction'] !== undefined || body['autocommit'] !== undefined) {
      found.push(`${commandName}: a transaction`);
    }
    const pipeline = Array.isArray(body['pipeline']) ? (body['pipeline'] as Document[]) : [];
    if (pipeline.some((stage) => stage !== null && typeof stage === 'object' && '$changeStream' in stage)) {
      found.push(`${commandName}: a change stream`);
    }
  }
  return found;
}

/**
 * Connects to MONGO_URL. Integration tests never skip: without MONGO_URL (or a server behind it)
 * the test file fails with this message.
 */
export async function connectTestServer(): Promise<TestServer> {
  const url = process.env['MONGO_URL'];
  if (!url) {
    throw new Error(
      'MONGO_URL is not set: the MongoDB integration tests need a MongoDB-wire server ' +
        '(e.g. `set -a; . /root/.cache/docshare/data/stack.env; set +a`); they are never skipped',
    );
  }
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`cannot reach the MongoDB server at MONGO_URL=${url}: ${String(error)}`, { cause: error });
  }
  const info = await client.db('admin').command({ buildInfo: 1 });
  // FerretDB 2 says so in `ferretdb.version` (1.x said it in `ferretdbVersion`).
  const ferret = (info['ferretdb'] as { version?: unknown } | undefined)?.version ?? info['ferretdbVersion'];
  const ferretVersion = typeof ferret === 'string' ? ferret.replace(/^v/, '') : null;
  const server = ferretVersion
    ? `FerretDB ${ferretVersion} standing in for MongoDB (reports MongoDB ${String(info['version'])})`
    : `MongoDB ${String(info['version'])}`;
  const dbs: Db[] = [];
  const recorders: MongoClient[] = [];
  const freshDb = (label: string): Db => {
    const db = client.db(`t_${label}_${randomBytes(5).toString('hex')}`);
    dbs.push(db);
    return db;
  };
  return {
    client,
    server,
    freshDb,
    async recordedDb(label) {
      const recorder = new MongoClient(url, { serverSelectionTimeoutMS: 5_000, monitorCommands: true });
      recorders.push(recorder);
      const commands: CommandStartedEvent[] = [];
      recorder.on('commandStarted', (event) => commands.push(event));
      await recorder.connect();
      return { db: recorder.db(freshDb(label).databaseName), commands };
    },
    async cleanup() {
      try {
        for (const db of dbs) await db.dropDatabase();
      } finally {
        await Promise.all([client, ...recorders].map((c) => c.close()));
      }
    },
  };
}
