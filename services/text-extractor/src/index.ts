export * from './extraction.ts';
export * from './module.ts';
export * from './http-recorder.ts';
