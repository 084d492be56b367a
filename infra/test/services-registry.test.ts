// The services registry (libs/contracts/src/services.ts) is the one list of services: the service
// packages, the gateway's route table, docker-compose.yml and the Prometheus scrape configuration
// must agree with it. Each check returns what disagrees, so a mismatch names itself, and each is
// also run on a copy with one thing wrong to prove it sees it.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import {
  BACKEND_SERVICES, CONSUMER_SERVICES, GATEWAY_SERVICE, NEED_VARS, PROJECTOR_SERVICES, SERVICES, SERVICE_NAMES, UPSTREAM_SERVICES,
  isServiceName, perUpstream, perUpstreamUrlVar, serviceNamed, type ServiceSpec,
} from '@docshare/contracts/services';
import { ROUTES } from '../../services/gateway/src/routes.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

interface ComposeService {
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, unknown>;
}
interface Compose { services: Record<string, ComposeService> }
interface Prometheus { scrape_configs: { job_name: string; dns_sd_configs?: { names?: string[]; port?: number }[] }[] }

const registry: readonly ServiceSpec[] = SERVICES;
const compose = (): Compose => parse(read('docker-compose.yml'), { merge: true }) as Compose;
const prometheus = (): Prometheus => parse(read('infra/observability/prometheus.yml')) as Prometheus;

/** The compose services that run a docshare service: `node services/<name>/src/main.ts`. */
const appServicesOf = (file: Compose): Map<string, ComposeService> =>
  new Map(Object.entries(file.services).filter(([, service]) => /^services\/[^/]+\/src\/main\.ts$/.test(service.command?.[1] ?? '')));

/** What docker-compose.yml says otherwise than the registry: services, entries, ports, servers, URLs. */
export const composeProblems = (file: Compose, services: readonly ServiceSpec[]): string[] => {
  const problems: string[] = [];
  const apps = appServicesOf(file);
  for (const name of apps.keys()) if (!services.some((s) => s.name === name)) problems.push(`compose runs ${name}, which the registry does not list`);
  for (const spec of services) {
    const service = apps.get(spec.name);
    if (service === undefined) {
      problems.push(`compose has no service ${spec.name}`);
      continue;
    }
    const env = service.environment ?? {};
    if (JSON.stringify(service.command) !== JSON.stringify(['node', spec.entry])) problems.push(`${spec.name}: compose runs ${service.command?.join(' ')}, not node ${spec.entry}`);
    if (env['PORT'] !== String(spec.port)) problems.push(`${spec.name}: compose's PORT is ${env['PORT']}, the registry's ${spec.port}`);
    for (const need of spec.needs) if (env[NEED_VARS[need]] === undefined) problems.push(`${spec.name} needs ${need}: compose does not set ${NEED_VARS[need]}`);
    // Every URL of a service it is given points at that service's compose name and registry port.
    for (const target of services.filter((s) => s.urlVar !== undefined && env[s.urlVar] !== undefined)) {
      const url = `http://${target.name}:${target.port}`;
      if (env[target.urlVar!] !== url) problems.push(`${spec.name}: ${target.urlVar} is ${env[target.urlVar!]}, not ${url}`);
    }
    if (spec.kind === 'gateway') {
      for (const upstream of services.filter((s) => s.upstream !== undefined)) {
        if (env[upstream.urlVar!] === undefined) problems.push(`${spec.name}: compose does not set ${upstream.urlVar} (${upstream.name})`);
        if (service.depends_on?.[upstream.name] === undefined) problems.push(`${spec.name}: compose does not make it depend on ${upstream.name}`);
      }
    }
  }
  return problems;
};

/** What the scrape configuration says otherwise than the registry: one job per service, its DNS name, compose's metrics port. */
export const prometheusProblems = (config: Prometheus, file: Compose, services: readonly ServiceSpec[]): string[] => {
  const problems: string[] = [];
  const jobs = new Map(config.scrape_configs.map((job) => [job.job_name, job]));
  for (const name of jobs.keys()) if (!services.some((s) => s.name === name)) problems.push(`prometheus scrapes ${name}, which the registry does not list`);
  for (const spec of services) {
    const job = jobs.get(spec.name);
    if (job === undefined) {
      problems.push(`prometheus has no job ${spec.name}`);
      continue;
    }
    const metricsPort = Number(file.services[spec.name]?.environment?.['METRICS_PORT']);
    const targets = job.dns_sd_configs ?? [];
    if (targets.length !== 1 || JSON.stringify(targets[0]?.names) !== JSON.stringify([spec.name]) || targets[0]?.port !== metricsPort) {
      problems.push(`prometheus job ${spec.name}: scrapes ${JSON.stringify(targets)}, not ${spec.name}:${metricsPort} (compose's METRICS_PORT)`);
    }
  }
  return problems;
};

