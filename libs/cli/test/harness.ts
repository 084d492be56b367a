// The CLI run in-process for its tests: captured output, a temporary home, the server played by a
// function standing in for fetch (no answer: the server cannot be reached).
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { run, type Io } from '../src/cli.ts';

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  /** Every request, in order: its URL, its init, and its body parsed when it is JSON text. */
  calls: { url: string; init: RequestInit | undefined; body: unknown }[];
}

export interface CliOptions {
  /** The user's home (the config file goes to `<home>/config`). */
  home: string;
  env?: Record<string, string>;
  /** Plays the server; without it every request fails as a refused connection does. */
  answer?: (url: string, init?: RequestInit) => Response | Promise<Response>;
  /** Output on a terminal (progress bars, colours). */
  tty?: boolean;
  /** The CLI's clock (default: the system's). */
  now?: () => Date;
  /** Ctrl-C, as main.ts aborts it. */
  signal?: AbortSignal;
}

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

export async function runCli(argv: string[], { home, env = {}, answer, tty = false, now, signal }: CliOptions): Promise<Ran> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => { out += c.toString(); });
  stderr.on('data', (c: Buffer) => { err += c.toString(); });
  if (tty) Object.assign(stdout, { isTTY: true });
  const calls: Ran['calls'] = [];
  const io: Io = {
    stdout: stdout as unknown as NodeJS.WriteStream,
    stderr: stderr as unknown as NodeJS.WriteStream,
    stdin: new PassThrough() as unknown as NodeJS.ReadStream,
    env: { XDG_CONFIG_HOME: path.join(home, 'config'), HOME: home, ...env },
    cwd: home,
    ...(now ? { now } : {}),
    ...(signal ? { signal } : {}),
    fetch: async (input, init) => {
      const body = typeof init?.body === 'string' ? parsed(init.body) : undefined;
      calls.push({ url: String(input), init, body });
      if (!answer) throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
      return await answer(String(input), init);
    },
  };
  const code = await run(argv, io);
  return { code, stdout: out, stderr: err, calls };
}

/** A JSON answer as the API gives it. */
export const jsonResponse = (status: number, body: unknown): Response =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'rid' } });
