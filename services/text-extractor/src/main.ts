/**
 * The text extractor as its own service (distributed mode): consumes the events topic as two
 * groups (extraction.ts: `text-extractor-intake` reads ahead into a fair queue, `text-extractor`
 * moves only past recorded files), reads uploaded files from MinIO, extracts their text in a pool of
 * child processes with budgets, and records each outcome through docs-command's internal route
 * (DOCS_COMMAND_URL). Serves /healthz, /readyz and /metrics; no query API.
 */
import express from 'express';
import { M } from '@docshare/contracts';
import { makeMinioBlobStore } from '@docshare/blob-store/minio';
import type { ExtractOutcome } from '@docshare/extract';
import { installLastResort, makeLogger, sendError } from '@docshare/http';
import { consume, deadLetterCounter, registerConsumerLag, startConsumerService, type RunningConsumer } from '@docshare/runtime';
import { connectMongo, ensureKafkaTopics, kafkaBus } from '@docshare/runtime/distributed';
import { blob, extraction as extractBudgets, kafka, loadConfigOrExit, mongo, personalData, recorder, service as serviceVars } from '@docshare/runtime/config';
import { makePersonalData, openingConsumer, parseKek } from '@docshare/personal-data';
import { openMongoKeyStore } from '@docshare/personal-data/mongo';
import { makeHttpRecorder } from './http-recorder.ts';
import { EXTRACTOR_OPENS, intakeGroupOf, makeExtraction, registerExtractionMetrics, textExtractor } from './module.ts';

/** Everything the text extractor reads from its environment (README: the services' environment), read once. */
const config = loadConfigOrExit(process.env, {
  service: serviceVars({ port: textExtractor.port, publicPort: 'edge' }),
  kafka: kafka(),
  blob: blob(),
  /** DOCS_COMMAND_URL and docs-command's INTERNAL_TOKEN: what lets this service record extractions. */
  recorder: recorder(),
  extraction: extractBudgets(),
  /**
   * The KEK and the data keys (MongoDB, read-only use): a file's name is personal data, sealed in its
   * event (issue 24), and its extension is what the format is read by.
   */
  mongo: mongo(),
  personalData: personalData(),
}, (message) => makeLogger(textExtractor.name).fatal(message));
const logger = makeLogger(textExtractor.name, config.service.logLevel);
installLastResort(logger);
const kafkaSettings = config.kafka;
const metricsAt = config.service.metrics;

const blobs = await makeMinioBlobStore({
  endPoint: config.blob.endPoint, accessKey: config.blob.accessKey, secretKey: config.blob.secretKey,
  bucket: config.blob.bucket, requestTimeoutMs: config.blob.requestTimeoutMs,
});
const records = makeHttpRecorder(config.recorder.docsCommandUrl, config.recorder.internalToken);
// Metrics exist once the service's registry does (startConsumerService's `metrics`).
let told: ((outcome: ExtractOutcome) => void) | undefined;
const extraction = makeExtraction({ blobs, recorder: records, logger, settings: config.extraction, onOutcome: (outcome) => told?.(outcome) });
const bus = kafkaBus(kafkaSettings, textExtractor.name, logger);
const { client: mongoClient, db } = await connectMongo(config.mongo.mongoUrl, config.mongo.commandDb, config.mongo);
const keyStore = await openMongoKeyStore(db);
const consumer = openingConsumer(bus.consumer, makePersonalData({ store: keyStore, kek: parseKek(config.personalData.kek) }), {
  only: EXTRACTOR_OPENS,
});
const group = `${textExtractor.name}${kafkaSettings.groupSuffix}`;
const intakeGroup = `${intakeGroupOf(textExtractor.name)}${kafkaSettings.groupSuffix}`;

const none = express();
none.use((_req, res) => sendError(res, 404, M.notFound));

// Two groups: the intake (it reads ahead and never holds a batch long) and the group whose
// offsets say "recorded", joined after it. On stop the settling group stops before the files in
// hand are abandoned, so its batch in flight is not acknowledged.
let deadLetters: ((group: string) => void) | undefined;
let closing: Promise<void> | undefined;
const closeExtraction = (): Promise<void> => (closing ??= extraction.close());
const joinGroup = (name: string, handle: typeof extraction.work.takeUp): Promise<RunningConsumer> =>
  consume(consumer, name, (batch) => handle(batch.records), logger, () => deadLetters?.(name));

await startConsumerService({
  name: textExtractor.name, logger, port: config.service.port, host: config.service.host, http: config.service.http,
  app: () => none,
  join: async () => {
    await ensureKafkaTopics(kafkaSettings);
    const intake = await joinGroup(intakeGroup, extraction.work.takeUp);
    try {
      const settling = await joinGroup(group, extraction.work.settle);
      logger.info({ group }, 'text extractor settling');
      return {
        subscription: settling.subscription,
        // The groups stop while the files in hand are abandoned (a batch waiting on them fails,
        // unacknowledged), not after: a stop that waited for them would wait for their extraction.
        stop: async () => {
          const stopped = Promise.all([settling.stop(), intake.stop()]);
          await closeExtraction();
          await stopped;
        },
      };
    } catch (error) {
      await intake.stop();
      throw error;
    }
  },
  // Ready when it can read files; docs-command is reported (the records wait for it, retried).
  checks: { minio: async () => { await blobs.stat('readiness-probe'); } },
  softChecks: {
    'docs-command': async () => {
      const res = await fetch(`${config.recorder.docsCommandUrl.replace(/\/+$/, '')}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (!res.ok) throw new Error(`docs-command /healthz: ${res.status}`);
    },
  },
  metrics: (ops) => {
    registerConsumerLag(ops.registry, bus, [group, intakeGroup]);
    told = registerExtractionMetrics(ops.registry);
    const counter = deadLetterCounter(ops.registry);
    deadLetters = (name) => counter.inc({ group: name });
  },
  metricsAt,
  close: async () => {
    await closeExtraction();
    await bus.close();
    await mongoClient.close();
  },
});
