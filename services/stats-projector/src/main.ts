import { makeLogger, envReader } from '@docshare/http';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { applyProjection, makeGenerationalReadStore, makeMongoProgress, startProjectorService } from '@docshare/projection';
import { commonConfig, connectKafka, connectMongo } from '@docshare/projection/distributed';
import { statsProjection } from './projection.ts';
import { makeStatsApp } from './app.ts';

const NAME = 'stats-projector';
const logger = makeLogger(NAME);
const config = commonConfig(process.env);
const port = envReader(process.env).int('PORT', 8082);

const { client, db } = await connectMongo(config.mongoUrl, config.readDb);
// Stats are read by _id only: no secondary indexes.
const store = makeGenerationalReadStore(db, 'stats', (prefix) => makeMongoReadStore(db, { prefix, indexes: {} }));
// Indexes at start, not on the first write.
await (await store.current()).ensureIndexes();
const bus = await connectKafka(config, NAME, logger);

await startProjectorService({
  name: NAME, group: `${NAME}${config.groupSuffix}`, logger, port, host: config.host,
  consumer: bus.consumer,
  handle: (record) => applyProjection(store, statsProjection, record),
  progress: makeMongoProgress(db),
  queryApp: makeStatsApp(store, logger),
  checks: { mongodb: async () => { await db.command({ ping: 1 }); } },
  close: async () => {
    await bus.close();
    await client.close();
  },
});
