import { Gauge, type Registry } from 'prom-client';
import { within } from '@docshare/http';
import { COLLECT_TIMEOUT_MS } from '@docshare/runtime';

/*
 * The read models' metrics, for the distributed projectors and `npm start` alike
 * (docs/observability.md); the consumers' (lag, dead letters) are @docshare/runtime's.
 */

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
