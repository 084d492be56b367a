import type { BatchHandler, EventHandler } from './port.ts';

/** A per-event handler as a batch handler (what `subscribe` runs with batches of one). */
export const oneAtATime = (handler: EventHandler): BatchHandler => async (batch) => {
  for (const record of batch.records) await handler(record);
};
