// `docshare account <subcommand>`: leaving (issue 24), through client.account. `export` asks for a
// ZIP of everything the account holds (and with --wait or --out fetches it, checked against the
// SHA-256 the server recorded); `erase` ends the account for good. cli.ts routes `account <sub>`
// here, as it does `webhooks <sub>`.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { positiveInt, str, type Command, type Ctx } from './command.ts';
import { readConfig, writeConfig } from './config.ts';
import { CliError, EXIT } from './exit.ts';
import { readPassword } from './prompt.ts';
import { shown, visible } from './terminal.ts';

/** The command group's name: `docshare account <sub>`. */
export const ACCOUNT = 'account';

const sha256Of = async (file: string): Promise<string> => {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
};

/** The token saved for this server stops working with the erasure: it is removed, as `logout` does. */
async function forgetToken(ctx: Ctx): Promise<void> {
  const config = await readConfig(ctx.io.env);
  if (config.servers?.[ctx.url] === undefined) return;
  delete config.servers[ctx.url];
  await writeConfig(ctx.io.env, config);
}

export const ACCOUNT_COMMANDS: Command[] = [
  {
    name: `${ACCOUNT} export`, summary: 'a ZIP of your account: data, comments, purchases, statistics and every file', args: '[--wait] [--out <file.zip>]',
    description: 'Starts an export (built by the server in the background, kept 7 days) and prints its id.\n'
      + 'With --wait it waits until the ZIP is ready and prints its link; with --out it also downloads it\n'
      + '(resuming <file.zip>.part) and checks it against the SHA-256 the server recorded.',
    options: {
      wait: { type: 'boolean', help: 'wait until the ZIP is ready (its link, size and SHA-256)' },
      out: { type: 'string', value: '<file.zip>', help: 'download the ZIP to this file once ready (implies --wait)' },
      'interval-ms': { type: 'string', value: '<ms>', help: 'how often --wait asks (default 1000)' },
    },
    positionals: [0, 0], auth: true,
    examples: ['docshare account export --out my-docshare.zip', 'docshare account export -q   # just the export id'],
    async run(ctx) {
      const out = str(ctx.values['out']);
      const wait = ctx.values['wait'] === true || out !== undefined;
      const intervalMs = positiveInt(ctx.values['interval-ms'], 'interval-ms', ctx.command) ?? 1_000;
      const started = await ctx.client.account.export();
      if (!wait) {
        if (ctx.json) return ctx.printJson(started);
        ctx.out(ctx.quiet ? visible(started.export_id) : shown`${started.message}: export ${started.export_id}`);
        if (!ctx.quiet) ctx.note('Run \'docshare account export --out <file.zip>\' to wait for a new one and download it.');
        return;
      }
      if (!ctx.quiet && !ctx.json) ctx.note(shown`${started.message}: export ${started.export_id}; waiting until it is ready…`);
      const ready = await ctx.client.account.waitForExport(started.export_id, { intervalMs, ...(ctx.io.signal ? { signal: ctx.io.signal } : {}) });
      if (out === undefined) {
        if (ctx.json) return ctx.printJson({ status: 'success', export_id: started.export_id, export: ready });
        ctx.out(ctx.quiet ? visible(ready.download_url) : shown`Export ${started.export_id} ready: ${ready.bytes} bytes, sha256 ${ready.sha256}, until ${ready.expires_at}\n${ready.download_url}`);
        return;
      }
      const file = path.resolve(ctx.io.cwd, out);
      const saved = await ctx.client.account.downloadExport(ready.download_url, { to: file, ...(ctx.io.signal ? { signal: ctx.io.signal } : {}) });
      const sha256 = await sha256Of(file);
      if (sha256 !== ready.sha256) {
        throw new CliError(`the ZIP in ${file} does not match the export (sha256 ${sha256}, expected ${ready.sha256}): run the command again`, EXIT.server);
      }
      if (ctx.json) return ctx.printJson({ status: 'success', export_id: started.export_id, export: ready, path: file });
      ctx.out(ctx.quiet ? visible(file) : shown`Saved export ${started.export_id} to ${file} (${saved.bytes} bytes, sha256 ${sha256} checked)`);
    },
  },
  {
    name: `${ACCOUNT} erase`, summary: 'erase your account for good: every file deleted, your personal data made unreadable', args: '[--password-stdin]',
    description: 'Cannot be undone. The account stops working at once (the saved token is removed);\n'
      + 'its files are deleted in the background, and the comments you wrote read [deleted].\n'
      + 'The password comes from --password-stdin, $DOCSHARE_PASSWORD, or a prompt.\n'
      + 'Take your data first with \'docshare account export --out <file.zip>\'.',
    options: { 'password-stdin': { type: 'boolean', help: 'read the password from stdin (else $DOCSHARE_PASSWORD, else a prompt)' } },
    positionals: [0, 0], auth: true,
    examples: ['printf %s "$PASSWORD" | docshare account erase --password-stdin'],
    async run(ctx) {
      const password = await readPassword({ fromStdin: ctx.values['password-stdin'] === true, env: ctx.io.env, stdin: ctx.io.stdin, stderr: ctx.io.stderr, command: ctx.command });
      const answer = await ctx.client.account.erase({ password });
      await forgetToken(ctx);
      if (ctx.json) return ctx.printJson(answer);
      ctx.out(ctx.quiet ? visible(answer.erasure_id) : shown`${answer.message}: erasure ${answer.erasure_id}. Its state (no login needed, for 7 days):\n${answer.status_url}`);
      if (!ctx.quiet) ctx.note('The account no longer works; its saved token was removed.');
    },
  },
];

/** `docshare account` without a subcommand: the group's help. */
export const accountHelp = (): string => `Usage: docshare ${ACCOUNT} <subcommand> [options]

Leaving docshare: take your data with you, or erase your account.

Subcommands:
${ACCOUNT_COMMANDS.map((c) => `  ${c.name.slice(ACCOUNT.length + 1).padEnd(12)}${c.summary}`).join('\n')}

Run 'docshare ${ACCOUNT} <subcommand> --help' for its options and examples.
`;
