export * from './port.ts';
export { openFileClaimStore } from './file-claim-store.ts';
