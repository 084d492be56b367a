// Real-server adapters have their own entry point (@docshare/claim-store/mongo) so embedded mode never loads their drivers.
export * from './port.ts';
export { openFileClaimStore } from './file-claim-store.ts';
