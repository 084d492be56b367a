// The package's surface (services/standalone composes it in embedded mode; main.ts runs it alone).
// Use cases and their domain: commands/; the HTTP routes: http/; the public file page: pages/.
export * from './commands/docs-commands.ts';
export * from './commands/recorded.ts';
export * from './commands/users.ts';
export * from './commands/uploads.ts';
export * from './commands/content.ts';
export * from './commands/command-handler.ts';
export * from './commands/domain/file.ts';
export * from './commands/domain/user.ts';
export * from './commands/domain/category.ts';
export * from './commands/blob-sweeper.ts';
export * from './commands/accounts.ts';
export * from './commands/account-sources.ts';
export * from './commands/exports.ts';
export { openEmbeddedStorageLedger } from './commands/storage-quota.ts';
export * from './http/app.ts';
export * from './http/validation.ts';
export * from './metrics.ts';
