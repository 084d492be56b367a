import { EXTRACT_FORMATS, EXTRACTION_FAILURES, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { DEFAULT_EXTRACT_LIMITS, MAX_EXTRACT_CHARS, makeExtractor, type ExtractOutcome, type ExtractorOptions } from '@docshare/extract';
import type { EventBatch, EventConsumer } from '@docshare/event-bus';
import { intVar, type Logger } from '@docshare/http';
import { runProjector } from '@docshare/projection';
import type { Registry } from 'prom-client';
import { Counter, Histogram } from 'prom-client';
import { extractionHandler, type ExtractionDeps } from './extraction.ts';

/**
 * The text extractor, declared once for both modes (like the projectors' `projector.ts`): its
 * name (service, consumer group), its distributed port, and its budgets. It consumes
 * `docs.file.uploaded.v1` and records each file's text (or why there is none) through docs-command.
 */
export const textExtractor = { name: 'text-extractor', port: 8085 } as const;

/** The extraction budgets, from the environment (README: configuration). */
export const EXTRACT_VARS = {
  /** Longest one file's extraction may take before its child process is killed (a failure: `timeout`). */
  EXTRACT_TIMEOUT_MS: intVar(DEFAULT_EXTRACT_LIMITS.timeoutMs, 100),
  /** Most memory (resident) one extraction child may use before it is killed (`memory`). */
  EXTRACT_MEMORY_MB: intVar(DEFAULT_EXTRACT_LIMITS.memoryMb, 64),
  /** Most characters of text kept per file (the rest is cut, `truncated`); the text travels in one event. */
  EXTRACT_MAX_CHARS: intVar(DEFAULT_EXTRACT_LIMITS.maxChars, 1, MAX_EXTRACT_CHARS),
  /** Files larger than this are not read (`too_large`). */
  EXTRACT_MAX_BYTES: intVar(DEFAULT_EXTRACT_LIMITS.maxBytes, 1),
  /** Extraction child processes, i.e. files read at once. */
  EXTRACT_CONCURRENCY: intVar(1, 1),
};

export interface ExtractSettings {
  EXTRACT_TIMEOUT_MS: number; EXTRACT_MEMORY_MB: number; EXTRACT_MAX_CHARS: number; EXTRACT_MAX_BYTES: number; EXTRACT_CONCURRENCY: number;
}

export const extractorOptionsOf = (v: ExtractSettings): ExtractorOptions => ({
  timeoutMs: v.EXTRACT_TIMEOUT_MS, memoryMb: v.EXTRACT_MEMORY_MB, maxChars: v.EXTRACT_MAX_CHARS, maxBytes: v.EXTRACT_MAX_BYTES,
  concurrency: v.EXTRACT_CONCURRENCY,
});

/** docshare_extractions_total{format,outcome} and the duration histogram; returns what to tell of each outcome. */
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
 * The extraction pipeline without its consumer: the sandboxed extractor and the batch handler.
 * `start` subscribes it as the consumer group (embedded mode); the distributed service hands
 * `apply` to its projector service instead.
 */
export const makeExtraction = (
  deps: Omit<ExtractionDeps, 'extractor' | 'maxBytes' | 'concurrency'> & { settings: ExtractSettings },
) => {
  const options = extractorOptionsOf(deps.settings);
  const extractor = makeExtractor(options);
  const apply = extractionHandler({ ...deps, extractor, maxBytes: options.maxBytes, concurrency: options.concurrency });
  const handle = async (batch: EventBatch): Promise<void> => apply(batch.records);
  return {
    extractor,
    apply,
    /** Subscribes as consumer group `group` on `consumer` (embedded mode: the log bus). */
    async start(consumer: EventConsumer, group: string, logger: Logger, onDeadLetter?: (record: StoredEvent<CloudEvent>) => void): Promise<RunningExtraction> {
      const running = await runProjector(consumer, group, handle, logger, onDeadLetter);
      return {
        stop: async () => {
          await running.stop();
          await extractor.close();
        },
      };
    },
  };
};
