import type { Counter, Registry } from 'prom-client';
import { counter } from '@docshare/http';

/*
 * `docshare_store_commands_total{command,collection}`: every command a service's MongoDB client
 * sends (the driver's command monitoring, `monitorCommands: true` in connectMongo), by command
 * name and the collection it names. Names only: never a filter, a document or a value. What
 * `npm run bench:store-commands` and bench:stack divide by the API calls they made.
 */

export const STORE_COMMANDS_METRIC = 'docshare_store_commands_total';

/** The part of a driver's CommandStartedEvent counted here. */
export interface StartedCommand {
  commandName: string;
  command: Record<string, unknown>;
}

/** What emits `commandStarted` (a MongoClient made with `monitorCommands: true`). */
export interface CommandMonitor {
  on(event: 'commandStarted', listener: (event: StartedCommand) => void): unknown;
}

/** A collection name as a label: a bounded, printable name, else '' (never a value from a document). */
const COLLECTION = /^[A-Za-z0-9_.$-]{1,120}$/;
const COMMAND = /^[A-Za-z]{1,64}$/;

/**
 * The collection a command names: its first field's value for the collection commands (insert,
 * update, delete, find, aggregate, count, distinct, findAndModify, createIndexes, ...), `collection`
 * for getMore; '' for a database command (ping, endSessions, an aggregate on the database).
 */
export const collectionOf = ({ commandName, command }: StartedCommand): string => {
  const named = commandName === 'getMore' ? command.collection : command[commandName];
  return typeof named === 'string' && COLLECTION.test(named) ? named : '';
};

/**
 * Counts every command `client` sends into `registry` from now on; returns the counter (one per
 * registry: a second client counts into the same one).
 */
export const countStoreCommands = (client: CommandMonitor, registry: Registry): Counter => {
  const commands = counter(registry, STORE_COMMANDS_METRIC,
    'Commands sent to MongoDB by this service (driver command monitoring), by command name and collection', ['command', 'collection']);
  client.on('commandStarted', (event) => {
    commands.inc({ command: COMMAND.test(event.commandName) ? event.commandName : 'other', collection: collectionOf(event) });
  });
  return commands;
};
