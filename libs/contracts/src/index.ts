export * from './events.ts';
export * from './errors.ts';
export * from './messages.ts';
export * from './values.ts';
export * from './keyed-queue.ts';
export * from './backoff.ts';
export * from './consistency.ts';
export * from './retrying.ts';
