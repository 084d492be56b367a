/**
 * @docshare/analytics: the pieces creator statistics are built from. UTC day and hour keys
 * (days.ts), unique counters that are exact while small and HyperLogLog past that (sketch.ts),
 * and the private viewer key with its daily salt store (viewer-key.ts; the MongoDB salt store is
 * `@docshare/analytics/mongo`, the adapters' contract `@docshare/analytics/contract`).
 */
export * from './days.ts';
export * from './sketch.ts';
export * from './viewer-key.ts';
