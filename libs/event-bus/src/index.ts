export * from './port.ts';
