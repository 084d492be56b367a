/*
 * Dependencies that die or freeze, against the real servers but without touching them (other
 * suites share them): every client goes through a fault proxy (fault-proxy.ts) that the test
 * switches to "down" (a killed server), "freeze" (a SIGSTOPped one) or "mute" (answers lost).
 * Each failure must reject (never hang: the file's timeouts catch a hang), be recognised as a
 * dependency outage, and become the spec's JSON 503 with Retry-After; an append whose answer was
 * lost must find out it was stored instead of failing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import express from 'express';
import { makeMinioBlobStore } from '@docshare/blob-store/minio';
import { AppendOutcomeUnknown, openMongoEventStore } from '@docshare/event-store/mongo';
import { makeElasticsearchSearchIndex } from '@docshare/search-index/elasticsearch';
import { testEvent } from '@docshare/contracts/testing';
import { errorHandler, failureMessage, isTransient, makeLogger, RETRY_AFTER_SECONDS } from '@docshare/http';
import { connectMongo } from '@docshare/runtime/distributed';
import { startFaultProxy, type FaultProxy } from './fault-proxy.ts';

const logger = makeLogger('test', 'silent');
const need = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: this file needs the real servers (npm run test:real, or source a stack.env); it never skips`);
  return value;
};
const hostPort = (url: string): { host: string; port: number } => {
  const parsed = new URL(url.includes('://') ? url : `tcp://${url}`);
  return { host: parsed.hostname, port: Number(parsed.port) };
};

/** What the services answer for `error`: status, Retry-After and body, through the real error handler. */
const answerFor = async (error: unknown, message?: string) => {
  const app = express();
  if (message) app.use(failureMessage(message));
  app.get('/', () => { throw error; });
  app.use(errorHandler(logger));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
  } finally {
    server.close();
  }
};

const rejection = async (work: Promise<unknown>): Promise<unknown> => {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
};

const assertOutage = async (error: unknown, message = 'Error during search') => {
  assert.equal(isTransient(error), true, `not recognised as an outage: ${String(error)} (${(error as Error).name})`);
  assert.deepEqual(await answerFor(error, message), {
    status: 503, retryAfter: String(RETRY_AFTER_SECONDS), body: { status: 'error', message },
  });
};

describe('MongoDB down or frozen', { timeout: 120_000 }, () => {
  let proxy: FaultProxy;
  const dbName = `outages_${randomBytes(4).toString('hex')}`;
  const timeouts = { mongoServerSelectionTimeoutMs: 1_000, mongoConnectTimeoutMs: 1_000, mongoSocketTimeoutMs: 1_500 };
  before(async () => { proxy = await startFaultProxy(hostPort(need('MONGO_URL'))); });
  after(async () => {
    const { client, db } = await connectMongo(need('MONGO_URL'), dbName);
    await db.dropDatabase().catch(() => {});
    await client.close();
    await proxy.close();
  });

  it('a query fails with a 503 when the server is down, and works again when it is back', async () => {
    proxy.set('forward');
    const { client, db } = await connectMongo(`mongodb://${proxy.address}/`, dbName, timeouts);
    try {
      await db.command({ ping: 1 });
      proxy.set('down');
      await assertOutage(await rejection(db.collection('x').findOne({ _id: 'a' as never })), 'Error during deletion');
      proxy.set('forward');
      for (;;) {
        // The driver finds the server again by itself.
        if (await db.command({ ping: 1 }).then(() => true, () => false)) break;
      }
    } finally {
      await client.close();
    }
  });

  it('a query sent to a frozen server fails with a 503 after the socket timeout instead of hanging', async () => {
    proxy.set('forward');
    const { client, db } = await connectMongo(`mongodb://${proxy.address}/`, dbName, timeouts);
    try {
      await db.command({ ping: 1 });
      proxy.set('freeze');
      await assertOutage(await rejection(db.collection('x').findOne({ _id: 'a' as never })), 'Internal server error');
    } finally {
      proxy.set('forward');
      await client.close();
    }
  });

  it('an append whose answer was lost is read back and acknowledged, once', async () => {
    proxy.set('forward');
    const { client, db } = await connectMongo(`mongodb://${proxy.address}/`, dbName, { ...timeouts, mongoSocketTimeoutMs: 0 }, { retryWrites: false });
    const direct = await connectMongo(need('MONGO_URL'), dbName);
    try {
      const store = await openMongoEventStore(db, { outcomeRetryMs: 50 });
      const stream = `file-${randomBytes(3).toString('hex')}`;
      await store.append(stream, 0, [testEvent(stream, 1)]);
      proxy.set('mute');
      const appending = store.append(stream, 1, [testEvent(stream, 2)]);
      // The insert reaches the server and is stored; its answer is lost, then the connection drops.
      while (!(await direct.db.collection('events').findOne({ stream, version: 2 }))) await new Promise((r) => setTimeout(r, 20));
      proxy.set('forward');
      proxy.reset();
      const result = await appending;
      assert.equal(result.version, 2);
      const events = await store.readStream(stream);
      assert.deepEqual(events.map((e) => e.event.streamversion), [1, 2]);
      await store.close();
    } finally {
      proxy.set('forward');
      await client.close();
      await direct.client.close();
    }
  });

  it('an append that never reached the server fails with a 503 and stores nothing', async () => {
    proxy.set('forward');
    const { client, db } = await connectMongo(`mongodb://${proxy.address}/`, dbName, { ...timeouts, mongoSocketTimeoutMs: 0 }, { retryWrites: false });
    try {
      const store = await openMongoEventStore(db, { outcomeRetryMs: 50 });
      const stream = `file-${randomBytes(3).toString('hex')}`;
      await store.append(stream, 0, [testEvent(stream, 1)]);
      proxy.set('down');
      // The driver learns that the server is gone (its pooled connections were reset).
      await rejection(db.command({ ping: 1 }));
      await assertOutage(await rejection(store.append(stream, 1, [testEvent(stream, 2)])), 'Internal server error');
      proxy.set('forward');
      for (;;) {
        const events = await store.readStream(stream).catch(() => null);
        if (events) {
          assert.deepEqual(events.map((e) => e.event.streamversion), [1]);
          break;
        }
      }
      await store.close();
    } finally {
      proxy.set('forward');
      await client.close();
    }
  });
});

