// infra/observability: the sample Prometheus scrape configuration and the Grafana dashboard. Both
// parse; the scrape config finds every service on its metrics port; every metric the dashboard
// queries is one the code registers (a renamed metric fails here), and docs/observability.md
// lists every docshare_ metric.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { parse } from 'yaml';
import { SERVICE_NAMES } from '@docshare/contracts/services';
import { makeTokens } from '@docshare/auth';
import { makeStorageMetrics, registerOutboxMetrics } from '@docshare/docs-command';
import { makeGateway } from '@docshare/gateway';
import { httpLimitsOf, makeLogger, makeOps } from '@docshare/http';
import express from 'express';
import { registerExtractionMetrics } from '@docshare/text-extractor';
import { registerWebhookMetrics } from '@docshare/webhook-dispatcher';
import { makeMemoryCheckpoints } from '@docshare/consistency';
import { registerReadModelGenerations, startProjectorService } from '@docshare/projection';
import { deadLetterCounter, registerConsumerLag } from '@docshare/runtime';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const logger = makeLogger('test', 'silent');
const SERVICES = SERVICE_NAMES;

interface Target { expr?: string; refId?: string; datasource?: { type?: string; uid?: string } }
interface Panel { id: number; type: string; title: string; datasource?: { type?: string; uid?: string }; targets?: Target[]; gridPos?: unknown; panels?: Panel[] }
const dashboard = JSON.parse(read('infra/observability/grafana-dashboard.json')) as {
  schemaVersion: number; title: string; uid: string; panels: Panel[];
  templating: { list: { name: string; type: string; query?: unknown }[] };
};
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const expressions = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr ?? '' })));

/** PromQL words that are not metric names: functions, aggregations, keywords. */
const PROMQL = new Set([
  'sum', 'max', 'min', 'avg', 'count', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset',
  'rate', 'irate', 'increase', 'delta', 'deriv', 'histogram_quantile', 'topk', 'bottomk', 'clamp_min', 'clamp_max', 'abs', 'vector', 'scalar',
  'label_values', 'time', 'changes', 'resets', 'max_over_time', 'min_over_time', 'avg_over_time', 'absent', 'quantile',
]);

/** The metric names a PromQL expression reads. */
const metricNamesIn = (expr: string): string[] => {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ''); // grouping labels
  return [...new Set((bare.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? []).filter((word) => !PROMQL.has(word)))];
};

/** Every metric the services register, built with the functions the services use: name → type and HELP. */
const registeredMetrics = async (): Promise<Map<string, { type: string; help: string }>> => {
  const registries: Registry[] = [];
  const ops = makeOps('test', {});
  registries.push(ops.registry);
  makeGateway({
    tokens: makeTokens('a-test-secret-that-is-long-enough-0123456789', 60), logger, ops,
    limiter: new RateLimiterMemory({ points: 1, duration: 1 }), rateLimitPoints: 1, rateLimitWindowSeconds: 1, publicBaseUrl: 'http://x',
    upstreams: { docs: (_q, _s, next) => next(), stats: (_q, _s, next) => next(), files: (_q, _s, next) => next(), search: (_q, _s, next) => next() },
  });
  const docs = new Registry();
  registries.push(docs);
  makeStorageMetrics(docs, { totalStored: async () => 0, logger, resyncMs: 60_000 }).stop();
  registerOutboxMetrics(docs, { backlog: async () => ({ events: 0, oldestAgeMs: 0 }), isLeader: () => true });
  const projector = await startProjectorService({
    name: 'test-projector', consumer: { subscribe: async () => ({ stop: async () => {} }), subscribeBatches: async () => ({ stop: async () => {} }) },
    checkpoints: makeMemoryCheckpoints(), partitions: 1, queryApp: express(), checks: {},
    port: 0, host: '127.0.0.1', http: httpLimitsOf({}), logger, handle: async () => {}, close: async () => {}, handleSignals: false,
    metrics: ({ registry }) => {
      registries.push(registry);
      registerConsumerLag(registry, { lag: async () => [] }, ['g']);
      registerReadModelGenerations(registry, { stats: async () => 'stats_' });
      deadLetterCounter(registry);
      registerExtractionMetrics(registry);
      registerWebhookMetrics(registry);
    },
  });
  await projector.stop();
  const out = new Map<string, { type: string; help: string }>();
  for (const registry of registries) for (const metric of await registry.getMetricsAsJSON()) out.set(metric.name, { type: String(metric.type), help: metric.help });
  return out;
};

