import { ConfigError, optionalVar } from '@docshare/http';
import { concern } from './concern.ts';

/**
 * The edge's upstream URLs (DOCS_COMMAND_URL, STATS_URL, ...) are the services registry's (its
 * proxy's UPSTREAM_URL_VARS, defaults from each service's port); the text extractor reads
 * DOCS_COMMAND_URL with no default (it must be told where the write side is).
 */
const INTERNAL_VARS = {
  /** Shared by the write side and the text extractor, which sends it to record extractions; unset on the write side: no internal routes. */
  INTERNAL_TOKEN: optionalVar(),
};

/** The write side's INTERNAL_TOKEN: optional (unset, its internal routes are off). */
export const internalRoutes = () => concern(INTERNAL_VARS, (v) => ({ internalToken: v.INTERNAL_TOKEN }));

/** The text extractor's way to record results: the write side's internal route (DOCS_COMMAND_URL) and its INTERNAL_TOKEN, both required. */
export const recorder = () => concern({ ...INTERNAL_VARS, DOCS_COMMAND_URL: optionalVar() }, (v) => {
  const missing = [v.DOCS_COMMAND_URL === undefined ? 'DOCS_COMMAND_URL is required' : undefined, v.INTERNAL_TOKEN === undefined ? 'INTERNAL_TOKEN is required' : undefined];
  if (v.DOCS_COMMAND_URL === undefined || v.INTERNAL_TOKEN === undefined) throw new ConfigError(missing.filter((m) => m !== undefined));
  return { docsCommandUrl: v.DOCS_COMMAND_URL, internalToken: v.INTERNAL_TOKEN };
});
