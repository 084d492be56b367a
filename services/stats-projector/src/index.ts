export * from './projection.ts';
export * from './queries.ts';
export * from './params.ts';
export * from './app.ts';
export * from './projector.ts';
