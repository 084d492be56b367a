import { makeLogger, envReader } from '@docshare/http';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { applyProjection, makeGenerationalReadStore, makeMongoProgress, startProjectorService } from '@docshare/projection';
import { commonConfig, connectKafka, connectMongo } from '@docshare/projection/distributed';
import { filesProjection } from './projection.ts';
import { makeFilesApp } from './app.ts';

const NAME = 'files-projector';
const logger = makeLogger(NAME);
const config = commonConfig(process.env);
const port = envReader(process.env).int('PORT', 8083);

const { client, db } = await connectMongo(config.mongoUrl, config.readDb);
const store = makeGenerationalReadStore(db, 'files', (prefix) => makeMongoReadStore(db, { prefix }));
// Indexes at start, not on the first write.
await (await store.current()).ensureIndexes();
const bus = await connectKafka(config, NAME, logger);

await startProjectorService({
  name: NAME, group: `${NAME}${config.groupSuffix}`, logger, port, host: config.host,
  consumer: bus.consumer,
  handle: (record) => applyProjection(store, filesProjection, record),
  progress: makeMongoProgress(db),
  queryApp: makeFilesApp(store, config.publicBaseUrl, logger),
  checks: { mongodb: async () => { await db.command({ ping: 1 }); } },
  close: async () => {
    await bus.close();
    await client.close();
  },
});
