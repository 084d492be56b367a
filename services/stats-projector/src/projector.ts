import type { DocumentProjector } from '@docshare/projection';
import { statsHandler } from './projection.ts';
import { makeStatsApp } from './app.ts';

/** The stats projector: per-user counters, read by `_id` only (no secondary index). */
export const statsProjector: DocumentProjector = {
  kind: 'documents',
  name: 'stats-projector',
  model: 'stats',
  upstream: 'stats',
  port: 8082,
  indexes: {},
  handler: statsHandler,
  queryApp: (store, { logger }) => makeStatsApp(store, logger),
};