describe('MongoDB gone for longer than an append can wait', { timeout: 120_000 }, () => {
  it('an append whose outcome stays unknown is not answered as "try again"', async () => {
    const proxy = await startFaultProxy(hostPort(need('MONGO_URL')));
    const dbName = `outages_${randomBytes(4).toString('hex')}`;
    const { client, db } = await connectMongo(`mongodb://${proxy.address}/`, dbName,
      { mongoServerSelectionTimeoutMs: 500, mongoConnectTimeoutMs: 500, mongoSocketTimeoutMs: 0 }, { retryWrites: false });
    try {
      const store = await openMongoEventStore(db, { outcomeTimeoutMs: 1_000, outcomeRetryMs: 50 });
      const stream = `file-${randomBytes(3).toString('hex')}`;
      proxy.set('mute');
      const appending = rejection(store.append(stream, 0, [testEvent(stream, 1)]));
      await new Promise((resolve) => setTimeout(resolve, 200));
      proxy.set('down');
      const error = await appending;
      assert.ok(error instanceof AppendOutcomeUnknown, String(error));
      assert.equal(isTransient(error), false);
      assert.equal((await answerFor(error, 'Internal server error')).status, 500);
    } finally {
      proxy.set('forward');
      await client.close();
      const direct = await connectMongo(need('MONGO_URL'), dbName);
      await direct.db.dropDatabase().catch(() => {});
      await direct.client.close();
      await proxy.close();
    }
  });
});

describe('Elasticsearch down or frozen', { timeout: 120_000 }, () => {
  let proxy: FaultProxy;
  const alias = `outages-${randomBytes(4).toString('hex')}`;
  before(async () => { proxy = await startFaultProxy(hostPort(need('ELASTICSEARCH_URL'))); });
  after(async () => { await proxy.close(); });

  it('a search fails with a 503 while Elasticsearch is frozen or down, and works once it is back', async () => {
    // The index is prepared first straight against Elasticsearch with the default timeouts: creating
    // it can take seconds on a busy machine, which is not the outage under test. The client behind
    // the proxy then only finds it there; its short timeout is for the freeze.
    await (await makeElasticsearchSearchIndex({ node: need('ELASTICSEARCH_URL'), alias })).close();
    const index = await makeElasticsearchSearchIndex({ node: `http://${proxy.address}`, alias, requestTimeoutMs: 3_000, maxRetries: 1 });
    try {
      await index.search('anything', { from: 0, size: 10 });
      proxy.set('freeze');
      await assertOutage(await rejection(index.search('anything', { from: 0, size: 10 })));
      await assertOutage(await rejection(index.ready()), 'Error during search');
      proxy.set('down');
      await assertOutage(await rejection(index.search('anything', { from: 0, size: 10 })));
      proxy.set('forward');
      assert.equal((await index.search('anything', { from: 0, size: 10 })).total, 0);
    } finally {
      proxy.set('forward');
      await index.clear().catch(() => {});
      await index.close();
    }
  });
});

describe('MinIO down or frozen', { timeout: 120_000 }, () => {
  let proxy: FaultProxy;
  before(async () => { proxy = await startFaultProxy(hostPort(need('MINIO_ENDPOINT'))); });
  after(async () => { await proxy.close(); });

  it('stat, get and put fail with a 503 while MinIO is frozen or down, and work once it is back', async () => {
    const blobs = await makeMinioBlobStore({
      endPoint: `http://${proxy.address}`, accessKey: need('MINIO_ACCESS_KEY'), secretKey: need('MINIO_SECRET_KEY'),
      bucket: `outages-${randomBytes(4).toString('hex')}`, requestTimeoutMs: 1_000,
    });
    const key = `k-${randomBytes(4).toString('hex')}`;
    await blobs.put(key, Readable.from([Buffer.from('bytes')]), 5, 'text/plain');
    for (const mode of ['freeze', 'down'] as const) {
      proxy.set(mode);
      await assertOutage(await rejection(blobs.stat(key)), 'Internal server error');
      await assertOutage(await rejection(blobs.get(key)), 'Internal server error');
      await assertOutage(await rejection(blobs.put(`${key}-2`, Readable.from([Buffer.from('more')]), 4, 'text/plain')), 'Internal server error');
    }
    proxy.set('forward');
    assert.deepEqual(await blobs.stat(key), { size: 5, contentType: 'text/plain' });
    await blobs.remove(key);
  });
});
