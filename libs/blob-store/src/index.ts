export * from './port.ts';
export { makeFsBlobStore } from './fs-blob-store.ts';
