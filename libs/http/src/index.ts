export * from './errors.ts';
export * from './middleware.ts';
export * from './ops.ts';
export * from './logger.ts';
export * from './serve.ts';
export * from './last-resort.ts';
export * from './config.ts';
export * from './metrics-server.ts';
