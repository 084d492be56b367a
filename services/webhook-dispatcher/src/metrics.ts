import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What a delivery attempt ended as (`dead`: it failed and the schedule is spent). */
export type DeliveryMetricOutcome = 'succeeded' | 'failed' | 'gone' | 'dead';

/** A source of queue depths: the dispatchers of this process (one, in either mode). */
export type QueueDepthSource = () => ReadonlyMap<number, number>;

/** The dispatcher's metrics (docs/ops: Webhooks); never a URL, a secret or a payload in a label. */
export interface WebhookMetrics {
  /** One attempt ended: its outcome and how long it took. */
  attempted(outcome: DeliveryMetricOutcome, seconds: number): void;
  /** A message's first attempt started `seconds` after its event was recorded. */
  firstAttempt(seconds: number): void;
  /** A task became a dead letter. */
  deadLetter(): void;
  /** Adds a queue-depth source (a dispatcher); returns its removal. */
  watch(source: QueueDepthSource): () => void;
}

const OUTCOMES: readonly DeliveryMetricOutcome[] = ['succeeded', 'failed', 'gone', 'dead'];

/**
 * docshare_webhook_deliveries_total{outcome}, docshare_webhook_queue_depth{webhook_id} (only the
 * endpoints with something queued in this process: the label's values stay bounded by the
 * queues' bounds), docshare_webhook_dead_letters_total, docshare_webhook_first_attempt_seconds
 * (event recorded → first attempt started: the issue's p99 ≤ 1 s goal) and
 * docshare_webhook_attempt_seconds (one attempt, request to response).
 */
export const registerWebhookMetrics = (registry: Registry): WebhookMetrics => {
  const deliveries = new Counter({
    name: 'docshare_webhook_deliveries_total', help: 'Webhook delivery attempts by outcome (dead: failed with the retry schedule spent)',
    labelNames: ['outcome'], registers: [registry],
  });
  // Every series exists from the start, so a dashboard's rate() sees the first failure.
  for (const outcome of OUTCOMES) deliveries.inc({ outcome }, 0);
  const deadLetters = new Counter({
    name: 'docshare_webhook_dead_letters_total', help: 'Webhook messages given up on (kept as dead letters, replayable)', registers: [registry],
  });
  const first = new Histogram({
    name: 'docshare_webhook_first_attempt_seconds', help: 'Time from an event being recorded to the first delivery attempt of its webhook message',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300], registers: [registry],
  });
  const attempt = new Histogram({
    name: 'docshare_webhook_attempt_seconds', help: 'One webhook delivery attempt, request start to response end (or failure)',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30], registers: [registry],
  });
  const sources = new Set<QueueDepthSource>();
  new Gauge({
    name: 'docshare_webhook_queue_depth', help: 'Webhook messages queued or in flight in this dispatcher, per endpoint (endpoints with none are not listed)',
    labelNames: ['webhook_id'], registers: [registry],
    collect() {
      this.reset();
      const depths = new Map<number, number>();
      for (const source of sources) for (const [id, depth] of source()) depths.set(id, (depths.get(id) ?? 0) + depth);
      for (const [id, depth] of depths) this.set({ webhook_id: String(id) }, depth);
    },
  });
  return {
    attempted(outcome, seconds) {
      deliveries.inc({ outcome });
      attempt.observe(seconds);
    },
    firstAttempt: (seconds) => first.observe(Math.max(0, seconds)),
    deadLetter: () => deadLetters.inc(),
    watch(source) {
      sources.add(source);
      return () => sources.delete(source);
    },
  };
};
