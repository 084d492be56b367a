import { Gauge, type Counter, type Registry } from 'prom-client';
import { counter, within } from '@docshare/http';

/*
 * The projection side's metrics, for the distributed projectors (runtime.ts, service.ts) and
 * `npm start` alike (docs/observability.md). Each is registered once per registry.
 */

/** How long a scrape waits for a value asked from a server (Kafka, MongoDB) before it goes without. */
export const COLLECT_TIMEOUT_MS = 2_000;

/** Where consumer lag comes from: the Kafka bus (the group's committed offsets) or the embedded log bus. */
export interface LagSource {
  lag(group: string): Promise<{ partition: number; lag: number }[]>;
}

/**
 * `docshare_consumer_lag{group,partition}`: what each consumer group still has to process, asked
 * from the bus at each scrape. On Kafka: records of the event topic after the group's committed
 * offset (so a projector that is stuck or down shows a growing lag); on the embedded bus: events
 * of the log after the last one the group acknowledged. A bus that does not answer within
 * COLLECT_TIMEOUT_MS gives no sample for the group rather than a wrong one.
 */
export const registerConsumerLag = (registry: Registry, source: LagSource, groups: readonly string[]): void => {
  if (registry.getSingleMetric('docshare_consumer_lag') !== undefined) return;
  new Gauge({
    name: 'docshare_consumer_lag',
    help: 'Events (Kafka: records) on the event topic not yet processed and committed by the consumer group, per partition',
    labelNames: ['group', 'partition'],
    registers: [registry],
    async collect() {
      const samples = await Promise.all(groups.map(async (group) => {
        try {
          return (await within(source.lag(group), COLLECT_TIMEOUT_MS)).map((p) => ({ group, ...p }));
        } catch {
          return []; // the bus is unreachable: readiness reports the consumer
        }
      }));
      this.reset();
      for (const { group, partition, lag } of samples.flat()) this.set({ group, partition: String(partition) }, lag);
    },
  });
};

/**
 * `docshare_dead_letters_total{group}`: events a projector's consumer gave up on after every
 * attempt failed (on Kafka written to the dead-letter topic, embedded logged and passed).
 */
export const deadLetterCounter = (registry: Registry): Counter => counter(
  registry, 'docshare_dead_letters_total',
  'Events a consumer group gave up on after repeated failures (Kafka: written to the dead-letter topic), by group', ['group'],
);

/**
 * The generation number of a read model's collection prefix or index (what `npm run rebuild`
 * names them: `stats_g<ms>_`, `search_g<ms>`): the time its rebuild began, in ms since the epoch;
 * 0 for the first generation (`stats_`), never rebuilt.
 */
export const generationOf = (prefix: string): number => {
  const match = /_g(\d{1,16})_?$/.exec(prefix);
  return match ? Number(match[1]) : 0;
};

/**
 * `docshare_read_model_generation_timestamp_seconds{model}`: the generation each read model is
 * read and written in now, as the time its rebuild began in seconds since the epoch (generationOf
 * its prefix / 1000; 0 for the first generation, never rebuilt), from `current`: one lookup of the
 * generation pointer by id per scrape, shared by both names. It changes when a rebuild swaps a new
 * generation in. A pointer that cannot be read within COLLECT_TIMEOUT_MS keeps the last value.
 *
 * `docshare_read_model_generation{model}` is the same reading in milliseconds, the 0.1 name: kept
 * through 0.2.x beside the new one, removed in 0.3.0 (docs/observability.md).
 */
export const registerReadModelGenerations = (registry: Registry, models: Record<string, () => Promise<string>>): void => {
  if (registry.getSingleMetric('docshare_read_model_generation_timestamp_seconds') !== undefined) return;
  /** One scrape's reading, shared by both gauges: generation (ms) per model read this time. */
  let reading: Promise<Map<string, number>> | null = null;
  const read = (): Promise<Map<string, number>> => reading ??= (async () => {
    const found = new Map<string, number>();
    await Promise.all(Object.entries(models).map(async ([model, current]) => {
      try {
        found.set(model, generationOf(await within(current(), COLLECT_TIMEOUT_MS)));
      } catch {
        // MongoDB unreachable: the last value stays (readiness reports MongoDB).
      }
    }));
    return found;
  })().finally(() => {
    reading = null;
  });
  new Gauge({
    name: 'docshare_read_model_generation_timestamp_seconds',
    help: 'Generation of the read model in use: when its rebuild began, in seconds since the epoch (0: the first generation, never rebuilt)',
    labelNames: ['model'],
    registers: [registry],
    async collect() {
      for (const [model, ms] of await read()) this.set({ model }, ms / 1000);
    },
  });
  new Gauge({
    name: 'docshare_read_model_generation',
    help: 'DEPRECATED, removed in 0.3.0: use docshare_read_model_generation_timestamp_seconds (the same value in seconds). Generation of the read model in use: when its rebuild began, in ms since the epoch (0: the first generation, never rebuilt)',
    labelNames: ['model'],
    registers: [registry],
    async collect() {
      for (const [model, ms] of await read()) this.set({ model }, ms);
    },
  });
};
