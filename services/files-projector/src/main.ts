import { makeLogger, envReader, installLastResort } from '@docshare/http';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { fencedByGeneration, makeGenerationalReadStore, makeMongoCheckpoints, perGeneration, startProjectorService } from '@docshare/projection';
import { commonConfig, connectMongo, ensureKafkaTopics, kafkaBus, registerConsumerLag } from '@docshare/projection/distributed';
import { filesHandler } from './projection.ts';
import { makeFilesApp } from './app.ts';

const NAME = 'files-projector';
const logger = makeLogger(NAME);
installLastResort(logger);
const config = commonConfig(process.env);
const port = envReader(process.env).int('PORT', 8083);

const { client, db } = await connectMongo(config.mongoUrl, config.readDb, config);
const open = perGeneration((prefix) => makeMongoReadStore(db, { prefix }));
// Queries follow the generation pointer (cached 1 s); writes are fenced per batch, so a rebuild can switch under them.
const store = makeGenerationalReadStore(db, 'files', open);
// Indexes at start, not on the first write.
await (await store.current()).ensureIndexes();
// Kafka is joined in the background, after the query API is up (startProjectorService).
const bus = kafkaBus(config, NAME, logger);
const group = `${NAME}${config.groupSuffix}`;

await startProjectorService({
  name: NAME, group, logger, port, host: config.host,
  consumer: bus.consumer,
  prepare: () => ensureKafkaTopics(config),
  metrics: (ops) => registerConsumerLag(ops.registry, bus, group),
  handle: fencedByGeneration(db, 'files', (prefix) => filesHandler(open(prefix))),
  checkpoints: makeMongoCheckpoints(db), partitions: config.eventsPartitions, consistencyWaitMs: config.consistencyWaitMs,
  queryApp: makeFilesApp(store, config.publicBaseUrl, logger),
  checks: { mongodb: async () => { await db.command({ ping: 1 }); } },
  close: async () => {
    await bus.close();
    await client.close();
  },
});
