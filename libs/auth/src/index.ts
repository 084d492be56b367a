export * from './tokens.ts';
export * from './passwords.ts';
export * from './signed-urls.ts';
export * from './secret-file.ts';
