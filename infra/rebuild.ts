/**
 * npm run rebuild -- <stats|files|search|all>
 *
 * Replays every event of the event store into a fresh read model (a new MongoDB generation, or a
 * new Elasticsearch index), swaps it in (generation pointer / alias), then re-applies the events
 * recorded meanwhile to the live model (idempotent: guards ignore what is already there), and
 * drops the old generation. The projectors keep running throughout.
 *
 * Env: MONGO_URL, MONGO_COMMAND_DB (docshare), MONGO_READ_DB (docshare_read), ELASTICSEARCH_URL,
 * ELASTICSEARCH_ALIAS (docshare-files).
 */
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import type { EventStore } from '@docshare/event-store';
import { openMongoEventStore } from '@docshare/event-store/mongo';
import { envReader } from '@docshare/http';
import { publishGeneration } from '@docshare/projection';
import { connectMongo } from '@docshare/projection/distributed';
import type { ReadStore } from '@docshare/read-store';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeElasticsearchSearchIndex } from '@docshare/search-index/elasticsearch';
import { filesHandler } from '@docshare/files-projector';
import { statsHandler } from '@docshare/stats-projector';
import { searchHandler } from '@docshare/search-projector';

const PAGE = 1_000;
/**
 * How far before the rebuild's end the catch-up pass starts. Positions are claimed by the insert
 * that commits the append, so nothing at or below the end can appear later; the margin is only a
 * cheap safety net (re-applying is idempotent).
 */
const CATCH_UP_MARGIN = 100;

const replay = async (
  events: EventStore, after: number, handle: (record: StoredEvent<CloudEvent>) => Promise<void>,
): Promise<{ count: number; last: number }> => {
  let position = after;
  let count = 0;
  for (;;) {
    const page = await events.readAll(position, PAGE);
    for (const record of page) await handle(record);
    count += page.length;
    const last = page.at(-1);
    if (!last || page.length < PAGE) return { count, last: last?.position ?? position };
    position = last.position;
  }
};

const env = envReader(process.env);
const which = process.argv[2] ?? '';
const models = which === 'all' ? ['stats', 'files', 'search'] : [which];
if (!models.every((m) => ['stats', 'files', 'search'].includes(m))) {
  console.error('usage: npm run rebuild -- <stats|files|search|all>');
  process.exit(2);
}

const { client, db } = await connectMongo(env.string('MONGO_URL'), env.string('MONGO_COMMAND_DB', 'docshare'));
const readDb = client.db(env.string('MONGO_READ_DB', 'docshare_read'));
const events = await openMongoEventStore(db);

const rebuildMongo = async (
  model: 'stats' | 'files', handlerFor: (store: ReadStore) => (record: StoredEvent<CloudEvent>) => Promise<void>,
): Promise<string> => {
  const began = performance.now();
  const end = await events.lastPosition();
  const prefix = `${model}_g${Date.now()}_`;
  // The same indexes as the projector's live generation (stats: none; files: the listing indexes).
  const fresh = makeMongoReadStore(readDb, { prefix, ...(model === 'stats' ? { indexes: {} } : {}) });
  await fresh.ensureIndexes();
  const handle = handlerFor(fresh);
  const { count } = await replay(events, 0, handle);
  const previous = await publishGeneration(readDb, model, prefix);
  // Let every reader's pointer cache (1 s) expire, then catch up what the live projector wrote
  // to the old generation meanwhile.
  const settleAndCatchUp = async (): Promise<number> => {
    await new Promise((r) => setTimeout(r, 2_500));
    return (await replay(events, Math.max(0, end - CATCH_UP_MARGIN), handle)).count;
  };
  let caughtUp = { count: await settleAndCatchUp() };
  if (previous && previous !== prefix) {
    // clear() drops exactly the collections of that generation (not every name it prefixes:
    // the default generation `stats_` prefixes the new `stats_g…_` too).
    const old = makeMongoReadStore(readDb, { prefix: previous, indexes: {} });
    await old.clear();
    // A projector write that was already under way against the old generation when the pointer
    // flipped may land after the first catch-up: catch up once more, and drop what it recreated.
    caughtUp = { count: caughtUp.count + await settleAndCatchUp() };
    await old.clear();
    await old.close();
  }
  await fresh.close();
  return `${model}: ${count} events replayed into ${prefix}*, swapped in, ${caughtUp.count} re-applied; ${((performance.now() - began) / 1000).toFixed(1)} s`;
};

const rebuildSearch = async (): Promise<string> => {
  const began = performance.now();
  const index = await makeElasticsearchSearchIndex({
    node: env.string('ELASTICSEARCH_URL'), alias: env.string('ELASTICSEARCH_ALIAS', 'docshare-files'),
  });
  const end = await events.lastPosition();
  const { index: fresh } = await index.rebuildInto();
  const { count } = await replay(events, 0, searchHandler(fresh));
  await fresh.publish();
  const caughtUp = await replay(events, Math.max(0, end - CATCH_UP_MARGIN), searchHandler(index));
  await index.close();
  return `search: ${count} events replayed into a new index, alias swapped, ${caughtUp.count} re-applied; ${((performance.now() - began) / 1000).toFixed(1)} s`;
};

try {
  for (const model of models) {
    const line = model === 'search' ? await rebuildSearch()
      : await rebuildMongo(model as 'stats' | 'files', model === 'stats' ? statsHandler : filesHandler);
    console.log(line);
  }
} finally {
  await events.close();
  await client.close();
}