describe('the services registry', () => {
  it('names each service, port, upstream and URL variable once; the gateway last, every other service before it', () => {
    for (const key of ['name', 'port', 'upstream', 'urlVar', 'package', 'entry'] as const) {
      const values = registry.map((s) => s[key]).filter((v) => v !== undefined);
      assert.equal(new Set(values).size, values.length, `a ${key} appears twice`);
    }
    assert.deepEqual(registry.filter((s) => s.kind === 'gateway').map((s) => s.name), [GATEWAY_SERVICE.name]);
    assert.equal(registry.at(-1), GATEWAY_SERVICE);
    assert.deepEqual([...BACKEND_SERVICES, GATEWAY_SERVICE], registry);
    assert.deepEqual(SERVICE_NAMES, registry.map((s) => s.name));
    for (const spec of registry) assert.equal(spec.upstream === undefined, spec.urlVar === undefined, `${spec.name}: an upstream has a URL variable, and only an upstream`);
    assert.ok(PROJECTOR_SERVICES.every((s) => s.upstream !== undefined && s.declaration !== undefined), 'every projector serves a query API and declares its module');
    assert.deepEqual(CONSUMER_SERVICES.map((s) => s.kind).filter((k) => k !== 'projector' && k !== 'worker'), []);
  });

  it('looks services up by name and keys values by upstream', () => {
    assert.equal(serviceNamed('stats-projector').port, 8082);
    assert.throws(() => serviceNamed('nope'), /no service named nope \(known: docs-command, /);
    assert.equal(isServiceName('gateway'), true);
    assert.equal(isServiceName('kafka'), false);
    assert.deepEqual(Object.keys(perUpstream((s) => s.name)), UPSTREAM_SERVICES.map((s) => s.upstream));
    assert.deepEqual(perUpstreamUrlVar((s) => s.port), Object.fromEntries(UPSTREAM_SERVICES.map((s) => [s.urlVar, s.port])));
  });

  it('is every package under services/ (but the embedded one), each with its package name and entry module', () => {
    const folders = readdirSync(join(ROOT, 'services')).filter((name) => name !== 'standalone' && statSync(join(ROOT, 'services', name)).isDirectory());
    assert.deepEqual([...folders].sort(), [...SERVICE_NAMES].sort());
    for (const spec of registry) {
      const manifest = JSON.parse(read(`services/${spec.name}/package.json`)) as { name: string };
      assert.equal(manifest.name, spec.package, spec.name);
      assert.ok(existsSync(join(ROOT, spec.entry)), `${spec.name}: ${spec.entry} does not exist`);
    }
  });

  it('agrees with what each package declares: name, port, and a projector\'s upstream', async () => {
    for (const spec of registry.filter((s) => s.declaration !== undefined)) {
      const exports = await import(spec.package) as Record<string, { name?: string; port?: number; upstream?: string } | undefined>;
      const declared = exports[spec.declaration!];
      assert.ok(declared, `${spec.package} exports no ${spec.declaration}`);
      assert.equal(declared.name, spec.name, `${spec.package}.${spec.declaration}.name`);
      assert.equal(declared.port, spec.port, `${spec.package}.${spec.declaration}.port`);
      if (spec.kind === 'projector') assert.equal(declared.upstream, spec.upstream, `${spec.package}.${spec.declaration}.upstream`);
    }
  });

  it('gives every route of the gateway a service, and every upstream a route', () => {
    const upstreams = UPSTREAM_SERVICES.map((s) => s.upstream);
    assert.deepEqual(ROUTES.filter((route) => !(upstreams as readonly string[]).includes(route.upstream)).map((route) => route.path), []);
    assert.deepEqual(upstreams.filter((upstream) => !ROUTES.some((route) => route.upstream === upstream)), []);
  });
});

describe('docker-compose.yml and prometheus.yml agree with the services registry', () => {
  it('compose runs every service of the registry, and no other: its entry, port, servers and the URLs of the others', () => {
    assert.deepEqual(composeProblems(compose(), registry), []);
  });

  it('prometheus scrapes every service of the registry, and no other, by its compose name on compose\'s metrics port', () => {
    assert.deepEqual(prometheusProblems(prometheus(), compose(), registry), []);
  });

  it('a service, a port, a server or a URL the registry says otherwise is named', () => {
    const extra: ServiceSpec = { name: 'likes-projector', kind: 'projector', port: 8086, package: '@docshare/likes-projector', entry: 'services/likes-projector/src/main.ts', needs: ['mongo', 'kafka'] };
    assert.deepEqual(composeProblems(compose(), [...registry, extra]), ['compose has no service likes-projector']);
    assert.deepEqual(prometheusProblems(prometheus(), compose(), [...registry, extra]), ['prometheus has no job likes-projector']);
    assert.deepEqual(composeProblems(compose(), registry.filter((s) => s.name !== 'text-extractor')), ['compose runs text-extractor, which the registry does not list']);
    const moved = registry.map((s) => (s.name === 'files-projector' ? { ...s, port: 9083 } : s));
    assert.deepEqual(composeProblems(compose(), moved), [
      'files-projector: compose\'s PORT is 8083, the registry\'s 9083',
      'gateway: FILES_URL is http://files-projector:8083, not http://files-projector:9083',
    ]);
    const needy = registry.map((s) => (s.name === 'stats-projector' ? { ...s, needs: [...s.needs, 'elasticsearch' as const] } : s));
    assert.deepEqual(composeProblems(compose(), needy), ['stats-projector needs elasticsearch: compose does not set ELASTICSEARCH_URL']);
    const file = compose();
    delete file.services['gateway']?.depends_on?.['search-projector'];
    assert.deepEqual(composeProblems(file, registry), ['gateway: compose does not make it depend on search-projector']);
    const config = prometheus();
    config.scrape_configs = config.scrape_configs.map((job) => (job.job_name === 'gateway' ? { ...job, dns_sd_configs: [{ names: ['gateway'], port: 9090 }] } : job));
    assert.deepEqual(prometheusProblems(config, compose(), registry), ['prometheus job gateway: scrapes [{"names":["gateway"],"port":9090}], not gateway:9464 (compose\'s METRICS_PORT)']);
  });
});
