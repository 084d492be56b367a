import { corsOriginsVar, optionalVar, trustProxyOf } from '@docshare/http';
import { concern } from './concern.ts';

/** What the public port needs to know about its clients: proxies in front of it, browser origins allowed. */
export const edge = () => concern({
  /** express `trust proxy` (e.g. `1`), so the per-IP limit sees the client behind a proxy. */
  TRUST_PROXY: optionalVar(),
  /** Browser origins allowed to call the API cross-origin (comma-separated, or `*`); unset: none. */
  CORS_ORIGINS: corsOriginsVar(),
}, (v) => ({ trustProxy: trustProxyOf(v.TRUST_PROXY), corsOrigins: v.CORS_ORIGINS }));
