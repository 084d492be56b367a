import { ConfigError, intVar, optionalVar, stringVar } from '@docshare/http';
import { concern } from './concern.ts';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration such as `500ms`, `5s`, `5m`, `2h`, `5d` in milliseconds; null when it is not one. */
export const parseDuration = (text: string): number | null => {
  const match = /^\s*(\d+)\s*(ms|s|m|h|d)\s*$/.exec(text);
  if (!match) return null;
  const ms = Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? Number.NaN);
  return Number.isSafeInteger(ms) ? ms : null;
};

/** A comma-separated list of durations (`1s,2s,5m`) in milliseconds; null when any entry is not a duration or the list is empty. */
export const parseDurations = (text: string): number[] | null => {
  const parts = text.split(',').map((part) => part.trim()).filter((part) => part !== '');
  const durations = parts.map(parseDuration);
  return parts.length > 0 && durations.every((ms): ms is number => ms !== null) ? durations : null;
};

/** The Standard Webhooks retry schedule after the first attempt (issue 23). */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h,24h';

/** What the write side checks when an endpoint is registered, and the dispatcher again when it connects. */
export interface WebhookUrlPolicy {
  /** `http:` URLs accepted (WEBHOOK_ALLOW_HTTP); else https only. */
  allowHttp: boolean;
  /** Loopback, private, link-local and other special addresses accepted (WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
  allowPrivate: boolean;
}

export interface WebhookSettings {
  /** Live endpoints per user (WEBHOOK_MAX_PER_USER). */
  maxPerUser: number;
  policy: WebhookUrlPolicy;
  /** The key webhook secrets are sealed with in events (WEBHOOK_SECRET_KEY); undefined: `npm start` generates one into DATA_DIR. */
  secretKey: string | undefined;
  /** Delays before the 2nd, 3rd... attempt, in ms (WEBHOOK_RETRY_SCHEDULE): its length is the retries. */
  retryScheduleMs: number[];
  /** An endpoint whose every attempt failed for this long is disabled (WEBHOOK_DISABLE_AFTER). */
  disableAfterMs: number;
  /** One attempt's whole time, connect to last byte read (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Attempts in flight per dispatcher process (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  /** Attempts in flight per endpoint per dispatcher process (WEBHOOK_ENDPOINT_CONCURRENCY); 1 keeps an endpoint's first attempts in log order. */
  endpointConcurrency: number;
  /** How long delivery attempts and settled deliveries are kept (WEBHOOK_RETENTION_DAYS): what `deliveries` lists and `replay` can reach. */
  retentionDays: number;
  /** Where docs-command asks the dispatcher to check an endpoint's URL at registration (WEBHOOK_DISPATCHER_URL); undefined: it checks itself. */
  dispatcherUrl: string | undefined;
}

const boolOf = (name: string, raw: string): boolean => {
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError([`${name} must be true or false`]);
};

const WEBHOOK_VARS = {
  /** Live webhook endpoints each user may register. */
  WEBHOOK_MAX_PER_USER: intVar(10, 1, 1_000),
  /** Accept `http:` endpoint URLs (default: https only). */
  WEBHOOK_ALLOW_HTTP: stringVar('false'),
  /** Accept endpoints on loopback, private, link-local or other special addresses (tests, a laptop); never on a public deployment. */
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: stringVar('false'),
  /** Seals webhook secrets in events (at least 32 characters); `npm start` generates one into DATA_DIR when unset. */
  WEBHOOK_SECRET_KEY: optionalVar(),
  /** Delays before each retry, comma-separated durations (`ms`, `s`, `m`, `h`, `d`). */
  WEBHOOK_RETRY_SCHEDULE: stringVar(DEFAULT_WEBHOOK_RETRY_SCHEDULE),
  /** An endpoint failing every attempt for this long is disabled (a duration). */
  WEBHOOK_DISABLE_AFTER: stringVar('5d'),
  /** One delivery attempt's time limit. */
  WEBHOOK_TIMEOUT_MS: intVar(15_000, 100, 120_000),
  /** Delivery attempts in flight per dispatcher process. */
  WEBHOOK_CONCURRENCY: intVar(64, 1, 10_000),
  /** Delivery attempts in flight per endpoint per dispatcher process (1: in log order). */
  WEBHOOK_ENDPOINT_CONCURRENCY: intVar(1, 1, 100),
  /** Days delivery attempts and settled deliveries are kept. */
  WEBHOOK_RETENTION_DAYS: intVar(30, 1, 3_650),
  /** docs-command: the webhook dispatcher's URL, which checks an endpoint's URL at registration with the DNS it connects through (compose); unset: docs-command resolves it itself. */
  WEBHOOK_DISPATCHER_URL: optionalVar(),
};

const readWebhooks = (v: { [K in keyof typeof WEBHOOK_VARS]: ReturnType<(typeof WEBHOOK_VARS)[K]['parse']> }): WebhookSettings => {
  const problems: string[] = [];
  const retryScheduleMs = parseDurations(v.WEBHOOK_RETRY_SCHEDULE);
  if (retryScheduleMs === null) problems.push('WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of durations such as 5s,5m,2h');
  const disableAfterMs = parseDuration(v.WEBHOOK_DISABLE_AFTER);
  if (disableAfterMs === null) problems.push('WEBHOOK_DISABLE_AFTER must be a duration such as 5d');
  if (v.WEBHOOK_SECRET_KEY !== undefined && v.WEBHOOK_SECRET_KEY.length < 32) problems.push('WEBHOOK_SECRET_KEY must be at least 32 characters');
  let policy: WebhookUrlPolicy = { allowHttp: false, allowPrivate: false };
  try {
    policy = { allowHttp: boolOf('WEBHOOK_ALLOW_HTTP', v.WEBHOOK_ALLOW_HTTP), allowPrivate: boolOf('WEBHOOK_ALLOW_PRIVATE_NETWORKS', v.WEBHOOK_ALLOW_PRIVATE_NETWORKS) };
  } catch (error) {
    if (error instanceof ConfigError) problems.push(...error.problems);
    else throw error;
  }
  if (problems.length > 0 || retryScheduleMs === null || disableAfterMs === null) throw new ConfigError(problems);
  return {
    maxPerUser: v.WEBHOOK_MAX_PER_USER, policy, secretKey: v.WEBHOOK_SECRET_KEY, retryScheduleMs, disableAfterMs,
    timeoutMs: v.WEBHOOK_TIMEOUT_MS, concurrency: v.WEBHOOK_CONCURRENCY, endpointConcurrency: v.WEBHOOK_ENDPOINT_CONCURRENCY,
    retentionDays: v.WEBHOOK_RETENTION_DAYS, dispatcherUrl: v.WEBHOOK_DISPATCHER_URL,
  };
};

/**
 * Webhooks (issue 23): the write side's (registration: the limit, the URL policy, the sealing key)
 * and the dispatcher's (the policy again, the schedule, the budgets); read by both and by `npm
 * start`, which generates the sealing key when WEBHOOK_SECRET_KEY is unset.
 */
export const webhooks = () => concern(WEBHOOK_VARS, readWebhooks);

/** As `webhooks`, WEBHOOK_SECRET_KEY required: the distributed services that seal or open secrets. */
export const webhooksWithKey = () => concern(WEBHOOK_VARS, (v): WebhookSettings & { secretKey: string } => {
  const settings = readWebhooks(v);
  if (settings.secretKey === undefined) throw new ConfigError(['WEBHOOK_SECRET_KEY is required']);
  return { ...settings, secretKey: settings.secretKey };
});
