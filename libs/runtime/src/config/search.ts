import { intVar, stringVar } from '@docshare/http';
import { concern } from './concern.ts';

/** Elasticsearch (the search projector): ELASTICSEARCH_URL required. */
export const search = () => concern({
  ELASTICSEARCH_URL: stringVar(),
  ELASTICSEARCH_ALIAS: stringVar('docshare-files'),
  // A frozen or overloaded Elasticsearch fails a search within seconds (a 503), not after 30 s.
  ELASTICSEARCH_REQUEST_TIMEOUT_MS: intVar(5_000, 1),
  ELASTICSEARCH_MAX_RETRIES: intVar(1, 0),
}, (v) => ({
  url: v.ELASTICSEARCH_URL, alias: v.ELASTICSEARCH_ALIAS, requestTimeoutMs: v.ELASTICSEARCH_REQUEST_TIMEOUT_MS, maxRetries: v.ELASTICSEARCH_MAX_RETRIES,
}));
