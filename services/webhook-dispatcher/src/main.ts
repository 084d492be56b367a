/**
 * The webhook dispatcher as its own service (distributed mode): consumes the events topic as the
 * group `webhook-dispatcher`, keeps its delivery state in MongoDB (the WebhookStore, in the write
 * side's database: docs-command lists deliveries and dead letters from it), waits for the read
 * models (every projector's checkpoints) before a batch's first attempts, delivers over HTTP
 * (the SSRF guard at connect time), and records disabled endpoints through docs-command's
 * internal route (DOCS_COMMAND_URL, INTERNAL_TOKEN). Serves /healthz, /readyz and /metrics; no API.
 */
import { makeConsistencyGate, makeMongoCheckpoints } from '@docshare/consistency';
import { PROJECTOR_SERVICES } from '@docshare/contracts/services';
import { installLastResort, makeLogger } from '@docshare/http';
import { consume, deadLetterCounter, registerConsumerLag, startConsumerService } from '@docshare/runtime';
import { connectMongo, countStoreCommands, ensureKafkaTopics, instanceId, kafkaBus } from '@docshare/runtime/distributed';
import { consistency, kafka, loadConfigOrExit, mongo, personalData, recorder, service as serviceVars, webhooksWithKey } from '@docshare/runtime/config';
import { makePersonalData, openingConsumer, parseKek } from '@docshare/personal-data';
import { openMongoKeyStore } from '@docshare/personal-data/mongo';
import { makeDeliverer, makeSecretSealer } from '@docshare/webhooks';
import { makeMongoWebhookStore } from '@docshare/webhooks/store/mongo';
import { makeDispatcher, type Dispatcher } from './dispatcher.ts';
import { makeHttpRecorder } from './http-recorder.ts';
import { registerWebhookMetrics, type WebhookMetrics } from './metrics.ts';
import { DISPATCHER_OPENS, webhookDispatcher } from './module.ts';
import { makeUrlCheckApp } from './url-check.ts';

/** Everything the dispatcher reads from its environment (README: the services' environment), read once. */
const config = loadConfigOrExit(process.env, {
  service: serviceVars({ port: webhookDispatcher.port, publicPort: 'edge' }),
  mongo: mongo(),
  kafka: kafka(),
  /** DOCS_COMMAND_URL and docs-command's INTERNAL_TOKEN: what lets it record a disabled endpoint. */
  recorder: recorder(),
  /** WEBHOOK_*; WEBHOOK_SECRET_KEY required: the secrets in the events are sealed with it. */
  webhooks: webhooksWithKey(),
  consistency: consistency(),
  /** The KEK: events come with personal fields sealed per person (issue 24); an endpoint's URL is one. */
  personalData: personalData(),
}, (message) => makeLogger(webhookDispatcher.name).fatal(message));
const logger = makeLogger(webhookDispatcher.name, config.service.logLevel);
installLastResort(logger);
const kafkaSettings = config.kafka;
const group = `${webhookDispatcher.name}${kafkaSettings.groupSuffix}`;

const { client, db } = await connectMongo(config.mongo.mongoUrl, config.mongo.commandDb, config.mongo);
const readDb = client.db(config.mongo.readDb);
const store = await makeMongoWebhookStore(db);
const deliverer = makeDeliverer({ policy: config.webhooks.policy, timeoutMs: config.webhooks.timeoutMs });

// A batch's first attempts wait until every projector has applied it (bounded by
// CONSISTENCY_WAIT_MS): a receiver that calls the API on a webhook sees what it was told about.
const checkpoints = makeMongoCheckpoints(readDb);
// Polled every 50 ms, not the query services' 5: under a steady stream a batch is always waiting,
// and three gates at 5 ms were 600 checkpoint reads a second, the store's busiest load in the
// webhooks bench. 50 ms is a twentieth of the first attempt's one-second budget.
const GATE_POLL_MS = 50;
const gates = PROJECTOR_SERVICES.map((projector) => ({
  name: projector.name,
  gate: makeConsistencyGate(checkpoints, `${projector.name}${kafkaSettings.groupSuffix}`, kafkaSettings.eventsPartitions, GATE_POLL_MS),
}));
const readModelsReached = async (position: number): Promise<void> => {
  const reached = await Promise.all(gates.map(async ({ name, gate }) => ({ name, ok: await gate.wait(position, config.consistency.consistencyWaitMs) })));
  const lagging = reached.filter((r) => !r.ok).map((r) => r.name);
  if (lagging.length > 0) logger.warn({ position, lagging }, 'read models behind the webhook batch; delivering anyway');
};

const bus = kafkaBus(kafkaSettings, webhookDispatcher.name, logger);
const keyStore = await openMongoKeyStore(db);
const consumer = openingConsumer(bus.consumer, makePersonalData({ store: keyStore, kek: parseKek(config.personalData.kek) }), { only: DISPATCHER_OPENS });
// Made once the service's metrics registry exists (startConsumerService calls `metrics` before `join`).
let metrics: WebhookMetrics | undefined;
let deadLetters: (() => void) | undefined;
let dispatcher: Dispatcher | undefined;
const dispatcherOf = (): Dispatcher => (dispatcher ??= makeDispatcher({
  store, sealer: makeSecretSealer(config.webhooks.secretKey), deliverer, settings: config.webhooks, logger, group, readModelsReached,
  recorder: makeHttpRecorder(config.recorder.docsCommandUrl, config.recorder.internalToken, { logger }),
  // The same owner after a restart (INSTANCE_ID, or host and port): it takes back the tasks it held at once (dispatcher.ts).
  metrics, owner: instanceId(process.env, config.service.port),
}));


await startConsumerService({
  name: webhookDispatcher.name, logger, port: config.service.port, host: config.service.host, http: config.service.http,
  app: () => makeUrlCheckApp(config.webhooks.policy, config.recorder.internalToken),
  join: async () => {
    await ensureKafkaTopics(kafkaSettings);
    const running = await consume(consumer, group, dispatcherOf().handle, logger, () => deadLetters?.());
    dispatcherOf().start();
    logger.info({ group }, 'webhook dispatcher consuming');
    return {
      subscription: running.subscription,
      // The subscription first (no batch half handled), then the dispatcher: its attempts in flight end, what waits goes back to the store.
      stop: async () => {
        await running.stop();
        await dispatcherOf().stop();
      },
    };
  },
  // Ready when its state is reachable; docs-command is reported (a disable waits for it, retried).
  checks: { mongodb: async () => { await db.command({ ping: 1 }); } },
  softChecks: {
    'docs-command': async () => {
      const res = await fetch(`${config.recorder.docsCommandUrl.replace(/\/+$/, '')}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (!res.ok) throw new Error(`docs-command /healthz: ${res.status}`);
    },
  },
  metrics: (ops) => {
    countStoreCommands(client, ops.registry);
    registerConsumerLag(ops.registry, bus, [group]);
    metrics = registerWebhookMetrics(ops.registry);
    const counter = deadLetterCounter(ops.registry);
    deadLetters = () => counter.inc({ group });
  },
  metricsAt: config.service.metrics,
  close: async () => {
    await dispatcher?.stop();
    deliverer.close();
    await bus.close();
    await store.close();
    await client.close();
  },
});
