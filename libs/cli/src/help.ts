// Help texts: the whole CLI's, and each command's from its definition.
import { EXIT_HELP } from './exit.ts';

export interface OptionHelp {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** The value's name in help (`<file>`). */
  value?: string;
  help: string;
}

export interface CommandHelp {
  name: string;
  summary: string;
  /** After `docshare <name>`. */
  args: string;
  description?: string;
  options: Record<string, OptionHelp>;
  examples?: string[];
}

export const GLOBAL_OPTIONS: Record<string, OptionHelp> = {
  url: { type: 'string', value: '<url>', help: 'API base URL (default: $DOCSHARE_URL, else the last login\'s, else http://localhost:8080)' },
  json: { type: 'boolean', help: 'print the server\'s JSON answer (errors too) on stdout, for scripts' },
  quiet: { type: 'boolean', short: 'q', help: 'print only the essential value (an id, a path) and no progress bar' },
  'no-progress': { type: 'boolean', help: 'no progress bar (there is none anyway when stderr is not a terminal)' },
  retries: { type: 'string', value: '<n>', help: 'retries after a network error, 429 or 503 (default 3)' },
  help: { type: 'boolean', short: 'h', help: 'show help' },
};

const optionLine = (name: string, o: OptionHelp): [string, string] =>
  [`${o.short ? `-${o.short}, ` : '    '}--${name}${o.value ? ` ${o.value}` : ''}`, `${o.help}${o.multiple ? ' (repeatable)' : ''}`];

function table(rows: [string, string][], indent = 2): string {
  const width = Math.min(Math.max(...rows.map(([a]) => a.length)), 34);
  return rows.map(([a, b]) => `${' '.repeat(indent)}${a.padEnd(width)}  ${b}`).join('\n');
}

export function commandHelp(c: CommandHelp): string {
  const parts = [`Usage: docshare ${c.name}${c.args ? ` ${c.args}` : ''}${Object.keys(c.options).length > 0 ? ' [options]' : ''}`, '', c.summary];
  if (c.description) parts.push('', c.description);
  if (Object.keys(c.options).length > 0) {
    parts.push('', 'Options:', table(Object.entries(c.options).map(([n, o]) => optionLine(n, o))));
  }
  parts.push('', 'Global options:', table(Object.entries(GLOBAL_OPTIONS).map(([n, o]) => optionLine(n, o))));
  if (c.examples && c.examples.length > 0) parts.push('', 'Examples:', ...c.examples.map((e) => `  ${e}`));
  return `${parts.join('\n')}\n`;
}

export function mainHelp(commands: CommandHelp[], configFile: string): string {
  const commandRows: [string, string][] = [...commands.map((c): [string, string] => [c.name, c.summary]), ['help [command]', 'this help, or a command\'s']];
  const globalRows: [string, string][] = [...Object.entries(GLOBAL_OPTIONS).map(([n, o]) => optionLine(n, o)), ['-V, --version', 'print the version']];
  return `docshare: the command line client of the docshare API

Usage: docshare <command> [arguments] [options]

Commands:
${table(commandRows)}

Global options:
${table(globalRows)}

Environment:
  DOCSHARE_URL       the API base URL (when --url is not given)
  DOCSHARE_TOKEN     a JWT to use instead of the saved one
  DOCSHARE_PASSWORD  the password for register and login (else --password-stdin, else a prompt)
  DOCSHARE_RESUMABLE_THRESHOLD  uploads larger than this (bytes, 64M, 1G; default 64M) go in resumable parts
  XDG_CONFIG_HOME    where the config lives (now: ${configFile})
  XDG_STATE_HOME     where interrupted uploads are kept for 'upload --resume' (docshare/uploads)

login and register save the token in that file (mode 0600), for that server only; logout removes
it. The token is never printed.

${EXIT_HELP}

Run 'docshare <command> --help' for a command's options and examples.
`;
}
