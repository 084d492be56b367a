// Reading a password: from stdin (--password-stdin), DOCSHARE_PASSWORD, or a prompt without echo.
import { CliError, EXIT, UsageError } from './exit.ts';

async function readAll(stdin: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stdin) text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
  return text;
}

/** A line typed on the terminal, not echoed. */
function promptHidden(question: string, stdin: NodeJS.ReadStream, stderr: NodeJS.WriteStream): Promise<string> {
  return new Promise((resolve, reject) => {
    stderr.write(question);
    let value = '';
    const wasRaw = stdin.isRaw;
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const done = (error?: Error): void => {
      stdin.setRawMode(wasRaw);
      stdin.pause();
      stdin.removeListener('data', onData);
      stderr.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (data: string): void => {
      for (const ch of data) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return done();
        if (ch === '\u0003') return done(new CliError('Interrupted', EXIT.interrupted));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

export interface PasswordSources {
  fromStdin: boolean;
  env: Record<string, string | undefined>;
  stdin: NodeJS.ReadStream;
  stderr: NodeJS.WriteStream;
  command: string;
}

export async function readPassword(src: PasswordSources): Promise<string> {
  if (src.fromStdin) return (await readAll(src.stdin)).replace(/\r?\n$/, '');
  const env = src.env['DOCSHARE_PASSWORD'];
  if (env !== undefined) return env;
  if (src.stdin.isTTY === true && typeof src.stdin.setRawMode === 'function') return await promptHidden('Password: ', src.stdin, src.stderr);
  throw new UsageError('no password: use --password-stdin, set DOCSHARE_PASSWORD, or run it in a terminal to be asked', src.command);
}
