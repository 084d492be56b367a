import { makeWebhookModel } from './model.ts';
import type { WebhookStore } from './port.ts';

/** The WebhookStore in memory (tests, and the reference the other adapters are held to by the contract). */
export const makeMemoryWebhookStore = (): WebhookStore => {
  let closed = false;
  const calls = makeWebhookModel().store(async () => {}, () => {
    if (closed) throw new Error('webhook store is closed');
  });
  return {
    ...calls,
    async close() {
      closed = true;
    },
  };
};
