import { resolve } from 'node:path';
import { intVar, stringVar } from '@docshare/http';
import { concern } from './concern.ts';

/** `npm start`'s data directory: event log, claims, blobs and the generated JWT secret. */
export const dataDir = () => concern({
  DATA_DIR: stringVar('./data'),
}, (v) => resolve(v.DATA_DIR));

/** `npm start`'s supervisor (services/standalone/src/supervise.ts): restart backoff and when it gives up. */
export const supervisor = () => concern({
  SUPERVISOR_BACKOFF_MS: intVar(250, 1),
  SUPERVISOR_BACKOFF_MAX_MS: intVar(30_000, 1),
  SUPERVISOR_STABLE_MS: intVar(60_000, 0),
  SUPERVISOR_MAX_START_FAILURES: intVar(5, 1),
}, (v) => ({
  initialDelayMs: v.SUPERVISOR_BACKOFF_MS,
  maxDelayMs: v.SUPERVISOR_BACKOFF_MAX_MS,
  stableMs: v.SUPERVISOR_STABLE_MS,
  maxStartFailures: v.SUPERVISOR_MAX_START_FAILURES,
}));
