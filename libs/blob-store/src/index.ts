export * from './port.ts';
export { makeFsBlobStore } from './fs-blob-store.ts';
export { makeMinioBlobStore } from './minio-blob-store.ts';
export type { MinioBlobStoreOptions } from './minio-blob-store.ts';
