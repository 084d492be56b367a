export * from './port.ts';
export * from './file-log.ts';
export { EVENT_INDEXES, mongoOutbox, openMongoEventStore } from './mongo-event-store.ts';
export type { AppendDoc, MongoEventStore, MongoEventStoreOptions, MongoOutbox, StreamIndexDoc } from './mongo-event-store.ts';
