/**
 * The MongoDB idempotency store's cost per keyed write as keys accumulate (not a test):
 *   MONGO_URL=... node libs/idempotency-store/test/mongo-bench.ts [kept=0,1000,3000] [samples=100]
 * At each number of keys kept, times what a write with a new key costs the store (begin, then
 * complete) and what a replay costs (begin on a completed key), beside the ceiling in the same
 * run: the primitives that path is made of, sent directly to the same collection (a lookup by a
 * string `_id` that finds nothing, as a new key's does, and an insert). Every one is an `_id`
 * index operation, so neither should grow with the keys kept; the ratio to the ceiling is what to
 * watch (docs/mongodb.md).
 */
import { randomUUID } from 'node:crypto';
import { connectTestServer } from '../../event-store/test/mongo-server.ts';
import { openMongoIdempotencyStore } from '../src/mongo-idempotency-store.ts';

const KEPT = (process.argv[2] ?? '0,1000,3000').split(',').map(Number);
const SAMPLES = Number(process.argv[3] ?? 100);
const LEASE = 60_000;
const DAY = 86_400_000;

const server = await connectTestServer();
try {
  const db = server.freshDb('idempotency_bench');
  const store = await openMongoIdempotencyStore(db);
  const raw = db.collection<{ _id: string }>('idempotency_keys');
  const answer = { status: 201, headers: { 'x-docshare-consistency': '42' }, body: '{"status":"success","comment_id":1}' };
  const at = Date.now();
  const write = async (key: string): Promise<void> => {
    const begun = await store.begin(key, at, LEASE);
    if (begun.state !== 'started') throw new Error(`a new key was ${begun.state}`);
    if (!await store.complete(key, begun.token, { fingerprint: 'f', answer, expiresAt: at + DAY })) throw new Error('not completed');
  };
  const perOp = async (op: (i: number) => Promise<unknown>): Promise<number> => {
    const started = performance.now();
    for (let i = 0; i < SAMPLES; i++) await op(i);
    return (performance.now() - started) / SAMPLES;
  };

  console.log(`MongoDB idempotency store on ${server.server}, ${SAMPLES} samples each, ms per operation\n`);
  console.log('keys kept | new key: begin+complete | replay: begin | ceiling: lookup (miss) | insert | 3 lookups + 2 inserts | ratio');
  let kept = 0;
  for (const target of KEPT) {
    while (kept < target) await write(`u/${kept++}`);
    const fresh = Array.from({ length: SAMPLES }, () => `u/${randomUUID()}`);
    const newKey = await perOp((i) => write(fresh[i] as string));
    kept += SAMPLES;
    const replay = await perOp((i) => store.begin(fresh[i] as string, at + 1, LEASE));
    const lookup = await perOp(() => raw.findOne({ _id: `done/u/${randomUUID()}` }));
    const insert = await perOp(() => raw.insertOne({ _id: `bench/${randomUUID()}` }));
    const ceiling = 3 * lookup + 2 * insert;
    console.log([
      String(target).padStart(9), newKey.toFixed(2).padStart(23), replay.toFixed(2).padStart(13),
      lookup.toFixed(2).padStart(21), insert.toFixed(2).padStart(6), ceiling.toFixed(2).padStart(21), (newKey / ceiling).toFixed(2).padStart(5),
    ].join(' | '));
  }
  await store.close();
} finally {
  await server.cleanup();
}
