/**
 * The one list of docshare's services (issue 20, item 4): what each one is, where it listens in a
 * distributed deployment, what serves it, and what it needs. Everything outside the services that
 * needs the list derives it from here: the gateway's upstreams (their URL variables, defaults,
 * readiness checks, the route table's `upstream` type), `npm run stack` (infra/stack), `npm run
 * rebuild`, the chaos suite's faults, `npm run bench:stack`, the compose validation; and
 * infra/test/services-registry.test.ts fails when docker-compose.yml or the Prometheus scrape
 * configuration disagree with it, or a service package declares another name, port or upstream.
 *
 * Pure data: no service package is imported here (contracts is the bottom layer). A module that
 * needs a service's code loads it by the strings below (`import(service.package)`, then its
 * `declaration` export).
 *
 * Adding a projector: its package under services/, one line here, and its entries in
 * docker-compose.yml and infra/observability/prometheus.yml (the test names what is missing).
 */

/** What a service is: the write side, a read model with its query API, a background consumer, or the edge. */
export type ServiceKind = 'command' | 'projector' | 'worker' | 'gateway';

/** The servers a service talks to in a distributed deployment. */
export type Need = 'mongo' | 'kafka' | 'minio' | 'elasticsearch' | 'redis';

/** The variable that tells a service where each server is (docker-compose.yml, infra/local's stack.env). */
export const NEED_VARS: Readonly<Record<Need, string>> = {
  mongo: 'MONGO_URL',
  kafka: 'KAFKA_BROKERS',
  minio: 'MINIO_ENDPOINT',
  elasticsearch: 'ELASTICSEARCH_URL',
  redis: 'REDIS_URL',
};

export interface ServiceSpec {
  /** Its package's folder under services/, process and log name, consumer group, compose service, Prometheus job. */
  readonly name: string;
  readonly kind: ServiceKind;
  /** Its port in a distributed deployment (`PORT`'s default, compose's `PORT`). */
  readonly port: number;
  /** Its workspace package. */
  readonly package: string;
  /** The process's entry module, from the repository's root. */
  readonly entry: string;
  /**
   * The export of `package` that declares it for both modes (a projector's module, the text
   * extractor's name and port); absent for a service with none.
   */
  readonly declaration?: string;
  /** The gateway's name for the API it serves (a route's `upstream`); absent: the gateway routes nothing to it. */
  readonly upstream?: string;
  /** The variable that holds its URL for the services that call it (the gateway, the text extractor). */
  readonly urlVar?: string;
  /** The servers it cannot run without. */
  readonly needs: readonly Need[];
  /** The servers it uses when it is given them (their variable set), and does without otherwise. */
  readonly optional?: readonly Need[];
}

/** Every service, in start order: the command side, the projectors, the workers; the gateway last. */
export const SERVICES = [
  {
    name: 'docs-command', kind: 'command', port: 8081, package: '@docshare/docs-command', entry: 'services/docs-command/src/main.ts',
    upstream: 'docs', urlVar: 'DOCS_COMMAND_URL', needs: ['mongo', 'kafka', 'minio'],
  },
  {
    name: 'stats-projector', kind: 'projector', port: 8082, package: '@docshare/stats-projector', entry: 'services/stats-projector/src/main.ts',
    declaration: 'statsProjector', upstream: 'stats', urlVar: 'STATS_URL', needs: ['mongo', 'kafka'],
  },
  {
    name: 'files-projector', kind: 'projector', port: 8083, package: '@docshare/files-projector', entry: 'services/files-projector/src/main.ts',
    declaration: 'filesProjector', upstream: 'files', urlVar: 'FILES_URL', needs: ['mongo', 'kafka'],
  },
  {
    name: 'search-projector', kind: 'projector', port: 8084, package: '@docshare/search-projector', entry: 'services/search-projector/src/main.ts',
    declaration: 'searchProjector', upstream: 'search', urlVar: 'SEARCH_URL', needs: ['mongo', 'kafka', 'elasticsearch'],
  },
  {
    name: 'text-extractor', kind: 'worker', port: 8085, package: '@docshare/text-extractor', entry: 'services/text-extractor/src/main.ts',
    declaration: 'textExtractor', needs: ['mongo', 'kafka', 'minio'],
  },
  {
    name: 'webhook-dispatcher', kind: 'worker', port: 8086, package: '@docshare/webhook-dispatcher', entry: 'services/webhook-dispatcher/src/main.ts',
    declaration: 'webhookDispatcher', needs: ['mongo', 'kafka'],
  },
  {
    name: 'gateway', kind: 'gateway', port: 8080, package: '@docshare/gateway', entry: 'services/gateway/src/main.ts',
    needs: ['redis'], optional: ['mongo', 'minio'],
  },
] as const satisfies readonly ServiceSpec[];

