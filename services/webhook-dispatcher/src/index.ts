export * from './module.ts';
export * from './dispatcher.ts';
export * from './endpoints.ts';
export * from './queues.ts';
export * from './metrics.ts';
export * from './http-recorder.ts';
