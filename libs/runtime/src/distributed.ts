// The start-up of a distributed service: its MongoDB client (and the command counter on it), its
// Kafka bus and topics, the variables they are configured by, its instance id.
export * from './vars.ts';
export * from './mongo.ts';
export * from './kafka.ts';
export * from './store-commands.ts';
