export * from './runner.ts';
export * from './progress.ts';
export * from './service.ts';
export * from './distributed.ts';
export * from './generations.ts';
