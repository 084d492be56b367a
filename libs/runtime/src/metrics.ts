import { Gauge, type Counter, type Registry } from 'prom-client';
import { counter, within } from '@docshare/http';

/*
 * The metrics of every consumer of the event topic, in both modes (docs/observability.md): what
 * each group still has to process, and what it gave up on. Each is registered once per registry.
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
