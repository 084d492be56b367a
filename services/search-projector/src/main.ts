import { makeLogger, envReader } from '@docshare/http';
import { makeElasticsearchSearchIndex } from '@docshare/search-index/elasticsearch';
import { makeMongoProgress, startProjectorService } from '@docshare/projection';
import { commonConfig, connectKafka, connectMongo } from '@docshare/projection/distributed';
import { searchHandler } from './projection.ts';
import { makeSearchApp } from './app.ts';

const NAME = 'search-projector';
const logger = makeLogger(NAME);
const env = envReader(process.env);
const config = commonConfig(process.env);
const port = env.int('PORT', 8084);

const { client, db } = await connectMongo(config.mongoUrl, config.readDb);
const index = await makeElasticsearchSearchIndex({
  node: env.string('ELASTICSEARCH_URL'), alias: env.string('ELASTICSEARCH_ALIAS', 'docshare-files'),
});
const bus = await connectKafka(config, NAME, logger);

await startProjectorService({
  name: NAME, group: `${NAME}${config.groupSuffix}`, logger, port, host: config.host,
  consumer: bus.consumer,
  handle: searchHandler(index),
  progress: makeMongoProgress(db),
  queryApp: makeSearchApp(index, config.publicBaseUrl, logger),
  checks: {
    mongodb: async () => { await db.command({ ping: 1 }); },
    elasticsearch: () => index.ready(),
  },
  close: async () => {
    await bus.close();
    await index.close();
    await client.close();
  },
});
