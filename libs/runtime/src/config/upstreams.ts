import { ConfigError, optionalVar } from '@docshare/http';
import { concern } from './concern.ts';

/**
 * Where the services are. The gateway falls back on each service's local port; the text extractor
 * records its results at DOCS_COMMAND_URL and has no default (it must be told).
 */
const UPSTREAM_VARS = {
  DOCS_COMMAND_URL: optionalVar(),
  STATS_URL: optionalVar(),
  FILES_URL: optionalVar(),
  SEARCH_URL: optionalVar(),
};
const UPSTREAM_DEFAULTS = {
  DOCS_COMMAND_URL: 'http://127.0.0.1:8081',
  STATS_URL: 'http://127.0.0.1:8082',
  FILES_URL: 'http://127.0.0.1:8083',
  SEARCH_URL: 'http://127.0.0.1:8084',
} as const;

/** The gateway's upstreams (`*_URL`). */
export const upstreams = () => concern(UPSTREAM_VARS, (v) => ({
  docs: v.DOCS_COMMAND_URL ?? UPSTREAM_DEFAULTS.DOCS_COMMAND_URL,
  stats: v.STATS_URL ?? UPSTREAM_DEFAULTS.STATS_URL,
  files: v.FILES_URL ?? UPSTREAM_DEFAULTS.FILES_URL,
  search: v.SEARCH_URL ?? UPSTREAM_DEFAULTS.SEARCH_URL,
}), UPSTREAM_DEFAULTS);

const INTERNAL_VARS = {
  /** Shared by docs-command and the text extractor, which sends it to record extractions; unset in docs-command: no internal routes. */
  INTERNAL_TOKEN: optionalVar(),
};

/** docs-command's INTERNAL_TOKEN: optional (unset, its internal routes are off). */
export const internalRoutes = () => concern(INTERNAL_VARS, (v) => ({ internalToken: v.INTERNAL_TOKEN }));

/** The text extractor's way to record results: docs-command's internal route (DOCS_COMMAND_URL) and its INTERNAL_TOKEN, both required. */
export const recorder = () => concern({ ...INTERNAL_VARS, DOCS_COMMAND_URL: UPSTREAM_VARS.DOCS_COMMAND_URL }, (v) => {
  const missing = [v.DOCS_COMMAND_URL === undefined ? 'DOCS_COMMAND_URL is required' : undefined, v.INTERNAL_TOKEN === undefined ? 'INTERNAL_TOKEN is required' : undefined];
  if (v.DOCS_COMMAND_URL === undefined || v.INTERNAL_TOKEN === undefined) throw new ConfigError(missing.filter((m) => m !== undefined));
  return { docsCommandUrl: v.DOCS_COMMAND_URL, internalToken: v.INTERNAL_TOKEN };
});
