export * from './port.ts';
export { openFileClaimStore } from './file-claim-store.ts';
export { openMongoClaimStore } from './mongo-claim-store.ts';
