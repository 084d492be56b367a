// Real-server adapters have their own entry point (@docshare/event-bus/kafka) so embedded mode never loads their drivers.
export * from './port.ts';
export * from './batches.ts';
export * from './log-bus.ts';
