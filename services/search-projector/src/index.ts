export * from './projection.ts';
export * from './app.ts';
