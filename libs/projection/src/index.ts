// The projection contract and its one runner. The distributed main (MongoDB, Elasticsearch, Kafka)
// has its own entry point (@docshare/projection/distributed) so embedded mode never loads their drivers.
export * from './module.ts';
export * from './runner.ts';
export * from './generations.ts';
export * from './metrics.ts';
export * from './service.ts';
