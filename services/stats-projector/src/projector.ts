import type { DocumentProjector } from '@docshare/projection';
import type { ReadModelIndex } from '@docshare/read-store/mongo';
import { statsHandler } from './projection.ts';
import { makeStatsApp } from './app.ts';

/**
 * The indexes the stats read model's queries need (queries.ts); everything else is read by `_id`
 * (a user's counters, a file's facts, a range of days, a batch's sketches).
 */
export const STATS_INDEXES: Readonly<Record<string, readonly ReadModelIndex[]>> = {
  // api-top: the owner's files' days in the window, `{owner_id, date: {$in}}`.
  daily_files: [{ name: 'owner_date', key: [['owner_id', 1], ['date', 1]] }],
  // api-trending: every file's hours in the window, `{hour: {$in}}`.
  hourly_files: [{ name: 'hour', key: [['hour', 1]] }],
};

/** The stats projector: per-user counters, per-file facts, daily and hourly activity. */
export const statsProjector: DocumentProjector = {
  kind: 'documents',
  name: 'stats-projector',
  model: 'stats',
  upstream: 'stats',
  port: 8082,
  indexes: STATS_INDEXES,
  handler: statsHandler,
  queryApp: (store, { publicBaseUrl, logger }) => makeStatsApp(store, logger, { publicBaseUrl }),
};
