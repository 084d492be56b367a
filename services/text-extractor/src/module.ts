import { EXTRACT_FORMATS, EXTRACTION_FAILURES, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import {
  defaultConcurrency, makeExtractor, type ExtractOutcome, type ExtractorOptions,
} from '@docshare/extract';
import type { EventBatch, EventConsumer } from '@docshare/event-bus';
import type { Logger } from '@docshare/http';
import type { ExtractSettings } from '@docshare/runtime/config';
import { consume } from '@docshare/runtime';
import type { Registry } from 'prom-client';
import { Counter, Gauge, Histogram } from 'prom-client';
import { makeExtractionWork, type ExtractionDeps, type ExtractionWork, type ExtractionWorkStats } from './extraction.ts';

/**
 * The text extractor, declared once for both modes (like the projectors' `projector.ts`): its
 * name (service, consumer group), its distributed port, and its budgets. It consumes
 * `docs.file.uploaded.v1` and records each file's text (or why there is none) through docs-command.
 */
export const textExtractor = { name: 'text-extractor', port: 8085 } as const;
/** The events whose personal fields the extractor reads (an upload's file name: its extension picks the format); it opens no other. */
export const EXTRACTOR_OPENS = ['docs.file.uploaded.v1'] as const;

/** The intake group beside `group` (extraction.ts: it reads ahead; `group` itself settles). */
export const intakeGroupOf = (group: string): string => `${group}-intake`;

/** The extraction budgets (`EXTRACT_*`), read with the rest of the configuration (libs/runtime config/extraction.ts). */
export type { ExtractSettings } from '@docshare/runtime/config';

export const extractorOptionsOf = (v: ExtractSettings): ExtractorOptions => ({
  timeoutMs: v.EXTRACT_TIMEOUT_MS, memoryMb: v.EXTRACT_MEMORY_MB, maxChars: v.EXTRACT_MAX_CHARS, maxBytes: v.EXTRACT_MAX_BYTES,
  concurrency: v.EXTRACT_CONCURRENCY > 0 ? v.EXTRACT_CONCURRENCY : defaultConcurrency(v.EXTRACT_MEMORY_MB),
});

/**
 * The extraction work of this process (one, in either mode), for the queue gauges: the metrics are
 * registered before the extraction is made (embedded.ts, main.ts), so they find it here.
 */
const runningWorks = new Set<Pick<ExtractionWork, 'stats'>>();

/**
 * docshare_extractions_total{format,outcome}, the duration histogram and the fair queue's gauges
 * (files waiting and running, owners demoted); returns what to tell of each outcome.
 */
export const registerExtractionMetrics = (registry: Registry): ((outcome: ExtractOutcome) => void) => {
  const total = new Counter({
    name: 'docshare_extractions_total', help: 'Files whose text extraction ended, by format and outcome (ok or the failure reason)',
    labelNames: ['format', 'outcome'], registers: [registry],
  });
  const seconds = new Histogram({
    name: 'docshare_extraction_duration_seconds', help: 'Time to extract one file\'s text, in the sandbox',
    labelNames: ['format'], buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [registry],
  });
  // Every series exists from the start, so a dashboard's rate() sees the first failure.
  for (const format of [...EXTRACT_FORMATS, 'unknown']) for (const outcome of ['ok', ...EXTRACTION_FAILURES]) total.inc({ format, outcome }, 0);
  const queueStats = (): ExtractionWorkStats[] => [...runningWorks].map((work) => work.stats());
  new Gauge({
    name: 'docshare_extraction_files', help: 'Files in the text extractor\'s fair queue, by state (waiting for a child, running)',
    labelNames: ['state'], registers: [registry],
    collect() {
      const stats = queueStats();
      this.set({ state: 'waiting' }, stats.reduce((sum, s) => sum + s.waiting, 0));
      this.set({ state: 'running' }, stats.reduce((sum, s) => sum + s.running, 0));
    },
  });
  new Gauge({
    name: 'docshare_extraction_demoted_owners', help: 'Owners whose files hit the time or memory budget repeatedly: served last, one file at a time',
    registers: [registry],
    collect() {
      this.set(queueStats().reduce((sum, s) => sum + s.demoted, 0));
    },
  });
  return (outcome) => {
    const format = outcome.format ?? 'unknown';
    total.inc({ format, outcome: outcome.ok ? 'ok' : outcome.reason });
    seconds.observe({ format }, outcome.durationMs / 1000);
  };
};

export interface RunningExtraction {
  stop(): Promise<void>;
}

/**
 * The extraction pipeline without its consumers: the sandboxed extractor (a pool of
 * EXTRACT_CONCURRENCY children) and the work of extraction.ts, with its two handlers. `start`
 * subscribes both groups (embedded mode: the log bus); the distributed service subscribes them
 * itself (main.ts).
 */
export const makeExtraction = (
  deps: Omit<ExtractionDeps, 'extractor' | 'maxBytes' | 'concurrency' | 'ownerBacklog'> & { settings: ExtractSettings },
) => {
  const options = extractorOptionsOf(deps.settings);
  const extractor = makeExtractor(options);
  const work = makeExtractionWork({
    ...deps, extractor, maxBytes: options.maxBytes, concurrency: options.concurrency, ownerBacklog: deps.settings.EXTRACT_OWNER_BACKLOG,
  });
  runningWorks.add(work);
  /** Abandons the files in hand and kills the children (ExtractionWork.close); stop the subscriptions first. */
  const close = async (): Promise<void> => {
    runningWorks.delete(work);
    await work.close();
  };
  return {
    extractor,
    work,
    close,
    /**
     * Subscribes `group` (settles: its position moves only past recorded files) and its intake
     * group (reads ahead) on `consumer` (embedded mode: the log bus).
     */
    async start(consumer: EventConsumer, group: string, logger: Logger, onDeadLetter?: (record: StoredEvent<CloudEvent>) => void): Promise<RunningExtraction> {
      const settling = await consume(consumer, group, (batch: EventBatch) => work.settle(batch.records), logger, onDeadLetter);
      const intake = await consume(consumer, intakeGroupOf(group), (batch: EventBatch) => work.takeUp(batch.records), logger, onDeadLetter)
        .catch(async (error: unknown) => {
          await settling.stop();
          throw error;
        });
      return {
        stop: async () => {
          // Both subscriptions stop first (their handlers failing from now on are not redelivered), then the files in hand are abandoned.
          const stopping = Promise.all([intake.stop(), settling.stop()]);
          await close();
          await stopping;
        },
      };
    },
  };
};
