import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import type { Db } from 'mongodb';

export interface TestServer {
  client: MongoClient;
  /** What answered, e.g. "FerretDB 1.24.2 standing in for MongoDB (reports MongoDB 7.0.42)". */
  server: string;
  ferret: boolean;
  /** A fresh database with a random name; every database handed out is dropped by `cleanup`. */
  freshDb(label: string): Db;
  cleanup(): Promise<void>;
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
  const ferretVersion = typeof info['ferretdbVersion'] === 'string' ? info['ferretdbVersion'].replace(/^v/, '') : null;
  const server = ferretVersion
    ? `FerretDB ${ferretVersion} standing in for MongoDB (reports MongoDB ${String(info['version'])})`
    : `MongoDB ${String(info['version'])}`;
  const dbs: Db[] = [];
  return {
    client,
    server,
    ferret: ferretVersion !== null,
    freshDb(label) {
      const db = client.db(`t_${label}_${randomBytes(5).toString('hex')}`);
      dbs.push(db);
      return db;
    },
    async cleanup() {
      try {
        for (const db of dbs) await db.dropDatabase();
      } finally {
        await client.close();
      }
    },
  };
}
