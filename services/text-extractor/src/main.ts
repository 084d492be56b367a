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
import { installLastResort, makeLogger, sendError } from '@docshare/http';
import { makeMemoryCheckpoints } from '@docshare/consistency';
import { startProjectorService } from '@docshare/projection';
import { consume, deadLetterCounter, registerConsumerLag, type RunningConsumer } from '@docshare/runtime';
import { ensureKafkaTopics, kafkaBus } from '@docshare/runtime/distributed';
import { blob, extraction as extractBudgets, kafka, loadConfigOrExit, recorder, service as serviceVars } from '@docshare/runtime/config';
import { makeHttpRecorder } from './http-recorder.ts';
import { intakeGroupOf, makeExtraction, registerExtractionMetrics, textExtractor } from './module.ts';

/** Everything the text extractor reads from its environment (README: the services' environment), read once. */
const config = loadConfigOrExit(process.env, {
  service: serviceVars({ port: textExtractor.port, publicPort: 'edge' }),
  kafka: kafka(),
  blob: blob(),
  /** DOCS_COMMAND_URL and docs-command's INTERNAL_TOKEN: what lets this service record extractions. */
  recorder: recorder(),
  extraction: extractBudgets(),
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
// Metrics exist once the service's registry does (startProjectorService's `metrics`).
let told: ((outcome: ExtractOutcome) => void) | undefined;
const extraction = makeExtraction({ blobs, recorder: records, logger, settings: config.extraction, onOutcome: (outcome) => told?.(outcome) });
const bus = kafkaBus(kafkaSettings, textExtractor.name, logger);
const group = `${textExtractor.name}${kafkaSettings.groupSuffix}`;
const intakeGroup = `${intakeGroupOf(textExtractor.name)}${kafkaSettings.groupSuffix}`;

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
  name: textExtractor.name, group: intakeGroup, logger, port: config.service.port, host: config.service.host, http: config.service.http,
  consumer: bus.consumer,
  prepare: () => ensureKafkaTopics(kafkaSettings),
  handle: extraction.work.takeUp,
  // No read model: nothing reads its progress, so it is kept in memory (Kafka keeps the offsets).
  checkpoints: makeMemoryCheckpoints(), partitions: kafkaSettings.eventsPartitions,
  queryApp: none,
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
