import { makeLogger, envReader, installLastResort } from '@docshare/http';
import { makeElasticsearchSearchIndex } from '@docshare/search-index/elasticsearch';
import { fencedByGeneration, makeMongoCheckpoints, startProjectorService } from '@docshare/projection';
import { commonConfig, connectMongo, ensureKafkaTopics, kafkaBus, registerConsumerLag } from '@docshare/projection/distributed';
import { searchHandler } from './projection.ts';
import { makeSearchApp } from './app.ts';

const NAME = 'search-projector';
const logger = makeLogger(NAME);
installLastResort(logger);
const env = envReader(process.env);
const config = commonConfig(process.env);
const port = env.int('PORT', 8084);

const { client, db } = await connectMongo(config.mongoUrl, config.readDb, config);
const index = await makeElasticsearchSearchIndex({
  node: env.string('ELASTICSEARCH_URL'), alias: env.string('ELASTICSEARCH_ALIAS', 'docshare-files'),
  // A frozen or overloaded Elasticsearch fails a search within seconds (a 503), not after 30 s.
  requestTimeoutMs: env.int('ELASTICSEARCH_REQUEST_TIMEOUT_MS', 5_000, 1),
  maxRetries: env.int('ELASTICSEARCH_MAX_RETRIES', 1, 0),
});
// Kafka is joined in the background, after the query API is up (startProjectorService).
const bus = kafkaBus(config, NAME, logger);
const group = `${NAME}${config.groupSuffix}`;

await startProjectorService({
  name: NAME, group, logger, port, host: config.host,
  consumer: bus.consumer,
  prepare: () => ensureKafkaTopics(config),
  metrics: (ops) => registerConsumerLag(ops.registry, bus, group),
  // Writes go through the alias; the fence holds them while a rebuild swaps the index behind it.
  handle: fencedByGeneration(db, 'search', () => searchHandler(index)),
  checkpoints: makeMongoCheckpoints(db), partitions: config.eventsPartitions, consistencyWaitMs: config.consistencyWaitMs,
  queryApp: makeSearchApp(index, config.publicBaseUrl, logger),
  // Searches need only the index; MongoDB (checkpoints, the rebuild fence) is needed to consume, so reported.
  checks: { elasticsearch: () => index.ready() },
  softChecks: { mongodb: async () => { await db.command({ ping: 1 }); } },
  close: async () => {
    await bus.close();
    await index.close();
    await client.close();
  },
});
