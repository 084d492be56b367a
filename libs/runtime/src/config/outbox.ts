import { intVar, optionalVar } from '@docshare/http';
import { concern } from './concern.ts';

/** The write side's outbox relay. */
export const outbox = () => concern({
  /** `/readyz` reports `kafka` degraded when the oldest unpublished event is older than this. */
  RELAY_STALL_MS: intVar(10_000, 1),
  /** The relay's lease owner; default: `<hostname>:<PORT>` (instanceId). */
  INSTANCE_ID: optionalVar(),
}, (v) => ({ relayStallMs: v.RELAY_STALL_MS, instanceId: v.INSTANCE_ID }), { INSTANCE_ID: '<hostname>:<PORT>' });
