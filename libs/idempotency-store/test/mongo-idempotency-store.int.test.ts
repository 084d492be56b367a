import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { idempotencyStoreContract } from '../src/contract.ts';
import { openMongoIdempotencyStore } from '../src/mongo-idempotency-store.ts';
// One helper for every MongoDB integration suite: connects to MONGO_URL or fails the file.
import { connectTestServer } from '../../event-store/test/mongo-server.ts';

const server = await connectTestServer();
after(() => server.cleanup());

it('reports which MongoDB wire server answered', (t) => {
  t.diagnostic(`MongoDB wire server: ${server.server}`);
  assert.ok(server.server.length > 0);
});

const db = server.freshDb('idempotency_contract');
// A second store on the same database: a restart, or another docs-command replica.
idempotencyStoreContract('mongo', () => openMongoIdempotencyStore(db), async (closed) => {
  await closed.close();
  return openMongoIdempotencyStore(db);
});
