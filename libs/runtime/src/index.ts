// The lifecycle of a docshare consumer, in both modes: the consumer loop every consumer of the
// event topic runs on and its metrics. The real servers' start-up (MongoDB, Kafka, their
// variables) has its own entry point, @docshare/runtime/distributed, so embedded mode never loads
// their drivers.
export * from './consume.ts';
export * from './metrics.ts';
export * from './service.ts';
