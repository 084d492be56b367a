// docshare, the command line client: parses a command line and runs it against the API through
// @docshare/client. `run()` returns the exit code; bin/docshare.js and main.ts call it.
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  CLIENT_VERSION, createClient, defaultUploadStateDir, DocshareApiError, DocshareNetworkError, type SearchFilters,
  type ResumableEvent, type SearchOptions, type SearchResponse, type SearchResult, type TopMetric, type UpdateRequest,
} from '@docshare/client';
import { dailyTable, dayRange, DEFAULT_DAYS, parseDay } from './daily.ts';
import { configPath, readConfig, resolveBaseUrl, resolveResumableThreshold, resolveToken, writeConfig } from './config.ts';
import { CliError, EXIT, exitCodeOf, responseTooLarge, UsageError } from './exit.ts';
import { positiveInt, str, strs, type Command, type Ctx, type Io, type Values } from './command.ts';
import { commandHelp, GLOBAL_OPTIONS, mainHelp, type OptionHelp } from './help.ts';
import { formatBytes, progressBar } from './progress.ts';
import { readPassword } from './prompt.ts';
import { shown, terminalSafeJson, visible } from './terminal.ts';
import { WEBHOOK_COMMANDS, WEBHOOKS, webhooksHelp } from './webhooks.ts';
import { ACCOUNT, ACCOUNT_COMMANDS, accountHelp } from './account.ts';

export type { Io } from './command.ts';

/** The package's version (its package.json, one level above src/ and dist/ alike), which a release bumps. */
const CLI_VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

function day(v: Values[string], name: string, command: string): string | undefined {
  const s = str(v);
  if (s === undefined) return undefined;
  if (parseDay(s) === undefined) throw new UsageError(`--${name} must be a date YYYY-MM-DD, got '${s}'`, command);
  return s;
}

function fileId(s: string | undefined, command: string): string {
  if (s === undefined || !/^[1-9][0-9]*$/.test(s)) throw new UsageError(`a file id is a positive integer, got '${s ?? ''}'`, command);
  return s;
}

/**
 * The snippet's HTML as terminal text: matched words bold on a terminal, else between asterisks.
 * The text between the marks is shown with its control characters escaped (`visible`), and only
 * the CLI's own bold sequences reach the terminal.
 */
