export * from './port.ts';
export * from './log-bus.ts';
export * from './kafka.ts';
