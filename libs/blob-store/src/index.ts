// Real-server adapters have their own entry point (@docshare/blob-store/minio) so embedded mode never loads their drivers.
export * from './port.ts';
export { makeFsBlobStore } from './fs-blob-store.ts';
