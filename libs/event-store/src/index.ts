export * from './port.ts';
export * from './file-log.ts';
