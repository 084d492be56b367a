import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { deliveryTask, webhookStoreContract } from '../src/store/contract.ts';
import { makeMongoWebhookStore } from '../src/store/mongo-store.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer, transactionsOrChangeStreams } from '../../event-store/test/mongo-server.ts';

const server = await connectTestServer();
after(() => server.cleanup());
const T0 = 1_750_000_000_000;
const none: ReadonlySet<number> = new Set();

let dbs = 0;
webhookStoreContract('mongo', () => makeMongoWebhookStore(server.freshDb(`webhooks_contract_${++dbs}`)));

describe('mongo webhook store', () => {
  it('opening twice (a restart, a second replica) keeps the indexes as they are', async () => {
    const db = server.freshDb('webhooks_indexes');
    await makeMongoWebhookStore(db);
    await makeMongoWebhookStore(db);
    const names = (await db.collection('webhook_tasks').listIndexes().toArray()).map((index) => String(index['name'])).sort();
    assert.deepEqual(names, ['_id_', 'due', 'settled', 'webhook_message', 'webhook_state', 'webhook_time']);
  });

  it('two stores (dispatchers) on one database never both claim a task, and schedule one task once', async () => {
    const db = server.freshDb('webhooks_replicas');
    const [a, b] = [await makeMongoWebhookStore(db), await makeMongoWebhookStore(db)];
    const tasks = Array.from({ length: 40 }, (_, i) => deliveryTask(1 + (i % 4), i + 1));
    const [x, y] = await Promise.all([a.schedule(tasks), b.schedule(tasks)]);
    assert.equal(x.length + y.length, 40);
    assert.equal(new Set([...x, ...y]).size, 40);
    const claimed: string[] = [];
    for (let round = 0; round < 10; round++) {
      const got = await Promise.all([a.claimDue(T0, 7, 60_000, 'a', none), b.claimDue(T0, 7, 60_000, 'b', none)]);
      claimed.push(...got.flat().map((t) => t.id));
    }
    assert.equal(claimed.length, 40);
    assert.equal(new Set(claimed).size, 40);
  });

  it('a settle is one update of the task and one insert of the attempt; a claim one find and one findAndModify per task; no transaction', async () => {
    const { db, commands } = await server.recordedDb('webhooks_commands');
    const store = await makeMongoWebhookStore(db);
    await store.schedule([deliveryTask(1, 1)]);
    commands.splice(0);
    await store.claimDue(T0, 10, 60_000, 'd', none);
    assert.deepEqual(commands.map((c) => c.commandName), ['find', 'findAndModify']);
    commands.splice(0);
    const task = deliveryTask(1, 1);
    await store.settle(task.id, { state: 'succeeded', attempts: 1, nextAt: T0, lastError: null, lastStatus: 200, now: T0 }, {
      id: 'a1', webhookId: 1, ownerId: 1, messageId: task.messageId, eventId: task.eventId, eventType: task.eventType, attempt: 1, at: T0, outcome: 'succeeded', status: 200, latencyMs: 1, error: null,
    });
    assert.deepEqual(commands.map((c) => c.commandName).sort(), ['insert', 'update']);
    assert.deepEqual(transactionsOrChangeStreams(commands), []);
  });

  it('claimDue and the listings are served by their indexes', async () => {
    const db = server.freshDb('webhooks_plans');
    await makeMongoWebhookStore(db);
    const planOf = async (collection: string, filter: object, sort: object): Promise<string> => {
      const explained = await db.collection(collection).find(filter).sort(sort as never).limit(5).explain('queryPlanner');
      return JSON.stringify(explained);
    };
    assert.match(await planOf('webhook_tasks', { state: 'pending', nextAt: { $lte: T0 }, leaseUntil: { $lte: T0 } }, { nextAt: 1, position: 1 }), /due/);
    assert.match(await planOf('webhook_attempts', { webhookId: 1, outcome: 'failed' }, { at: -1, _id: -1 }), /webhook_outcome_at/);
    assert.match(await planOf('webhook_tasks', { webhookId: 1, state: 'dead' }, { updatedAt: -1, _id: -1 }), /webhook_state/);
  });
});
