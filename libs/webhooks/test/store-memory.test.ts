import { webhookStoreContract } from '../src/store/contract.ts';
import { makeMemoryWebhookStore } from '../src/store/memory-store.ts';

webhookStoreContract('memory', async () => makeMemoryWebhookStore());
