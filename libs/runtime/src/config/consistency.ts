import { intVar } from '@docshare/http';
import { concern } from './concern.ts';

/** CONSISTENCY_WAIT_MS: the longest a read carrying a consistency token waits for its read model before answering as it is. */
export const consistency = () => concern({
  CONSISTENCY_WAIT_MS: intVar(5_000, 0),
}, (v) => ({ consistencyWaitMs: v.CONSISTENCY_WAIT_MS }));
