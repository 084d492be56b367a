export * from './lease.ts';
export * from './relay.ts';
