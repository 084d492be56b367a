// Real-server adapters have their own entry point (@docshare/event-store/mongo) so embedded mode never loads their drivers.
export * from './port.ts';
export * from './file-log.ts';