export type Service = (typeof SERVICES)[number];
export type ServiceName = Service['name'];
/** A service the gateway routes to. */
export type UpstreamService = Extract<Service, { upstream: string }>;
/** The gateway's names for the services behind it (routes.ts `upstream`). */
export type Upstream = UpstreamService['upstream'];
/** The variables that hold the upstreams' URLs. */
export type UpstreamUrlVar = UpstreamService['urlVar'];
export type ProjectorService = Extract<Service, { kind: 'projector' }>;
/** The projectors' upstream names (a projector module's `upstream`). */
export type ProjectorUpstream = ProjectorService['upstream'];

const isUpstream = (service: Service): service is UpstreamService => 'upstream' in service;
const isProjector = (service: Service): service is ProjectorService => service.kind === 'projector';
const isGateway = (service: Service): service is Extract<Service, { kind: 'gateway' }> => service.kind === 'gateway';

export const SERVICE_NAMES: readonly ServiceName[] = SERVICES.map((service) => service.name);

/** The edge: the one public port. */
export const GATEWAY_SERVICE = SERVICES.find(isGateway) ?? (() => { throw new Error('the registry has no gateway'); })();

/** Every service behind the gateway, in start order (they start before it, and stop after it). */
export const BACKEND_SERVICES: readonly Service[] = SERVICES.filter((service) => !isGateway(service));

/** The services the gateway routes to, in start order. */
export const UPSTREAM_SERVICES: readonly UpstreamService[] = SERVICES.filter(isUpstream);

/** The projectors: each a read model, its consumer group (its name) and its query API. */
export const PROJECTOR_SERVICES: readonly ProjectorService[] = SERVICES.filter(isProjector);

/** The services that consume the event log, each as a consumer group of its own name: the projectors and the workers. */
export const CONSUMER_SERVICES: readonly Service[] = SERVICES.filter((service) => service.kind === 'projector' || service.kind === 'worker');

/**
 * A record with one key per entry: `entries` comes from mapping a whole list of the registry (every
 * upstream, say), so every key of `K` is there; what `Object.fromEntries` cannot know by its type.
 */
const keyed = <K extends string, T>(entries: readonly (readonly [K, T])[]): Record<K, T> => Object.fromEntries(entries) as Record<K, T>;

/** One value per upstream, by its upstream name (the gateway's handlers, URLs). */
export const perUpstream = <T>(value: (service: UpstreamService) => T): Record<Upstream, T> =>
  keyed(UPSTREAM_SERVICES.map((service) => [service.upstream, value(service)] as const));

/** One value per upstream, by its URL variable (the gateway's configuration shape). */
export const perUpstreamUrlVar = <T>(value: (service: UpstreamService) => T): Record<UpstreamUrlVar, T> =>
  keyed(UPSTREAM_SERVICES.map((service) => [service.urlVar, value(service)] as const));

/** A service by its name; throws on a name the registry does not know. */
export const serviceNamed = (name: string): Service => {
  const found = SERVICES.find((service) => service.name === name);
  if (found === undefined) throw new Error(`no service named ${name} (known: ${SERVICE_NAMES.join(', ')})`);
  return found;
};

/** Whether `name` is a service of the registry. */
export const isServiceName = (name: string): name is ServiceName => SERVICE_NAMES.some((known) => known === name);
