import type { Express } from 'express';
import type { ProjectorUpstream } from '@docshare/contracts/services';
import type { Logger } from '@docshare/http';
import type { ReadStore } from '@docshare/read-store';
import type { ReadModelIndex } from '@docshare/read-store/mongo';
import type { SearchIndex } from '@docshare/search-index';
import type { BatchApply } from './runner.ts';

/** What a projector's query app is made with, besides its read model. */
export interface QueryContext {
  publicBaseUrl: string;
  logger: Logger;
}

interface ProjectorFacts {
  /** Service name, consumer group (before KAFKA_GROUP_SUFFIX) and checkpoint group. */
  name: string;
  /** The read model: its generation pointer (read_model_generations) and collection prefix. */
  model: string;
  /** The name its query API is routed under (routes.ts `upstream`), as the registry gives it. */
  upstream: ProjectorUpstream;
  /** The distributed service's default PORT. */
  port: number;
}

/** A projector whose read model is documents in a ReadStore (MongoDB; memory in embedded mode). */
export interface DocumentProjector extends ProjectorFacts {
  kind: 'documents';
  /** The indexes its queries need, per collection (unprefixed name). */
  indexes: Readonly<Record<string, readonly ReadModelIndex[]>>;
  handler(store: ReadStore): BatchApply;
  queryApp(store: ReadStore, context: QueryContext): Express;
}

/** A projector whose read model is the search index (Elasticsearch; memory in embedded mode). */
export interface SearchProjector extends ProjectorFacts {
  kind: 'search';
  /** `refresh: false` while filling a rebuild's index (published, i.e. refreshed, once). */
  handler(index: SearchIndex, options?: { refresh?: boolean }): BatchApply;
  queryApp(index: SearchIndex, context: QueryContext): Express;
}

/**
 * Everything about one projector, declared once in its package (`projector.ts`): the distributed
 * main (distributed.ts), the embedded composition and `npm run rebuild` all loop over these.
 */
export type ProjectorModule = DocumentProjector | SearchProjector;

/** Whether `value` is a projector module (what a projector package's declaration export must be). */
export const isProjectorModule = (value: unknown): value is ProjectorModule =>
  typeof value === 'object' && value !== null && 'kind' in value && (value.kind === 'documents' || value.kind === 'search')
  && 'name' in value && typeof value.name === 'string' && 'handler' in value && typeof value.handler === 'function'
  && 'queryApp' in value && typeof value.queryApp === 'function';

/**
 * The projector modules of the registry's projectors (libs/contracts/src/services.ts), each the
 * declaration its package exports, in the registry's order: what a composition loops over
 * (embedded mode, `npm run rebuild`) so a new projector is its package plus one registry line.
 */
export const loadProjectorModules = (
  specs: readonly { name: string; package: string; declaration: string }[],
): Promise<ProjectorModule[]> => Promise.all(specs.map(async (spec) => {
  const exports: Record<string, unknown> = await import(spec.package);
  const module = exports[spec.declaration];
  if (!isProjectorModule(module) || module.name !== spec.name) throw new Error(`${spec.package} declares no projector ${spec.declaration} named ${spec.name}`);
  return module;
}));
