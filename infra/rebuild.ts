/**
 * npm run rebuild -- <stats|files|search|all>
 *
 * Rebuilds a read model from the event store while everything runs, exactly:
 *
 *   1. replay every event into a fresh generation (a new MongoDB collection prefix, or a new
 *      Elasticsearch index), in pages with one bulk write each, the next page read while one is
 *      written (rebuild-replay.ts); then again from where it ended,
 *      so the rest is short;
 *   2. begin the switch (libs/projection/src/generations.ts): the live projectors finish the batch in
 *      hand and wait, so from now on only this process writes the new generation;
 *   3. replay the events recorded meanwhile into it, up to the log's end as read after step 2:
 *      every event a projector has not already written where the switch will point;
 *   4. point the model at the new generation and end the switch: the projectors go on from their
 *      committed offsets into the new generation (what they re-apply up to that end changes
 *      nothing: each document's guard is the position of the last event it applied);
 *   5. drop the old generation once readers' pointer caches have moved on (2.5 s after the
 *      switch), after every model asked for is swapped in: off the rebuild's path, and with
 *      `all` the time has passed by then. The time and rate printed are up to the swap.
 *
 * The projectors are held only for step 3 (usually well under a second); a rebuild that dies
 * during it holds them until the switch's deadline (SWITCH_MAX_MS), then they go on with the old
 * generation. Writes are never held; reads that wait for a consistency token wait that long.
 *
 * Env: MONGO_URL, MONGO_COMMAND_DB (docshare), MONGO_READ_DB (docshare_read), DATA_KEK_FILE, ELASTICSEARCH_URL,
 * ELASTICSEARCH_ALIAS (docshare-files), REBUILD_SWITCH_MAX_MS (30000). A server variable left
 * unset is taken from the servers `npm run stack` started, `DATA_DIR/infra/stack.env` (DATA_DIR:
 * ./data), so beside `npm run stack` the command works as the README types it.
 */
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { openMongoEventStore } from '@docshare/event-store/mongo';
import { intVar } from '@docshare/http';
import { beginSwitch, finishSwitch, loadProjectorModules, type DocumentProjector, type ProjectorModule, type SearchProjector } from '@docshare/projection';
import { connectMongo } from '@docshare/runtime/distributed';
import { concern, loadConfigOrExit, mongo, personalData, search } from '@docshare/runtime/config';
import { makePersonalData, parseKek, sealingEventStore } from '@docshare/personal-data';
import { openMongoKeyStore } from '@docshare/personal-data/mongo';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeElasticsearchSearchIndex } from '@docshare/search-index/elasticsearch';
import { PROJECTOR_SERVICES } from '@docshare/contracts/services';
import { resolve, join } from 'node:path';
import { existsSync } from 'node:fs';
import { parseEnvFile } from './stack/services.ts';
import { replay } from './rebuild-replay.ts';

/**
 * Every projector's read model, by its name (what the command line names): the registry's
 * projectors (libs/contracts/src/services.ts), each the module its package declares.
 */
const PROJECTORS: readonly ProjectorModule[] = await loadProjectorModules(PROJECTOR_SERVICES);

// What `npm run stack` wrote for its services, under the variables this process was not given.
const stackEnv = await parseEnvFile(join(resolve(process.env['DATA_DIR'] ?? './data'), 'infra', 'stack.env')).catch(() => ({}));
const which = process.argv[2] ?? '';
// The services' own configuration concerns (libs/runtime/src/config): MONGO_* and, to rebuild
// search, ELASTICSEARCH_*; REBUILD_SWITCH_MAX_MS is the tool's own.
// The KEK `npm run stack` keeps in DATA_DIR when none is given (as it does the JWT secret).
const stackKek = join(resolve(process.env['DATA_DIR'] ?? './data'), 'secrets', 'data-kek');
const environment = {
  ...stackEnv, ...(existsSync(stackKek) ? { DATA_KEK_FILE: stackKek } : {}), ...process.env,
};
const config = loadConfigOrExit(environment, {
  mongo: mongo(),
  // The KEK: the log's personal fields are opened as the projectors open them (issue 24), so a rebuild
  // after an erasure reproduces what the erasure left.
  personalData: personalData(),
  rebuild: concern({ REBUILD_SWITCH_MAX_MS: intVar(30_000, 1_000) }, (v) => ({ switchMaxMs: v.REBUILD_SWITCH_MAX_MS })),
});
const chosen = which === 'all' ? PROJECTORS : PROJECTORS.filter((p) => p.model === which);
if (chosen.length === 0) {
  console.error(`usage: npm run rebuild -- <${PROJECTORS.map((p) => p.model).join('|')}|all>`);
  process.exit(2);
}