function snippetText(html: string, tty: boolean): string {
  const [on, off] = tty ? ['\u001b[1m', '\u001b[22m'] : ['*', '*'];
  return html.split(/(<\/?mark>)/).map((piece) => (piece === '<mark>' ? on : piece === '</mark>' ? off : visible(piece.replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;|&#x27;/g, "'").replace(/&amp;/g, '&')))).join('');
}

const pagingOptions: Record<string, OptionHelp> = {
  page: { type: 'string', value: '<n>', help: 'page number, from 1' },
  'per-page': { type: 'string', value: '<n>', help: 'results per page (at most 100)' },
};

const passwordOption: Record<string, OptionHelp> = {
  'password-stdin': { type: 'boolean', help: 'read the password from stdin (else $DOCSHARE_PASSWORD, else a prompt)' },
};

async function saveLogin(ctx: Ctx, answer: { token: string; user_id: number }, email: string): Promise<string> {
  const config = await readConfig(ctx.io.env);
  config.url = ctx.url;
  config.servers = { ...config.servers, [ctx.url]: { token: answer.token, user_id: answer.user_id, email, saved_at: new Date().toISOString() } };
  return await writeConfig(ctx.io.env, config);
}

/** The JSON printed for a login or register: the server's answer without the token. */
const withoutToken = <T extends { token: string }>(answer: T): Omit<T, 'token'> => {
  const { token: _token, ...rest } = answer;
  return rest;
};

/** Pages `search --all` walks at most unless --max-pages says otherwise: 100,000 matches at 100 a page. */
const MAX_PAGES = 1000;
/** Bytes of results `search --all --json` holds before it stops (it prints them once, at the end). */
const MAX_JSON_RESULTS_BYTES = 64 * 1024 * 1024;

/**
 * Walks a search page after page through next_cursor, handing each page to `onPage`. It does not
 * trust the server to end the walk: it stops with an error after `maxPages` pages (exit 8), when
 * the server sends a cursor it sent before (a loop: exit 5), and, with --json, once the results it
 * holds pass MAX_JSON_RESULTS_BYTES (exit 8). Cursors are remembered by their hash, so a server
 * sending huge cursors does not grow the walk's memory.
 */
async function walkSearch(ctx: Ctx, term: string, opts: SearchOptions, maxPages: number, onPage: (page: SearchResponse) => void): Promise<void> {
  const seen = new Set<string>();
  let held = 0;
  let count = 0;
  let page = await ctx.client.search(term, opts);
  for (let pages = 1; ; pages += 1) {
    if (ctx.json) {
      held += page.results.reduce((n, r) => n + JSON.stringify(r).length, 0);
      if (held > MAX_JSON_RESULTS_BYTES) {
        throw new CliError(`stopped after ${pages} pages: the results passed ${MAX_JSON_RESULTS_BYTES / 1048576} MiB, more than --json holds (without --json, results are printed as they come)`, EXIT.incomplete);
      }
    }
    onPage(page);
    count += page.results.length;
    const next = page.next_cursor;
    if (next === undefined || page.results.length === 0) return;
    const key = createHash('sha256').update(String(next)).digest('base64');
    if (seen.has(key)) throw new CliError(`the server sent a search cursor it had sent before (page ${pages + 1}): stopped after ${count} results`, EXIT.server);
    if (pages >= maxPages) throw new CliError(`stopped after ${pages} pages (${count} results); more follow: --max-pages raises the limit`, EXIT.incomplete);
    seen.add(key);
    page = await ctx.client.search(term, { ...opts, cursor: next });
  }
}

function printSearchPage(ctx: Ctx, page: SearchResponse): void {
  const tty = ctx.io.stdout.isTTY === true;
  for (const r of page.results) {
    if (ctx.quiet) {
      ctx.out(visible(String(r.id)));
      continue;
    }
    ctx.out(shown`${r.id}\t${r.title}  [${r.category}]  ${r.link}`);
    const snippet = snippetText(r.snippet ?? '', tty).trim();
    // snippetText escaped the server's text itself; its bold sequences are the CLI's own.
    if (snippet !== '') ctx.out(`\t${snippet}`);
  }
}

const COMMANDS: Command[] = [
  {
    name: 'register', summary: 'create an account and log in (saves the token)', args: '--name <name> --email <email>',
    description: 'The password comes from --password-stdin, $DOCSHARE_PASSWORD, or a prompt (at least 8 characters).',
    options: {
      name: { type: 'string', value: '<name>', help: 'your name' },
      email: { type: 'string', value: '<email>', help: 'your email address' },
      ...passwordOption,
    },
    positionals: [0, 0], auth: false,
    examples: ["DOCSHARE_PASSWORD='correct horse' docshare register --name Ada --email ada@example.com"],
    async run(ctx) {
      const name = str(ctx.values['name']);
      const email = str(ctx.values['email']);
      if (name === undefined) throw new UsageError('--name is required', 'register');
      if (email === undefined) throw new UsageError('--email is required', 'register');
      const password = await readPassword({ fromStdin: ctx.values['password-stdin'] === true, env: ctx.io.env, stdin: ctx.io.stdin, stderr: ctx.io.stderr, command: 'register' });
      const answer = await ctx.client.register({ name, email, password });
      const file = await saveLogin(ctx, answer, email);
      if (ctx.json) return ctx.printJson({ ...withoutToken(answer), token_saved_in: file });
      if (ctx.quiet) return ctx.out(visible(String(answer.user_id)));
      ctx.out(shown`${answer.message}: user ${answer.user_id} (${email}) at ${ctx.url}. Logged in; token saved in ${file}`);
    },
  },
  {
    name: 'login', summary: 'log in (saves the token for this server)', args: '--email <email>',
    description: 'The password comes from --password-stdin, $DOCSHARE_PASSWORD, or a prompt.',
    options: { email: { type: 'string', value: '<email>', help: 'your email address' }, ...passwordOption },
    positionals: [0, 0], auth: false,
    examples: ['docshare login --email ada@example.com', 'docshare login --email ada@example.com --url https://docs.example.org'],
    async run(ctx) {
      const email = str(ctx.values['email']);
      if (email === undefined) throw new UsageError('--email is required', 'login');
      const password = await readPassword({ fromStdin: ctx.values['password-stdin'] === true, env: ctx.io.env, stdin: ctx.io.stdin, stderr: ctx.io.stderr, command: 'login' });
      const answer = await ctx.client.login({ email, password });
      const file = await saveLogin(ctx, answer, email);
      if (ctx.json) return ctx.printJson({ ...withoutToken(answer), token_saved_in: file });
      if (ctx.quiet) return ctx.out(visible(String(answer.user_id)));
      ctx.out(shown`${answer.message}: user ${answer.user_id} (${email}) at ${ctx.url}. Token saved in ${file}`);
    },
  },
  {
    name: 'logout', summary: 'forget the token saved for this server', args: '', options: {},
    positionals: [0, 0], auth: false,
    async run(ctx) {
      const config = await readConfig(ctx.io.env);
      const had = config.servers?.[ctx.url] !== undefined;
      if (had && config.servers) {
        delete config.servers[ctx.url];
        await writeConfig(ctx.io.env, config);
      }
      if (ctx.json) return ctx.printJson({ status: 'success', message: had ? 'Logged out' : 'Not logged in', url: ctx.url });
      if (!ctx.quiet) ctx.out(had ? shown`Logged out of ${ctx.url}: token removed from ${configPath(ctx.io.env)}` : shown`Not logged in to ${ctx.url}`);
    },
  },
  {
    name: 'whoami', summary: 'show the server and the user the saved token is for (never the token)', args: '', options: {},
    positionals: [0, 0], auth: false,
    async run(ctx) {
      const saved = ctx.config.servers?.[ctx.url];
      const token = resolveToken(ctx.url, ctx.io.env, ctx.config);
      if (token === undefined) throw new CliError(`Not logged in to ${ctx.url}: run 'docshare login --email <email>' (or set DOCSHARE_TOKEN)`, EXIT.auth);
      const info = { url: ctx.url, user_id: token.source === 'config' ? saved?.user_id : undefined, email: token.source === 'config' ? saved?.email : undefined, token_from: token.source === 'env' ? 'DOCSHARE_TOKEN' : configPath(ctx.io.env) };
      if (ctx.json) return ctx.printJson({ status: 'success', ...info });
      if (ctx.quiet) return ctx.out(visible(String(info.user_id ?? '')));
      ctx.out(shown`${info.url}: ${info.user_id === undefined ? 'a token' : `user ${info.user_id} (${info.email})`} from ${info.token_from}`);
    },
  },
  {
    name: 'upload', summary: 'upload a file with its metadata (progress bar on a terminal)', args: '<file>',
    description: "A category is chosen with --category-id, or created (or reused, ignoring case) with --new-category.\n'-' reads the file from stdin (sent chunked: give --name).\n"
      + 'A file larger than 64 MiB ($DOCSHARE_RESUMABLE_THRESHOLD, or resumable_threshold in the config file:\n'
      + 'bytes, 64M, 1G) is sent in parts, several at once, straight to the storage; its session is kept under\n'
      + '$XDG_STATE_HOME/docshare/uploads (else ~/.local/state/...) until it completes. Interrupted (Ctrl-C, a\n'
      + 'lost connection): the same command with --resume sends only the missing parts (within 24 hours).',
    options: {
      title: { type: 'string', value: '<text>', help: 'title (required)' },
      description: { type: 'string', value: '<text>', help: 'description (required)' },
      tags: { type: 'string', value: '<a,b,c>', help: 'tags, comma-separated (required)' },
      license: { type: 'string', value: '<licence>', help: "'CC BY', 'CC BY-SA', 'CC BY-ND', 'CC BY-NC', 'CC BY-NC-SA', 'CC BY-NC-ND' or 'CC0' (required)" },
      'category-id': { type: 'string', value: '<id>', help: 'an existing category' },
      'new-category': { type: 'string', value: '<name>', help: 'a category to create (or reuse) when --category-id is not given' },
      'category-description': { type: 'string', value: '<text>', help: 'description of the new category' },
      'category-tags': { type: 'string', value: '<a,b>', help: 'tags of the new category' },
      video: { type: 'string', value: '<url>', help: 'URL of an associated video' },
      name: { type: 'string', value: '<file name>', help: 'the file name the server keeps (default: the file\'s)' },
      type: { type: 'string', value: '<mime type>', help: 'content type (default: from the extension)' },
      resume: { type: 'boolean', help: 'take up the interrupted upload of this file (only its missing parts are sent)' },
      parallel: { type: 'string', value: '<n>', help: 'parts sent at once by a resumable upload (default 4)' },
    },
    positionals: [1, 1], auth: true,
    examples: [
      "docshare upload report.pdf --title 'Q3 report' --description 'Figures' --tags finance,q3 --license 'CC BY' --new-category Reports",
      "docshare upload film.mkv --title 'Talk' --description 'Recording' --tags talks --license 'CC BY' --category-id 3 --parallel 8",
      'docshare upload film.mkv --resume    # after an interruption: sends only the missing parts',
    ],
    async run(ctx) {
      const file = ctx.args[0] as string;
      const v = ctx.values;
      const fromStdin = file === '-';
      const parallel = positiveInt(v['parallel'], 'parallel', 'upload');
      const resume = v['resume'] === true;
      if (resume && fromStdin) throw new UsageError('--resume needs a file, not stdin', 'upload');
      const bar = progressBar(`Uploading ${str(v['name']) ?? (fromStdin ? 'stdin' : file)}`, ctx.io.stderr, ctx.progress);
      /** The resumable session in progress, if any: what Ctrl-C leaves for --resume. */
      let session: { id: string; expiresAt?: string } | undefined;
      const say = (line: string): void => {
        if (!ctx.quiet) ctx.note(line);
      };
      const onResumable = (e: ResumableEvent): void => {
        if (e.kind === 'started') session = { id: e.uploadId, expiresAt: e.expiresAt };
        else if (e.kind === 'resumed') {
          session = { id: e.uploadId };
          say(shown`Resuming upload ${e.uploadId}: ${e.receivedParts} of ${e.partCount} parts (${formatBytes(e.receivedBytes)}) already sent`);
        } else if (e.kind === 'restarted') {
          say(e.reason === 'none stored' ? shown`No interrupted upload of ${file} to resume: starting a new one`
            : shown`The interrupted upload ${e.uploadId ?? ''} ${e.reason === 'changed' ? 'does not match the file any more' : e.reason === 'not found' ? 'is unknown to the server' : `was ${e.reason}`}: starting again`);
        } else if (e.kind === 'discarded') {
          say(shown`An interrupted upload of this file (${e.uploadId}) was aborted and a new one started (--resume takes one up)`);
        } else session = undefined;
      };
      let answer;
      try {
        answer = await ctx.client.upload({
          file: fromStdin ? ctx.io.stdin : path.resolve(ctx.io.cwd, file),
          title: str(v['title']) ?? '', description: str(v['description']) ?? '', tags: str(v['tags']) ?? '', cc_license: str(v['license']) ?? '',
          ...(str(v['category-id']) !== undefined ? { category_id: str(v['category-id']) } : {}),
          ...(str(v['new-category']) !== undefined ? { new_category_name: str(v['new-category']) } : {}),
          ...(str(v['category-description']) !== undefined ? { category_description: str(v['category-description']) } : {}),
          ...(str(v['category-tags']) !== undefined ? { category_tags: str(v['category-tags']) } : {}),
          ...(str(v['video']) !== undefined ? { video: str(v['video']) } : {}),
          ...(str(v['name']) !== undefined ? { fileName: str(v['name']) } : {}),
          ...(str(v['type']) !== undefined ? { contentType: str(v['type']) } : {}),
        }, {
          onProgress: (p) => bar.update(p), onResumable, resume,
          ...(parallel !== undefined ? { parallel } : {}),
          ...(ctx.io.signal ? { signal: ctx.io.signal } : {}),
        });
      } catch (error) {
        bar.stop();
        if (ctx.io.signal?.aborted && session !== undefined) {
          ctx.note(shown`Upload ${session.id} interrupted; its session is kept: run the same command with --resume to send the rest${session.expiresAt ? ` (before ${session.expiresAt})` : ''}`);
        }
        throw error;
      } finally {
        bar.stop();
      }
      if (ctx.json) return ctx.printJson(answer);
      if (ctx.quiet) return ctx.out(visible(String(answer.file_id)));
      ctx.out(shown`${answer.message}: file ${answer.file_id} in category ${answer.category_id} (${answer.category_name})`);
    },
  },
  {
    name: 'download', summary: 'download a file (progress bar; resumes a partial download)', args: '<file_id>',
    description: "Saves under the server's original file name in the current directory (or --output: a file, a\ndirectory, or '-' for stdout). Bytes go to <name>.part first; an interrupted download is resumed\nwith an HTTP Range request by running the same command again. Each run counts one download.",
    options: {
      output: { type: 'string', short: 'o', value: '<path>', help: "file or directory to write, '-' for stdout" },
      force: { type: 'boolean', short: 'f', help: 'replace an existing file' },
      'no-resume': { type: 'boolean', help: 'start again even if a .part file is there' },
    },
    positionals: [1, 1], auth: true,
    examples: ['docshare download 12', 'docshare download 12 -o ~/Downloads/', 'docshare download 12 -o - | sha256sum'],
    async run(ctx) {
      const id = fileId(ctx.args[0], 'download');
      const output = str(ctx.values['output']);
      const toStdout = output === '-';
      const force = ctx.values['force'] === true;
      const exists = async (p: string): Promise<boolean> => await stat(p).then((st) => !st.isDirectory(), () => false);
      // A named target is checked before the download is authorised (an authorisation counts one).
      if (output !== undefined && !toStdout && !force && await exists(path.resolve(ctx.io.cwd, output))) {
        throw new CliError(`${output} exists: --force replaces it`, EXIT.localFile);
      }
      const bar = progressBar(`Downloading file ${id}`, ctx.io.stderr, ctx.progress);
      let result;
      try {
        result = await ctx.client.download(id, {
          to: toStdout ? ctx.io.stdout : path.resolve(ctx.io.cwd, output ?? '.'),
          overwrite: force,
          onStart: ({ fileName }) => bar.setLabel(shown`Downloading ${fileName}`),
          resume: ctx.values['no-resume'] !== true,
          onProgress: (p) => bar.update(p),
          ...(ctx.io.signal ? { signal: ctx.io.signal } : {}),
        });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new CliError(`${(error as Error).message}: --force replaces it`, EXIT.localFile);
        throw error;
      } finally {
        bar.stop();
      }
      const summary = { ...result.authorization, path: result.path ?? '-', bytes: result.bytes, resumed_from: result.resumedFrom };
      if (ctx.json) {
        if (toStdout) ctx.note(terminalSafeJson(JSON.stringify(summary)));
        else ctx.printJson(summary);
        return;
      }
      if (toStdout) return;
      if (ctx.quiet) return ctx.out(visible(result.path ?? ''));
      const resumed = result.resumedFrom > 0 ? `, resumed after ${formatBytes(result.resumedFrom)}` : '';
      ctx.out(shown`${result.authorization.message}: saved ${result.fileName} (${formatBytes(result.bytes)}${resumed}) to ${result.path}`);
    },
  },
  {
    name: 'search', summary: 'search files (title, tags, category, description, content; typo tolerant)', args: '<term...>',
    options: {
      ...pagingOptions,
      all: { type: 'boolean', help: 'every match, page after page (next_cursor)' },
      'max-pages': { type: 'string', value: '<n>', help: `with --all: stop after this many pages (default ${MAX_PAGES}; exit 8)` },
      cursor: { type: 'string', value: '<cursor>', help: 'the next_cursor of a previous page' },
      facets: { type: 'boolean', help: 'also count matches by category, licence and tag' },
      'category-id': { type: 'string', value: '<id>', help: 'only this category' },
      license: { type: 'string', value: '<licence>', help: 'only this licence' },
      tag: { type: 'string', multiple: true, value: '<tag>', help: 'only files with this tag' },
    },
    positionals: [1, Infinity], auth: true,
    examples: ["docshare search 'quarterly report'", 'docshare search report --tag finance --license "CC BY" --all -q'],
    async run(ctx) {
      const term = ctx.args.join(' ');
      const v = ctx.values;
      const filters: SearchFilters = {
        ...(str(v['category-id']) !== undefined ? { category_id: str(v['category-id']) } : {}),
        ...(str(v['license']) !== undefined ? { license: str(v['license']) as SearchFilters['license'] } : {}),
        ...(strs(v['tag']).length > 0 ? { tags: strs(v['tag']) } : {}),
      };
      const page = positiveInt(v['page'], 'page', 'search');
      const perPage = positiveInt(v['per-page'], 'per-page', 'search');
      const opts: SearchOptions = {
        ...(page !== undefined ? { page } : {}),
        ...(perPage !== undefined ? { per_page: perPage } : {}),
        ...(v['facets'] === true ? { facets: true } : {}),
        ...(Object.keys(filters).length > 0 ? { filters } : {}),
        ...(str(v['cursor']) !== undefined ? { cursor: str(v['cursor']) } : {}),
      };
      if (v['all'] === true) {
        const results: SearchResult[] = [];
        let count = 0;
        await walkSearch(ctx, term, { ...opts, per_page: perPage ?? 100 }, positiveInt(v['max-pages'], 'max-pages', 'search') ?? MAX_PAGES, (page) => {
          count += page.results.length;
          if (ctx.json) results.push(...page.results);
          else printSearchPage(ctx, page);
        });
        if (ctx.json) return ctx.printJson({ status: 'success', results, total: results.length });
        if (count === 0 && !ctx.quiet) ctx.note('No results found');
        return;
      }
      const answer = await ctx.client.search(term, opts);
      if (ctx.json) return ctx.printJson(answer);
      if (answer.results.length === 0) {
        if (!ctx.quiet) ctx.note('No results found');
        return;
      }
      printSearchPage(ctx, answer);
      if (ctx.quiet) return;
      if (answer.facets) {
        const f = answer.facets;
        ctx.out(shown`categories: ${f.category.map((c) => `${c.name} (${c.count})`).join(', ')}`);
        ctx.out(shown`licences: ${f.license.map((c) => `${c.value} (${c.count})`).join(', ')}`);
        ctx.out(shown`tags: ${f.tag.map((c) => `${c.value} (${c.count})`).join(', ')}`);
      }
      const first = (answer.page - 1) * answer.per_page + 1;
      const more = answer.next_cursor !== undefined ? ` (more: --page ${answer.page + 1}, or --all)` : '';
      ctx.note(shown`${first}-${first + answer.results.length - 1} of ${answer.total} matches${more}`);
    },
  },
  {
    name: 'files', summary: "list a user's files (default: yours), newest first", args: '',
    options: { user: { type: 'string', value: '<user_id>', help: 'whose files (default: yours)' }, ...pagingOptions },
    positionals: [0, 0], auth: true,
    async run(ctx) {
      const user = str(ctx.values['user']);
      if (user !== undefined && !/^[1-9][0-9]*$/.test(user)) throw new UsageError(`--user must be a user id, got '${user}'`, 'files');
      const page = positiveInt(ctx.values['page'], 'page', 'files');
      const perPage = positiveInt(ctx.values['per-page'], 'per-page', 'files');
      const answer = await ctx.client.files({ ...(user !== undefined ? { user_id: user } : {}), ...(page !== undefined ? { page } : {}), ...(perPage !== undefined ? { per_page: perPage } : {}) });
      if (ctx.json) return ctx.printJson(answer);
      for (const f of answer.files) ctx.out(ctx.quiet ? visible(String(f.file_id)) : shown`${f.file_id}\t${f.upload_date}  ${f.title}  ${f.file_url}`);
      if (!ctx.quiet) ctx.note(shown`${answer.files.length} of ${answer.total} files of ${answer.user.name} (user ${answer.user.id})`);
    },
  },
  {
    name: 'stats', summary: 'your statistics: files, views, downloads, sales, comments (--daily: per UTC day)', args: '',
    description: `--daily prints a table of UTC days (every day, zeros included, at most 366) and their totals: views, unique viewers,
downloads, unique downloaders, sales, comments; by default the last ${DEFAULT_DAYS} days, today included. Unique counts
are exact up to 1,024 a day, estimated above (0.81 % standard error); the totals' are the sums of the days'.`,
    options: {
      daily: { type: 'boolean', help: 'per UTC day instead of totals' },
      from: { type: 'string', value: '<YYYY-MM-DD>', help: `with --daily: the first day (default: ${DEFAULT_DAYS} days ending with --to)` },
      to: { type: 'string', value: '<YYYY-MM-DD>', help: 'with --daily: the last day (default: today, UTC)' },
      file: { type: 'string', value: '<file_id>', help: 'with --daily: one of your files (default: all of them)' },
    },
    positionals: [0, 0], auth: true,
    examples: ['docshare stats', 'docshare stats --daily', 'docshare stats --daily --from 2025-11-01 --to 2025-11-30 --file 12'],
    async run(ctx) {
      const v = ctx.values;
      const from = day(v['from'], 'from', 'stats');
      const to = day(v['to'], 'to', 'stats');
      const file = str(v['file']);
      if (v['daily'] !== true) {
        if (from !== undefined || to !== undefined || file !== undefined) throw new UsageError('--from, --to and --file go with --daily', 'stats');
        const answer = await ctx.client.stats();
        if (ctx.json) return ctx.printJson(answer);
        const d = answer.data;
        return ctx.out(shown`files ${d.total_files}\nviews ${d.total_views}\ndownloads ${d.total_downloads}\nsales ${d.total_sales}\ncomments ${d.total_comments}`);
      }
      const range = dayRange(from, to, ctx.io.now?.() ?? new Date());
      const answer = await ctx.client.dailyStats({ ...range, ...(file !== undefined ? { fileId: fileId(file, 'stats') } : {}) });
      if (ctx.json) return ctx.printJson(answer);
      for (const line of dailyTable(answer, ctx.quiet)) ctx.out(line);
      if (!ctx.quiet) ctx.note(shown`${answer.days.length} UTC days, ${answer.from} to ${answer.to}, ${file === undefined ? 'all your files' : `file ${file}`}`);
    },
  },
  {
    name: 'top', summary: 'your files ranked by views, unique viewers, downloads, sales or comments over the last days', args: '',
    options: {
      metric: { type: 'string', value: '<metric>', help: 'views (default), unique_viewers, downloads, sales or comments' },
      days: { type: 'string', value: '<n>', help: 'the last n UTC days, today included (1-90, default 7)' },
      limit: { type: 'string', value: '<n>', help: 'at most n files (1-50, default 10)' },
    },
    positionals: [0, 0], auth: true,
    examples: ['docshare top', 'docshare top --metric unique_viewers --days 30 --limit 5'],
    async run(ctx) {
      const metric = str(ctx.values['metric']);
      const days = positiveInt(ctx.values['days'], 'days', 'top');
      const limit = positiveInt(ctx.values['limit'], 'limit', 'top');
      const answer = await ctx.client.topFiles({
        // The server names the metrics it knows when it refuses one.
        ...(metric !== undefined ? { metric: metric as TopMetric } : {}), ...(days !== undefined ? { days } : {}), ...(limit !== undefined ? { limit } : {}),
      });
      if (ctx.json) return ctx.printJson(answer);
      for (const r of answer.results) ctx.out(ctx.quiet ? visible(String(r.id)) : shown`${r.id}\t${r.value}  ${r.title}  ${r.link}`);
      if (!ctx.quiet) ctx.note(shown`${answer.results.length} files by ${metric ?? 'views'} over the last ${days ?? 7} UTC days`);
    },
  },
  {
    name: 'trending', summary: "everyone's files with the most unique viewers over the last hours", args: '',
    description: 'Files anyone may see, ranked by distinct viewers over the window (ties: views).',
    options: {
      hours: { type: 'string', value: '<n>', help: 'the last n UTC hours, the current one included (1-168, default 24)' },
      category: { type: 'string', value: '<id>', help: 'only files of this category (see docshare categories)' },
      limit: { type: 'string', value: '<n>', help: 'at most n files (1-50, default 10)' },
    },
    positionals: [0, 0], auth: true,
    examples: ['docshare trending', 'docshare trending --hours 168 --category 3 --limit 20'],
    async run(ctx) {
      const hours = positiveInt(ctx.values['hours'], 'hours', 'trending');
      const category = positiveInt(ctx.values['category'], 'category', 'trending');
      const limit = positiveInt(ctx.values['limit'], 'limit', 'trending');
      const answer = await ctx.client.trending({
        ...(hours !== undefined ? { hours } : {}), ...(category !== undefined ? { categoryId: category } : {}), ...(limit !== undefined ? { limit } : {}),
      });
      if (ctx.json) return ctx.printJson(answer);
      for (const r of answer.results) {
        ctx.out(ctx.quiet ? visible(String(r.id)) : shown`${r.id}\t${r.unique_viewers} unique viewers, ${r.views} views  ${r.title}  [${r.category}]  ${r.link}`);
      }
      if (!ctx.quiet) ctx.note(shown`${answer.results.length} trending files over the last ${hours ?? 24} UTC hours`);
    },
  },
  {
    name: 'comments', summary: 'comments received on your files, newest first', args: '', options: { ...pagingOptions },
    positionals: [0, 0], auth: true,
    async run(ctx) {
      const page = positiveInt(ctx.values['page'], 'page', 'comments');
      const perPage = positiveInt(ctx.values['per-page'], 'per-page', 'comments');
      const answer = await ctx.client.comments({ ...(page !== undefined ? { page } : {}), ...(perPage !== undefined ? { per_page: perPage } : {}) });
      if (ctx.json) return ctx.printJson(answer);
      for (const c of answer.data) ctx.out(ctx.quiet ? visible(String(c.comment_id)) : shown`${c.comment_id}\t${c.submission_date}  on "${c.title}" (${c.link}): ${c.comment}`);
      if (!ctx.quiet) ctx.note(shown`${answer.data.length} of ${answer.total} comments`);
    },
  },
  {
    name: 'comment', summary: 'comment on a file', args: '<file_id> <text...>', options: {},
    positionals: [2, Infinity], auth: true,
    examples: ["docshare comment 12 'Very useful, thanks'"],
    async run(ctx) {
      const id = fileId(ctx.args[0], 'comment');
      const answer = await ctx.client.comment(id, ctx.args.slice(1).join(' '));
      if (ctx.json) return ctx.printJson(answer);
      ctx.out(ctx.quiet ? visible(String(answer.comment_id)) : shown`${answer.message}: comment ${answer.comment_id} on file ${id}`);
    },
  },
  {
    name: 'update', summary: 'change one of your files: title, description, tags, sale, price, enabled', args: '<file_id>',
    options: {
      title: { type: 'string', value: '<text>', help: 'new title' },
      description: { type: 'string', value: '<text>', help: 'new description' },
      tags: { type: 'string', value: '<a,b,c>', help: 'new tags' },
      'for-sale': { type: 'boolean', help: 'put it on sale (it can then no longer be downloaded, only purchased)' },
      'not-for-sale': { type: 'boolean', help: 'take it off sale' },
      price: { type: 'string', value: '<amount>', help: 'price (a number, at least 0)' },
      enable: { type: 'boolean', help: 'enable it' },
      disable: { type: 'boolean', help: 'disable it (hidden from others, not downloadable)' },
    },
    positionals: [1, 1], auth: true,
    examples: ["docshare update 12 --title 'Q3 report (final)'", 'docshare update 12 --for-sale --price 4.99'],
    async run(ctx) {
      const id = fileId(ctx.args[0], 'update');
      const v = ctx.values;
      if (v['for-sale'] === true && v['not-for-sale'] === true) throw new UsageError('--for-sale and --not-for-sale exclude each other', 'update');
      if (v['enable'] === true && v['disable'] === true) throw new UsageError('--enable and --disable exclude each other', 'update');
      const price = str(v['price']);
      if (price !== undefined && !/^\d+(\.\d+)?$/.test(price)) throw new UsageError(`--price must be a number, got '${price}'`, 'update');
      const changes: Omit<UpdateRequest, 'id'> = {
        ...(str(v['title']) !== undefined ? { title: str(v['title']) } : {}),
        ...(str(v['description']) !== undefined ? { description: str(v['description']) } : {}),
        ...(str(v['tags']) !== undefined ? { tags: str(v['tags']) } : {}),
        ...(v['for-sale'] === true ? { for_sale: true } : v['not-for-sale'] === true ? { for_sale: false } : {}),
        ...(price !== undefined ? { price: Number(price) } : {}),
        ...(v['enable'] === true ? { enabled: true } : v['disable'] === true ? { enabled: false } : {}),
      };
      if (Object.keys(changes).length === 0) throw new UsageError('nothing to change: give at least one option', 'update');
      const answer = await ctx.client.update(id, changes);
      if (ctx.json) return ctx.printJson(answer);
      if (!ctx.quiet) ctx.out(shown`${answer.message}: file ${id}`);
    },
  },
  {
    name: 'delete', summary: 'delete one of your files', args: '<file_id>', options: {},
    positionals: [1, 1], auth: true,
    async run(ctx) {
      const id = fileId(ctx.args[0], 'delete');
      const answer = await ctx.client.deleteFile(id);
      if (ctx.json) return ctx.printJson(answer);
      if (!ctx.quiet) ctx.out(shown`${answer.message}: file ${id}`);
    },
  },
  {
    name: 'purchase', summary: 'record the purchase of a file that is for sale', args: '<file_id>', options: {},
    positionals: [1, 1], auth: true,
    async run(ctx) {
      const id = fileId(ctx.args[0], 'purchase');
      const answer = await ctx.client.purchase(id);
      if (ctx.json) return ctx.printJson(answer);
      ctx.out(ctx.quiet ? visible(String(answer.sale_id)) : shown`${answer.message}: sale ${answer.sale_id} of file ${id}`);
    },
  },
  {
    name: 'purchases', summary: 'files you bought, newest first, each with a signed link to its bytes', args: '', options: { ...pagingOptions },
    positionals: [0, 0], auth: true,
    examples: ['docshare purchases', 'docshare purchases --json | jq -r .data[0].download_url'],
    async run(ctx) {
      const page = positiveInt(ctx.values['page'], 'page', 'purchases');
      const perPage = positiveInt(ctx.values['per-page'], 'per-page', 'purchases');
      const answer = await ctx.client.purchases({ ...(page !== undefined ? { page } : {}), ...(perPage !== undefined ? { per_page: perPage } : {}) });
      if (ctx.json) return ctx.printJson(answer);
      for (const p of answer.data) ctx.out(ctx.quiet ? visible(String(p.id)) : shown`${p.id}\t${p.title}  sale ${p.sale_id}, ${p.purchased_at}  ${p.download_url}`);
      if (!ctx.quiet) ctx.note(shown`${answer.data.length} of ${answer.total} purchases`);
    },
  },
  {
    name: 'categories', summary: 'list the categories', args: '', options: { ...pagingOptions },
    positionals: [0, 0], auth: true,
    async run(ctx) {
      const page = positiveInt(ctx.values['page'], 'page', 'categories');
      const perPage = positiveInt(ctx.values['per-page'], 'per-page', 'categories');
      const answer = await ctx.client.categories({ ...(page !== undefined ? { page } : {}), ...(perPage !== undefined ? { per_page: perPage } : {}) });
      if (ctx.json) return ctx.printJson(answer);
      for (const c of answer.data) ctx.out(ctx.quiet ? visible(String(c.id)) : shown`${c.id}\t${c.name}${c.description ? `  ${c.description}` : ''}${c.tags ? `  [${c.tags}]` : ''}`);
    },
  },
  ...WEBHOOK_COMMANDS,
  ...ACCOUNT_COMMANDS,
];

const BY_NAME = new Map(COMMANDS.map((c) => [c.name, c]));

type ParseOptions = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;
const toParseOptions = (opts: Record<string, OptionHelp>): ParseOptions =>
  Object.fromEntries(Object.entries(opts).map(([k, o]) => [k, { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) }]));

/** Splits `argv` into the command's name and the rest (global options may come before it). */
function findCommand(argv: string[]): { name: string | undefined; rest: string[] } {
  for (let i = 0; i < argv.length; i += 1) {
    const a = argv[i] as string;
    if (a === '--') return { name: argv[i + 1], rest: [...argv.slice(0, i), ...argv.slice(i + 2)] };
    if (a === '--url' || a === '--retries') {
      i += 1;
      continue;
    }
    if (a.startsWith('-') && a !== '-') continue;
    return { name: a, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { name: undefined, rest: argv };
}

/** The command groups (`docshare <group> <sub>`), each with its help. */
const GROUPS = new Map<string, () => string>([[WEBHOOKS, webhooksHelp], [ACCOUNT, accountHelp]]);

/** `webhooks <sub>` as one command name (`webhooks add`, `account erase`); the group alone when no subcommand follows. */
function withSubcommand(found: { name: string | undefined; rest: string[] }): { name: string | undefined; rest: string[] } {
  if (found.name === undefined || !GROUPS.has(found.name)) return found;
  const sub = findCommand(found.rest);
  return sub.name === undefined ? found : { name: `${found.name} ${sub.name}`, rest: sub.rest };
}

/** Runs one command line; resolves with the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  const { name, rest } = withSubcommand(findCommand(argv));
  const wantsJson = argv.includes('--json');
  const writeOut = (s: string): void => void io.stdout.write(s);
  const writeErr = (s: string): void => void io.stderr.write(s);

  const fail = (error: unknown): number => {
    const code = exitCodeOf(error);
    // An answer too large is the server's doing, not a connection problem: say just that.
    const tooLarge = responseTooLarge(error);
    const told: unknown = tooLarge ?? error;
    const plain = told instanceof Error ? told.message : String(told);
    // The server's message (or a body it sent instead) is shown with its control characters escaped.
    let message = visible(plain);
    if (error instanceof DocshareApiError) {
      const hint = error.status === 401 && (message === 'Invalid JWT token' || message === 'Missing JWT token')
        ? ": log in again with 'docshare login --email <email>'" : '';
      message = `${message} (HTTP ${error.status}${error.requestId ? `, request ${visible(error.requestId)}` : ''})${hint}`;
    } else if (error instanceof UsageError) {
      message = `${message}\nRun 'docshare ${error.command ?? ''}${error.command ? ' ' : ''}--help' for usage.`;
    } else if (error instanceof DocshareNetworkError && tooLarge === undefined) {
      message = `${message} (is the server running? --url or DOCSHARE_URL choose it)`;
    } else if (code === EXIT.interrupted) {
      message = name === 'download' ? 'Interrupted: run the same command again to resume the download' : 'Interrupted';
    }
    if (wantsJson) {
      const body = error instanceof DocshareApiError && error.body !== null && typeof error.body === 'object'
        ? error.body : { status: 'error', message: plain };
      writeOut(`${terminalSafeJson(JSON.stringify(body))}\n`);
    }
    writeErr(`docshare: ${message}\n`);
    return code;
  };

  if (name === undefined || name === 'help') {
    if (argv.includes('--version') || argv.includes('-V')) {
      writeOut(`docshare ${CLI_VERSION} (client ${CLIENT_VERSION}, node ${process.versions.node})\n`);
      return EXIT.ok;
    }
    const topic = name === 'help' ? withSubcommand(findCommand(rest)).name : undefined;
    const groupHelp = topic === undefined ? undefined : GROUPS.get(topic);
    if (groupHelp !== undefined) {
      writeOut(groupHelp());
      return EXIT.ok;
    }
    if (topic !== undefined) {
      const c = BY_NAME.get(topic);
      if (c === undefined) return fail(new UsageError(`unknown command '${topic}'`));
      writeOut(commandHelp(c));
      return EXIT.ok;
    }
    const text = mainHelp(COMMANDS, configPath(io.env));
    if (name === 'help' || argv.includes('--help') || argv.includes('-h')) {
      writeOut(text);
      return EXIT.ok;
    }
    writeErr(text);
    return EXIT.usage;
  }

  const groupHelp = GROUPS.get(name);
  if (groupHelp !== undefined) {
    const asked = argv.includes('--help') || argv.includes('-h');
    (asked ? writeOut : writeErr)(groupHelp());
    return asked ? EXIT.ok : EXIT.usage;
  }

  const command = BY_NAME.get(name);
  if (command === undefined) {
    const near = COMMANDS.filter((c) => c.name.startsWith(name.slice(0, 3))).map((c) => c.name);
    return fail(new UsageError(`unknown command '${name}'${near.length > 0 ? ` (did you mean ${near.join(' or ')}?)` : ''}`));
  }

  let values: Values;
  let args: string[];
  try {
    const parsed = parseArgs({ args: rest, options: { ...toParseOptions(GLOBAL_OPTIONS), ...toParseOptions(command.options) }, allowPositionals: true, strict: true });
    values = parsed.values as Values;
    args = parsed.positionals;
  } catch (error) {
    return fail(new UsageError((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''), command.name));
  }
  if (values['help'] === true) {
    writeOut(commandHelp(command));
    return EXIT.ok;
  }
  const [min, max] = command.positionals;
  if (args.length < min) return fail(new UsageError(`missing argument: docshare ${command.name} ${command.args}`, command.name));
  if (args.length > max) return fail(new UsageError(`unexpected argument '${args[max]}'`, command.name));

  try {
    const config = await readConfig(io.env);
    const url = resolveBaseUrl(str(values['url']), io.env, config);
    try {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      throw new UsageError(`--url must be an http(s) URL, got '${url}'`, command.name);
    }
    const retriesText = str(values['retries']);
    if (retriesText !== undefined && !/^\d+$/.test(retriesText)) throw new UsageError(`--retries must be a number, got '${retriesText}'`, command.name);
    let threshold: number | undefined;
    try {
      threshold = resolveResumableThreshold(io.env, config);
    } catch (error) {
      throw new UsageError((error as Error).message, command.name);
    }
    const token = resolveToken(url, io.env, config);
    if (command.auth && token === undefined) {
      throw new CliError(`Not logged in to ${url}: run 'docshare login --email <email>' (or 'docshare register', or set DOCSHARE_TOKEN)`, EXIT.auth);
    }
    const json = values['json'] === true;
    const quiet = values['quiet'] === true;
    const client = createClient({
      baseUrl: url,
      ...(token !== undefined ? { token: token.token } : {}),
      ...(io.fetch ? { fetch: io.fetch } : {}),
      ...(retriesText !== undefined ? { retries: Number(retriesText) } : {}),
      ...(threshold !== undefined ? { resumableThreshold: threshold } : {}),
      uploadStateDir: defaultUploadStateDir(io.env),
      userAgent: `docshare-cli/${CLI_VERSION} node/${process.versions.node}`,
      onRetry: (info) => {
        if (!quiet) writeErr(shown`docshare: ${info.reason}; trying again in ${(info.delayMs / 1000).toFixed(1)} s\n`);
      },
    });
    const ctx: Ctx = {
      io, url, config, client, json, quiet, values, args, command: command.name,
      progress: !quiet && values['no-progress'] !== true,
      out: (line) => writeOut(`${line}\n`),
      note: (line) => writeErr(`${line}\n`),
      printJson: (value) => writeOut(`${terminalSafeJson(JSON.stringify(value, null, 2))}\n`),
    };
    await command.run(ctx);
    return EXIT.ok;
  } catch (error) {
    if (io.signal?.aborted) return fail(new CliError('Interrupted', EXIT.interrupted));
    return fail(error);
  }
}

/** The commands' names (for tests and completion). */
export const COMMAND_NAMES = COMMANDS.map((c) => c.name);
