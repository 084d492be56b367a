// The start-up of a distributed service: its MongoDB client (and the command counter on it), its
// Kafka bus and topics, its instance id (their configuration: @docshare/runtime/config).
export * from './mongo.ts';
export * from './kafka.ts';
export * from './store-commands.ts';