/** Whether `name` is a series of a registered metric (a histogram's _bucket/_sum/_count included). */
const isRegistered = (metrics: Map<string, { type: string }>, name: string): boolean => {
  if (metrics.has(name)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && (metrics.get(base)?.type === 'histogram' || metrics.get(base)?.type === 'summary');
};

describe('infra/observability/prometheus.yml', () => {
  const config = parse(read('infra/observability/prometheus.yml')) as {
    global?: { scrape_interval?: string };
    scrape_configs: { job_name: string; metrics_path?: string; static_configs?: unknown; dns_sd_configs?: { names: string[]; type: string; port: number }[] }[];
  };

  it('scrapes every service, each through Docker DNS (A records) on the metrics port 9464', () => {
    assert.match(config.global?.scrape_interval ?? '', /^\d+s$/);
    assert.deepEqual(config.scrape_configs.map((job) => job.job_name).sort(), [...SERVICES].sort());
    for (const job of config.scrape_configs) {
      assert.equal(job.metrics_path ?? '/metrics', '/metrics', job.job_name);
      assert.equal(job.static_configs, undefined, `${job.job_name}: replicas come and go, so DNS finds them`);
      assert.deepEqual(job.dns_sd_configs, [{ ...job.dns_sd_configs?.[0], names: [job.job_name], type: 'A', port: 9464 }], job.job_name);
    }
  });
});

describe('infra/observability/grafana-dashboard.json', () => {
  it('is a dashboard on a Prometheus datasource variable', () => {
    assert.ok(dashboard.schemaVersion >= 36 && dashboard.schemaVersion <= 41, `schemaVersion ${dashboard.schemaVersion}`);
    assert.ok(dashboard.title && dashboard.uid);
    const datasource = dashboard.templating.list.find((v) => v.type === 'datasource');
    assert.deepEqual([datasource?.name, datasource?.query], ['datasource', 'prometheus']);
    const ids = panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    for (const panel of panels.filter((p) => p.type !== 'row')) {
      assert.ok(panel.gridPos, panel.title);
      assert.equal(panel.datasource?.uid, '${datasource}', panel.title);
      assert.ok((panel.targets ?? []).length > 0, `${panel.title}: no query`);
      for (const target of panel.targets ?? []) assert.ok(target.expr && target.refId, panel.title);
    }
  });

  it('has a panel for each thing an operator watches', () => {
    const queried = (name: string): boolean => expressions.some(({ expr }) => metricNamesIn(expr).includes(name));
    for (const name of [
      'http_request_duration_seconds_count', 'http_request_duration_seconds_bucket', 'docshare_rate_limited_requests_total',
      'docshare_consumer_lag', 'docshare_outbox_backlog_events', 'docshare_outbox_oldest_unpublished_age_seconds',
      'docshare_dead_letters_total', 'docshare_read_model_generation_timestamp_seconds', 'docshare_stored_bytes', 'docshare_upload_size_bytes_bucket',
      // The Webhooks row (issue 23).
      'docshare_webhook_deliveries_total', 'docshare_webhook_queue_depth', 'docshare_webhook_dead_letters_total', 'docshare_webhook_first_attempt_seconds_bucket',
    ]) assert.ok(queried(name), `no panel queries ${name}`);
    assert.ok(expressions.some(({ expr }) => /status=~"5\.\."/.test(expr)), 'no 5xx panel');
  });

  it('queries only metrics the services register', async () => {
    assert.deepEqual(metricNamesIn('histogram_quantile(0.95, sum by (service, le) (rate(a_b_bucket{x="y"}[5m]))) / max(c_d)'), ['a_b_bucket', 'c_d']);
    const metrics = await registeredMetrics();
    const unknown = expressions.flatMap(({ panel, expr }) => metricNamesIn(expr).filter((name) => !isRegistered(metrics, name)).map((name) => `${panel}: ${name}`));
    assert.deepEqual(unknown, []);
  });

  it('queries no deprecated metric (their HELP starts with DEPRECATED; docs/observability.md: renamed metrics)', async () => {
    const metrics = await registeredMetrics();
    const deprecated = [...metrics].filter(([, m]) => m.help.startsWith('DEPRECATED')).map(([name]) => name);
    assert.deepEqual(deprecated.sort(), ['docshare_bytes_stored', 'docshare_read_model_generation']);
    const queried = expressions.flatMap(({ panel, expr }) => metricNamesIn(expr).filter((name) => deprecated.includes(name)).map((name) => `${panel}: ${name}`));
    assert.deepEqual(queried, []);
  });
});

describe('infra/observability/grafana: provisioning for compose\'s observability profile (checked here: Grafana never runs in this project\'s tests)', () => {
  interface Service { image?: string; profiles?: string[]; volumes?: string[]; networks?: string[]; ports?: string[] }
  const compose = parse(read('docker-compose.yml')) as { services: Record<string, Service> };
  /** Where a compose service mounts a repository path: container path → host path (relative, no ./). */
  const mounts = (service: string): Map<string, string> => new Map((compose.services[service]?.volumes ?? [])
    .filter((v) => v.startsWith('./')).map((v) => v.split(':')).map(([host, container]) => [container!, host!.slice(2)]));
  const datasources = parse(read('infra/observability/grafana/provisioning/datasources/prometheus.yml')) as {
    apiVersion: number; datasources: { name: string; uid: string; type: string; access: string; url: string; isDefault?: boolean }[];
  };
  const providers = parse(read('infra/observability/grafana/provisioning/dashboards/docshare.yml')) as {
    apiVersion: number; providers: { name: string; type: string; options: { path: string } }[];
  };

  it('compose mounts the provisioning, the dashboard and the scrape configuration where Grafana and Prometheus read them', () => {
    for (const service of ['prometheus', 'grafana']) assert.deepEqual(compose.services[service]?.profiles, ['observability'], service);
    assert.equal(mounts('prometheus').get('/etc/prometheus/prometheus.yml'), 'infra/observability/prometheus.yml');
    assert.equal(mounts('grafana').get('/etc/grafana/provisioning'), 'infra/observability/grafana/provisioning');
    const [provider] = providers.providers;
    assert.equal(providers.providers.length, 1);
    assert.equal(provider?.type, 'file');
    // The provider loads the directory the dashboard file is mounted in.
    const dashboardAt = [...mounts('grafana')].find(([, host]) => host === 'infra/observability/grafana-dashboard.json')?.[0] ?? '';
    assert.ok(dashboardAt.endsWith('.json'), 'grafana mounts infra/observability/grafana-dashboard.json');
    assert.equal(dashboardAt.slice(0, dashboardAt.lastIndexOf('/')), provider?.options.path);
    assert.ok(compose.services['grafana']?.networks?.includes('back'), 'grafana reaches prometheus on the back network');
    assert.deepEqual(compose.services['prometheus']?.networks, ['back']);
  });

  it('provisions one Prometheus datasource, the compose prometheus service, and the dashboard resolves to it', () => {
    assert.equal(datasources.apiVersion, 1);
    assert.equal(datasources.datasources.length, 1);
    const [source] = datasources.datasources;
    assert.equal(source?.type, 'prometheus');
    assert.equal(source.access, 'proxy');
    assert.equal(source.isDefault, true);
    assert.equal(source.url, 'http://prometheus:9090');
    assert.ok(compose.services['prometheus'], 'the url names the prometheus service');
    // Every panel reads ${datasource}; the variable is of type prometheus and starts at this uid.
    const variable = dashboard.templating.list.find((v) => v.name === 'datasource') as { query?: string; current?: { value?: string } } | undefined;
    assert.equal(variable?.query, source.type);
    assert.equal(variable.current?.value, source.uid);
    for (const panel of panels.filter((p) => p.type !== 'row')) {
      for (const ds of [panel.datasource, ...(panel.targets ?? []).map((t) => t.datasource)]) {
        assert.deepEqual(ds, { type: 'prometheus', uid: '${datasource}' }, panel.title);
      }
    }
  });
});

describe('docs/observability.md', () => {
  it('lists every docshare_ metric the services register', async () => {
    const doc = read('docs/observability.md');
    const missing = [...(await registeredMetrics()).keys()].filter((name) => name.startsWith('docshare_') && !doc.includes(`\`${name}`));
    assert.deepEqual(missing, []);
  });
});
