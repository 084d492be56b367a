/**
 * The text extractor as its own service (distributed mode): consumes the events topic as two
 * groups (extraction.ts: `text-extractor-intake` reads ahead into a fair queue, `text-extractor`
 * moves only past recorded files), reads uploaded files from MinIO, extracts their text in a pool of
 * child processes with budgets, and records each outcome through docs-command's internal route
 * (DOCS_COMMAND_URL). Serves /healthz, /readyz and /metrics; no query API.
 */
import express from 'express';
import { backoffMs, M } from '@docshare/contracts';
import { makeMinioBlobStore } from '@docshare/blob-store/minio';
import type { ExtractOutcome } from '@docshare/extract';
import {
  configOrExit, HTTP_VARS, installLastResort, intVar, makeLogger, metricsListenOrExit, optionalVar, sendError, stringVar,
} from '@docshare/http';
import { makeMemoryCheckpoints } from '@docshare/consistency';
import { startProjectorService } from '@docshare/projection';
import { consume, deadLetterCounter, registerConsumerLag, type RunningConsumer } from '@docshare/runtime';
import { ensureKafkaTopics, KAFKA_VARS, kafkaBus, kafkaConfig } from '@docshare/runtime/distributed';
import { makeHttpRecorder } from './http-recorder.ts';
import { EXTRACT_VARS, intakeGroupOf, makeExtraction, registerExtractionMetrics, textExtractor } from './module.ts';

const logger = makeLogger(textExtractor.name);
installLastResort(logger);

/** Everything the text extractor reads from its environment (README: the services' environment). */
const TEXT_EXTRACTOR_VARS = {
  ...KAFKA_VARS,
  ...HTTP_VARS,
  ...EXTRACT_VARS,
  PORT: intVar(textExtractor.port),
  HOST: stringVar('0.0.0.0'),
  LOG_LEVEL: optionalVar(),
  DOCS_COMMAND_URL: stringVar(),
  /** docs-command's INTERNAL_TOKEN: what lets this service record extractions. */
  INTERNAL_TOKEN: stringVar(),
  MINIO_ENDPOINT: stringVar(),
  MINIO_ACCESS_KEY: stringVar(),
  MINIO_SECRET_KEY: stringVar(),
  MINIO_BUCKET: stringVar('docshare-files'),
  MINIO_REQUEST_TIMEOUT_MS: intVar(10_000, 1),
};
const env = configOrExit(TEXT_EXTRACTOR_VARS, process.env, (message) => logger.fatal(message));
const kafka = kafkaConfig(process.env);
const metricsAt = metricsListenOrExit(process.env, env.PORT, (message) => logger.fatal(message));

const blobs = await makeMinioBlobStore({
  endPoint: env.MINIO_ENDPOINT, accessKey: env.MINIO_ACCESS_KEY, secretKey: env.MINIO_SECRET_KEY,
  bucket: env.MINIO_BUCKET, requestTimeoutMs: env.MINIO_REQUEST_TIMEOUT_MS,
});
const recorder = makeHttpRecorder(env.DOCS_COMMAND_URL, env.INTERNAL_TOKEN);
// Metrics exist once the service's registry does (startProjectorService's `metrics`).
let told: ((outcome: ExtractOutcome) => void) | undefined;
const extraction = makeExtraction({ blobs, recorder, logger, settings: env, onOutcome: (outcome) => told?.(outcome) });
const bus = kafkaBus(kafka, textExtractor.name, logger);
const group = `${textExtractor.name}${kafka.groupSuffix}`;
const intakeGroup = `${intakeGroupOf(textExtractor.name)}${kafka.groupSuffix}`;

const none = express();
none.use((_req, res) => sendError(res, 404, M.notFound));

// The service's own group is the intake (it reads ahead and never holds a batch long); the group
// whose offsets say "recorded" joins beside it once the topics exist, and is stopped in `close`
// before the files in hand are abandoned, so its batch in flight is not acknowledged.
let settling: RunningConsumer | undefined;
let stopping = false;
let wake: (() => void) | undefined;
let deadLetters: ((group: string) => void) | undefined;

const service = await startProjectorService({
  name: textExtractor.name, group: intakeGroup, logger, port: env.PORT, host: env.HOST,
  consumer: bus.consumer,
  prepare: () => ensureKafkaTopics(kafka),
  handle: extraction.work.takeUp,
  // No read model: nothing reads its progress, so it is kept in memory (Kafka keeps the offsets).
  checkpoints: makeMemoryCheckpoints(), partitions: kafka.eventsPartitions,
  queryApp: none,
  // Ready when it can read files; docs-command is reported (the records wait for it, retried).
  checks: { minio: async () => { await blobs.stat('readiness-probe'); } },
  softChecks: {
    'docs-command': async () => {
      const res = await fetch(`${env.DOCS_COMMAND_URL.replace(/\/+$/, '')}/healthz`, { signal: AbortSignal.timeout(2_000) });
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
    stopping = true;
    wake?.();
    await joining;
    const stopped = settling?.stop();
    await extraction.close();
    await stopped;
    await bus.close();
  },
});

const joining = (async () => {
  await service.consuming;
  for (let attempt = 1; !stopping; attempt++) {
    try {
      settling = await consume(bus.consumer, group, (batch) => extraction.work.settle(batch.records), logger, () => deadLetters?.(group));
      logger.info({ group }, 'text extractor settling');
      return;
    } catch (err) {
      const delay = backoffMs(attempt, 200, 5_000);
      logger.warn({ err, group, attempt, retryInMs: delay }, 'could not join the consumer group; retrying');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, delay);
        function done(): void {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    }
  }
})();