const { client, db } = await connectMongo(config.mongo.mongoUrl, config.mongo.commandDb, config.mongo);
const readDb = client.db(config.mongo.readDb);
const keyStore = await openMongoKeyStore(db);
const events = sealingEventStore(await openMongoEventStore(db), makePersonalData({ store: keyStore, kek: parseKek(config.personalData.kek) }));

const switchMaxMs = config.rebuild.switchMaxMs;
/** How long readers may keep an old generation's pointer cached (generations.ts: 1 s), with a margin. */
const READER_CACHE_MS = 2_500;

/**
 * Steps 1–4 for one model: `into` applies a page to the fresh generation, `publish` points the
 * model at it (inside the switch). Returns what the report says.
 */
const rebuildInto = async (
  model: string, to: string, into: (records: readonly StoredEvent<CloudEvent>[]) => Promise<void>, publish: () => Promise<void>,
): Promise<{ count: number; held: number }> => {
  const first = await replay(events, 0, into);
  const second = await replay(events, first.last, into);
  const until = await beginSwitch(readDb, model, to, switchMaxMs);
  const heldFrom = performance.now();
  try {
    // Read after the switch began: every event a projector may still write outside the new generation is at or below it.
    const end = await events.lastPosition();
    const last = await replay(events, second.last, into);
    if (last.last < end) throw new Error(`the log ended at ${last.last}, before ${end}`);
    if (Date.now() >= until.getTime() - 1_000) throw new Error(`the switch took longer than REBUILD_SWITCH_MAX_MS (${switchMaxMs} ms)`);
    await publish();
  } catch (error) {
    await finishSwitch(readDb, model, null);
    throw error;
  }
  return { count: first.count + second.count, held: performance.now() - heldFrom };
};

/** An old generation to drop once no reader can still be on it: `at` ms since the epoch. */
interface Retired { model: string; prefix: string; at: number }
const retired: Retired[] = [];

const rebuildMongo = async (projector: DocumentProjector): Promise<string> => {
  const began = performance.now();
  const { model } = projector;
  const prefix = `${model}_g${Date.now()}_`;
  // The same indexes as the projector's live generation.
  const fresh = makeMongoReadStore(readDb, { prefix, indexes: projector.indexes });
  await fresh.ensureIndexes();
  let previous = '';
  const { count, held } = await rebuildInto(model, prefix, projector.handler(fresh), async () => {
    previous = await finishSwitch(readDb, model, prefix);
  });
  // Readers (query services, docs-command, the gateway) may keep the old pointer for up to their
  // cache time after the switch: the old generation is dropped once that has passed since the
  // switch, after every model asked for is rebuilt (dropOld), not by waiting here.
  if (previous !== prefix) retired.push({ model, prefix: previous, at: Date.now() + READER_CACHE_MS });
  await fresh.close();
  const seconds = (performance.now() - began) / 1000;
  return `${model}: ${count} events replayed into ${prefix}* (${Math.round(count / seconds)} events/s), swapped in; projectors held ${Math.round(held)} ms; ${seconds.toFixed(1)} s`;
};

/** Drops the retired generations, each once the readers' pointer caches have moved past it. */
const dropOld = async (): Promise<void> => {
  for (const old of retired) {
    const wait = old.at - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    // clear() drops exactly the collections of that generation (not every name it prefixes:
    // the default generation `stats_` prefixes the new `stats_g…_` too).
    const store = makeMongoReadStore(readDb, { prefix: old.prefix });
    await store.clear();
    await store.close();
    console.log(`${old.model}: the previous generation ${old.prefix}* dropped`);
  }
};

const rebuildSearch = async (projector: SearchProjector): Promise<string> => {
  const began = performance.now();
  const settings = loadConfigOrExit(environment, { search: search() }).search;
  const index = await makeElasticsearchSearchIndex({ node: settings.url, alias: settings.alias });
  const { index: fresh } = await index.rebuildInto();
  const to = `${projector.model}_g${Date.now()}`;
  const { count, held } = await rebuildInto(projector.model, to, projector.handler(fresh, { refresh: false }), async () => {
    await fresh.publish();
    await finishSwitch(readDb, projector.model, to);
  });
  await index.close();
  const seconds = (performance.now() - began) / 1000;
  return `search: ${count} events replayed into a new index (${Math.round(count / seconds)} events/s), alias swapped; projectors held ${Math.round(held)} ms; ${seconds.toFixed(1)} s`;
};

try {
  for (const projector of chosen) {
    console.log(projector.kind === 'search' ? await rebuildSearch(projector) : await rebuildMongo(projector));
  }
  await dropOld();
} finally {
  await events.close();
  await client.close();
}
