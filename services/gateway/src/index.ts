export * from './app.ts';
export * from './routes.ts';
export * from './openapi.ts';
export * from './rate-limit.ts';
export * from './proxy.ts';
export * from './cors.ts';
export * from './docs-ui.ts';
