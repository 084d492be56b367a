/**
 * A projector module as its own service: its read model on MongoDB or Elasticsearch, its events
 * from Kafka (@docshare/runtime/distributed), for any projector module. Each projector's main.ts
 * is one call:
 *
 *   await serveProjector(statsProjector);
 *
 * Its own entry point (@docshare/projection/distributed), so embedded mode never loads the drivers.
 */
import {
  configOrExit, HTTP_VARS, installLastResort, intVar, makeLogger, metricsListenOrExit, optionalVar, stringVar, type ReadinessCheck,
} from '@docshare/http';
import { makeMongoReadStore } from '@docshare/read-store/mongo';
import { makeElasticsearchSearchIndex } from '@docshare/search-index/elasticsearch';
import { makeMongoCheckpoints } from '@docshare/consistency';
import { registerConsumerLag } from '@docshare/runtime';
import { COMMON_VARS, commonConfig, connectMongo, countStoreCommands, ensureKafkaTopics, kafkaBus } from '@docshare/runtime/distributed';
import { fencedByGeneration, makeGenerationalReadStore, perGeneration, readPointer } from './generations.ts';
import { registerReadModelGenerations } from './metrics.ts';
import { startProjectorService, type ProjectorService } from './service.ts';
import type { ProjectorModule } from './module.ts';

/** Every variable a projector service reads (README: the services' environment)... */
export const projectorVars = (module: ProjectorModule) => ({ ...COMMON_VARS, ...HTTP_VARS, PORT: intVar(module.port), LOG_LEVEL: optionalVar() });

/** ...and those of the search projector besides. */
export const SEARCH_VARS = {
  ELASTICSEARCH_URL: stringVar(),
  ELASTICSEARCH_ALIAS: stringVar('docshare-files'),
  // A frozen or overloaded Elasticsearch fails a search within seconds (a 503), not after 30 s.
  ELASTICSEARCH_REQUEST_TIMEOUT_MS: intVar(5_000, 1),
  ELASTICSEARCH_MAX_RETRIES: intVar(1, 0),
};

/** Starts `module` as its own service, configured by `env`; a bad configuration exits with CONFIG_ERROR_EXIT_CODE. */
export const serveProjector = async (module: ProjectorModule, env: NodeJS.ProcessEnv = process.env): Promise<ProjectorService> => {
  const logger = makeLogger(module.name);
  installLastResort(logger);
  const { PORT: port } = configOrExit(projectorVars(module), env, (message) => logger.fatal(message));
  const metricsAt = metricsListenOrExit(env, port, (message) => logger.fatal(message));
  const config = commonConfig(env);
  const context = { publicBaseUrl: config.publicBaseUrl, logger };
  const { client, db } = await connectMongo(config.mongoUrl, config.readDb, config);
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
    const search = configOrExit(SEARCH_VARS, env, (message) => logger.fatal(message));
    const index = await makeElasticsearchSearchIndex({
      node: search.ELASTICSEARCH_URL, alias: search.ELASTICSEARCH_ALIAS,
      requestTimeoutMs: search.ELASTICSEARCH_REQUEST_TIMEOUT_MS, maxRetries: search.ELASTICSEARCH_MAX_RETRIES,
    });
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

  // Kafka is joined in the background, after the query API is up (startProjectorService).
  const bus = kafkaBus(config, module.name, logger);
  const group = `${module.name}${config.groupSuffix}`;
  return startProjectorService({
    name: module.name, group, logger, port, host: config.host,
    consumer: bus.consumer,
    prepare: () => ensureKafkaTopics(config),
    metrics: (ops) => {
      countStoreCommands(client, ops.registry);
      registerConsumerLag(ops.registry, bus, [group]);
      registerReadModelGenerations(ops.registry, { [module.model]: async () => (await readPointer(db, module.model)).prefix });
    },
    metricsAt,
    handle: model.handle,
    checkpoints: makeMongoCheckpoints(db), partitions: config.eventsPartitions, consistencyWaitMs: config.consistencyWaitMs,
    queryApp: model.queryApp,
    checks: model.checks,
    softChecks: model.softChecks,
    close: async () => {
      await bus.close();
      await model.close();
      await client.close();
    },
  });
};
