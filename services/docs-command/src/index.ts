export * from './commands.ts';
export * from './app.ts';
export * from './command-handler.ts';
export * from './domain/file.ts';
export * from './domain/user.ts';
export * from './domain/category.ts';
export * from './validation.ts';
export * from './blob-sweeper.ts';
