/**
 * A projector module as its own service: its read model on MongoDB or Elasticsearch, its events
 * from Kafka (@docshare/runtime/distributed), for any projector module. Each projector's main.ts
 * is one call:
 *
 *   await serveProjector(statsProjector, env);  // env: the process environment, read by the main
 *
 * Its own entry point (@docshare/projection/distributed), so embedded mode never loads the drivers.
 */
import { installLastResort, makeLogger, type ReadinessCheck } from '@docshare/http';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeElasticsearchSearchIndex } from '@docshare/search-index/elasticsearch';
import { makeMongoCheckpoints } from '@docshare/consistency';
import { registerConsumerLag } from '@docshare/runtime';
import { consistency, kafka, loadConfigOrExit, mongo, personalData, search, service } from '@docshare/runtime/config';
import { makePersonalData, openingConsumer, parseKek } from '@docshare/personal-data';
import { openMongoKeyStore } from '@docshare/personal-data/mongo';
import { connectMongo, countStoreCommands, ensureKafkaTopics, kafkaBus } from '@docshare/runtime/distributed';
import { fencedByGeneration, makeGenerationalReadStore, perGeneration, readPointer } from './generations.ts';
import { registerReadModelGenerations } from './metrics.ts';
import { startProjectorService, type ProjectorService } from './service.ts';
import type { ProjectorModule } from './module.ts';

/** Starts `module` as its own service, configured by `env` (parsed once, here); a bad configuration exits with CONFIG_ERROR_EXIT_CODE. */
export const serveProjector = async (module: ProjectorModule, env: NodeJS.ProcessEnv): Promise<ProjectorService> => {
  const fatal = (message: string): void => makeLogger(module.name).fatal(message);
  const concerns = {
    service: service({ port: module.port, publicPort: 'edge' }), mongo: mongo(), kafka: kafka(), consistency: consistency(),
    // The KEK: events come with personal fields sealed per person (issue 24), opened before projecting.
    personalData: personalData(),
  };
  // Read once, before anything connects: a search projector's ELASTICSEARCH_* with the rest.
  const config = loadConfigOrExit(env, module.kind === 'search' ? { ...concerns, search: search() } : concerns, fatal);
  const logger = makeLogger(module.name, config.service.logLevel);
  installLastResort(logger);
  const { port, host, metrics: metricsAt } = config.service;
  const context = { publicBaseUrl: config.service.publicBaseUrl, logger };
  const { client, db } = await connectMongo(config.mongo.mongoUrl, config.mongo.readDb, config.mongo);
  const ping = async (): Promise<void> => {
    await db.command({ ping: 1 });
  };

  interface Model {
    handle: ReturnType<typeof fencedByGeneration>;
    queryApp: ReturnType<ProjectorModule['queryApp']>;
    checks: Record<string, ReadinessCheck>;
    softChecks: Record<string, ReadinessCheck>;
    close(): Promise<void>;
  }
  const model = await (async (): Promise<Model> => {
    if (module.kind === 'documents') {
      const open = perGeneration((prefix) => makeMongoReadStore(db, { prefix, indexes: module.indexes }));
      // Queries follow the generation pointer (cached 1 s); writes are fenced per batch, so a rebuild can switch under them.
      const store = makeGenerationalReadStore(db, module.model, open);
      await (await store.current()).ensureIndexes(); // at start, not on the first write
      return {
        handle: fencedByGeneration(db, module.model, (prefix) => module.handler(open(prefix))),
        queryApp: module.queryApp(store, context),
        checks: { mongodb: ping },
        softChecks: {},
        close: async () => {},
      };
    }
    if (!('search' in config)) throw new Error('a search projector is configured with its search concern');
    const es = config.search;
    const index = await makeElasticsearchSearchIndex({ node: es.url, alias: es.alias, requestTimeoutMs: es.requestTimeoutMs, maxRetries: es.maxRetries });
    return {
      // Writes go through the alias; the fence holds them while a rebuild swaps the index behind it.
      handle: fencedByGeneration(db, module.model, () => module.handler(index)),
      queryApp: module.queryApp(index, context),
      // Searches need only the index; MongoDB (checkpoints, the rebuild fence) is needed to consume, so reported.
      checks: { elasticsearch: () => index.ready() },
      softChecks: { mongodb: ping },
      close: () => index.close(),
    };
  })();

  // Kafka is joined in the background, after the query API is up (startProjectorService). The data
  // keys are in the write side's database (data_keys), read-only here.
  const bus = kafkaBus(config.kafka, module.name, logger);
  const keyStore = await openMongoKeyStore(client.db(config.mongo.commandDb));
  const personal = makePersonalData({ store: keyStore, kek: parseKek(config.personalData.kek) });
  const group = `${module.name}${config.kafka.groupSuffix}`;
  return startProjectorService({
    name: module.name, group, logger, port, host, http: config.service.http,
    consumer: openingConsumer(bus.consumer, personal),
    prepare: () => ensureKafkaTopics(config.kafka),
    metrics: (ops) => {
      countStoreCommands(client, ops.registry);
      registerConsumerLag(ops.registry, bus, [group]);
      registerReadModelGenerations(ops.registry, { [module.model]: async () => (await readPointer(db, module.model)).prefix });
    },
    metricsAt,
    handle: model.handle,
    checkpoints: makeMongoCheckpoints(db), partitions: config.kafka.eventsPartitions, consistencyWaitMs: config.consistency.consistencyWaitMs,
    queryApp: model.queryApp,
    checks: model.checks,
    softChecks: model.softChecks,
    close: async () => {
      await bus.close();
      await model.close();
      await keyStore.close();
      await client.close();
    },
  });
};
