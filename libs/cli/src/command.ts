// What every command is made of: the context it runs in (the parsed line, the client, output),
// its definition, and the small argument readers the commands share.
import type { Config, Env } from './config.ts';
import type { CommandHelp } from './help.ts';
import type { DocshareClient, FetchLike } from '@docshare/client';
import { UsageError } from './exit.ts';

export interface Io {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  env: Env;
  cwd: string;
  fetch?: FetchLike;
  /** Aborted on Ctrl-C. */
  signal?: AbortSignal;
  /** The clock (default: the system's): today's UTC date for `stats --daily`. */
  now?: () => Date;
}

export type Values = Record<string, string | boolean | string[] | boolean[] | undefined>;

export interface Ctx {
  io: Io;
  url: string;
  config: Config;
  client: DocshareClient;
  json: boolean;
  quiet: boolean;
  progress: boolean;
  values: Values;
  args: string[];
  command: string;
  out(line: string): void;
  note(line: string): void;
  printJson(value: unknown): void;
}

export interface Command extends CommandHelp {
  /** Positional arguments: at least, at most. */
  positionals: [number, number];
  /** Needs a token. */
  auth: boolean;
  run(ctx: Ctx): Promise<void>;
}

export const str = (v: Values[string]): string | undefined => (typeof v === 'string' ? v : undefined);
export const strs = (v: Values[string]): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : typeof v === 'string' ? [v] : []);

export function positiveInt(v: Values[string], name: string, command: string): number | undefined {
  const s = str(v);
  if (s === undefined) return undefined;
  if (!/^[1-9][0-9]*$/.test(s)) throw new UsageError(`--${name} must be a positive integer, got '${s}'`, command);
  return Number(s);
}
