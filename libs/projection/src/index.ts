// Real-server adapters have their own entry point (@docshare/projection/distributed) so embedded mode never loads their drivers.
export * from './runner.ts';
export * from './consistency.ts';
export * from './service.ts';
export * from './generations.ts';
export * from './fence.ts';
export * from './module.ts';
export * from './metrics.ts';
