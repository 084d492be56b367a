// `docshare webhooks <subcommand>`: the endpoints docshare POSTs signed events about your files to
// (issue 23), through client.webhooks. Each subcommand is a command of its own (`webhooks add`...),
// with its help, options and the usual exit codes; cli.ts routes `webhooks <sub>` to it.
import { WEBHOOK_EVENT_TYPES, type DeliveriesResponse, type Webhook } from '@docshare/client';
import { positiveInt, str, strs, type Command } from './command.ts';
import { CliError, EXIT, UsageError } from './exit.ts';
import { shown, visible } from './terminal.ts';

/** The command group's name: `docshare webhooks <sub>`. */
export const WEBHOOKS = 'webhooks';

/** Pages `deliveries --all` walks at most unless --max-pages says otherwise (100,000 attempts at 100 a page). */
const MAX_PAGES = 1000;

function webhookId(s: string | undefined, command: string): string {
  if (s === undefined || !/^[1-9][0-9]*$/.test(s)) throw new UsageError(`a webhook id is a positive integer, got '${s ?? ''}'`, command);
  return s;
}

/** An ISO 8601 time as the server takes it (a date alone too); checked here so a typo is a usage error, not a round trip. */
function isoTime(v: string | undefined, name: string, command: string): string | undefined {
  if (v === undefined) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(Date.parse(v))) throw new UsageError(`--${name} must be an ISO 8601 time (2025-11-22T10:00:00Z), got '${v}'`, command);
  return v;
}

const state = (w: Webhook): string => (w.enabled ? 'enabled' : `disabled${w.disabled_reason ? ` (${w.disabled_reason})` : ''}`);

const EVENTS_HELP = `event types, comma-separated: ${WEBHOOK_EVENT_TYPES.join(', ')}`;

export const WEBHOOK_COMMANDS: Command[] = [
  {
    name: `${WEBHOOKS} add`, summary: 'register an endpoint docshare POSTs events about your files to (prints its secret once)', args: '<url> --events <types>',
    description: 'The URL must be https (http only where the server allows it) and not resolve to a private address.\n'
      + 'Deliveries follow the Standard Webhooks specification: verify each with the secret printed here\n'
      + '(the SDK\'s verifyWebhook, or the standardwebhooks library). The secret is shown only this once.',
    options: {
      events: { type: 'string', value: '<a,b>', help: `${EVENTS_HELP} (required)` },
      description: { type: 'string', value: '<text>', help: 'what the endpoint is for (up to 500 characters)' },
    },
    positionals: [1, 1], auth: true,
    examples: ['docshare webhooks add https://hooks.example.com/docshare --events file.uploaded,comment.received --description "CI"'],
    async run(ctx) {
      const url = ctx.args[0] as string;
      const events = (str(ctx.values['events']) ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
      if (events.length === 0) throw new UsageError(`--events is required: one or more of ${WEBHOOK_EVENT_TYPES.join(', ')}`, ctx.command);
      const description = str(ctx.values['description']);
      const answer = await ctx.client.webhooks.create({
        url, events: events as Webhook['events'], ...(description !== undefined ? { description } : {}),
      });
      if (ctx.json) return ctx.printJson(answer);
      const w = answer.webhook;
      ctx.out(ctx.quiet ? visible(`${w.id}\t${answer.secret}`) : shown`${answer.message}: webhook ${w.id} -> ${w.url} (${w.events.join(', ')})\nSecret: ${answer.secret}`);
      ctx.note('Store this secret now: it is not shown again, and it is what your receiver verifies deliveries with.');
    },
  },
  {
    name: `${WEBHOOKS} list`, summary: 'your webhook endpoints, oldest first', args: '', options: {},
    positionals: [0, 0], auth: true,
    async run(ctx) {
      const answer = await ctx.client.webhooks.list();
      if (ctx.json) return ctx.printJson(answer);
      for (const w of answer.webhooks) {
        ctx.out(ctx.quiet ? visible(String(w.id)) : shown`${w.id}\t${state(w)}\t${w.url}  [${w.events.join(',')}]${w.description ? `  ${w.description}` : ''}`);
      }
      if (!ctx.quiet) ctx.note(shown`${answer.webhooks.length} webhooks`);
    },
  },
  {
    name: `${WEBHOOKS} test`, summary: 'send a webhook.test delivery to an endpoint now', args: '<id>', options: {},
    positionals: [1, 1], auth: true,
    examples: ['docshare webhooks test 7 && docshare webhooks deliveries 7'],
    async run(ctx) {
      const id = webhookId(ctx.args[0], ctx.command);
      const answer = await ctx.client.webhooks.test(id);
      if (ctx.json) return ctx.printJson(answer);
      ctx.out(ctx.quiet ? visible(answer.message_id) : shown`${answer.message}: message ${answer.message_id} to webhook ${id}`);
    },
  },
  {
    name: `${WEBHOOKS} deliveries`, summary: 'delivery attempts to an endpoint, newest first', args: '<id>',
    description: 'One page (--limit, default 50) unless --all. Each line: time, outcome, HTTP status, latency,\nevent type, message id (the webhook-id header), attempt number, error.',
    options: {
      status: { type: 'string', value: '<failed|succeeded>', help: 'only attempts with this outcome' },
      limit: { type: 'string', value: '<n>', help: 'attempts per page (1-100, default 50)' },
      all: { type: 'boolean', help: 'every page, through the server\'s cursor' },
      'max-pages': { type: 'string', value: '<n>', help: `with --all: stop after n pages (default ${MAX_PAGES}; exit 8 when more follow)` },
    },
    positionals: [1, 1], auth: true,
    examples: ['docshare webhooks deliveries 7 --status failed', 'docshare webhooks deliveries 7 --all --json | jq ".deliveries | length"'],
    async run(ctx) {
      const id = webhookId(ctx.args[0], ctx.command);
      const status = str(ctx.values['status']);
      if (status !== undefined && status !== 'failed' && status !== 'succeeded') throw new UsageError(`--status must be failed or succeeded, got '${status}'`, ctx.command);
      const limit = positiveInt(ctx.values['limit'], 'limit', ctx.command);
      const all = ctx.values['all'] === true;
      const maxPages = positiveInt(ctx.values['max-pages'], 'max-pages', ctx.command) ?? MAX_PAGES;
      const collected: DeliveriesResponse['deliveries'] = [];
      const seen = new Set<string>();
      let cursor: string | undefined;
      let count = 0;
      for (let pages = 1; ; pages += 1) {
        const page = await ctx.client.webhooks.deliveries(id, {
          ...(status !== undefined ? { status } : {}), ...(limit !== undefined ? { limit } : {}), ...(cursor !== undefined ? { cursor } : {}),
        });
        count += page.deliveries.length;
        if (ctx.json) collected.push(...page.deliveries);
        else {
          for (const d of page.deliveries) {
            ctx.out(ctx.quiet ? visible(d.message_id)
              : shown`${d.attempted_at}  ${d.outcome}  ${d.http_status ?? '-'}  ${d.latency_ms} ms  ${d.event_type}  ${d.message_id}  attempt ${d.attempt}${d.error ? `  ${d.error}` : ''}`);
          }
        }
        const next = page.next_cursor;
        if (!all || next === null || next === undefined || page.deliveries.length === 0) {
          if (ctx.json) return ctx.printJson({ status: 'success', deliveries: collected, next_cursor: all ? null : next ?? null });
          if (!ctx.quiet) ctx.note(`${count} attempts${!all && next ? '; more follow: --all lists them all' : ''}`);
          return;
        }
        if (seen.has(next)) throw new CliError(`the server sent a cursor it had sent before (page ${pages + 1})`, EXIT.server);
        if (pages >= maxPages) throw new CliError(`stopped after ${pages} pages; more follow: --max-pages raises the limit`, EXIT.incomplete);
        seen.add(next);
        cursor = next;
      }
    },
  },
  {
    name: `${WEBHOOKS} replay`, summary: 'deliver events to an endpoint again, from the event log', args: '<id> (--since <time> [--until <time>] | --message-id <id>...)',
    description: 'The events in [since, until) (until: now), or the messages named (at most 100). Each keeps its\nwebhook-id, so a receiver that deduplicates by it sees no double.',
    options: {
      since: { type: 'string', value: '<time>', help: 'ISO 8601 time: events from then' },
      until: { type: 'string', value: '<time>', help: 'ISO 8601 time: events before then (default: now)' },
      'message-id': { type: 'string', multiple: true, value: '<msg_...>', help: 'a message to deliver again (its webhook-id)' },
    },
    positionals: [1, 1], auth: true,
    examples: ['docshare webhooks replay 7 --since 2025-11-22T10:00:00Z', 'docshare webhooks replay 7 --message-id msg_0123456789abcdef0123456789abcdef'],
    async run(ctx) {
      const id = webhookId(ctx.args[0], ctx.command);
      const since = isoTime(str(ctx.values['since']), 'since', ctx.command);
      const until = isoTime(str(ctx.values['until']), 'until', ctx.command);
      const messageIds = strs(ctx.values['message-id']);
      if ((since === undefined) === (messageIds.length === 0)) throw new UsageError('give --since (and --until), or --message-id, not both', ctx.command);
      if (until !== undefined && since === undefined) throw new UsageError('--until needs --since', ctx.command);
      const answer = await ctx.client.webhooks.replay(id, since !== undefined ? { since, ...(until !== undefined ? { until } : {}) } : { messageIds });
      if (ctx.json) return ctx.printJson(answer);
      ctx.out(ctx.quiet ? visible(answer.replay_id) : shown`${answer.message}: replay ${answer.replay_id} to webhook ${id}`);
    },
  },
  {
    name: `${WEBHOOKS} rm`, summary: 'delete an endpoint (nothing more is delivered to it)', args: '<id>', options: {},
    positionals: [1, 1], auth: true,
    async run(ctx) {
      const id = webhookId(ctx.args[0], ctx.command);
      const answer = await ctx.client.webhooks.remove(id);
      if (ctx.json) return ctx.printJson(answer);
      if (!ctx.quiet) ctx.out(shown`${answer.message}: webhook ${id}`);
    },
  },
];

/** `docshare webhooks` without a subcommand: the group's help. */
export const webhooksHelp = (): string => `Usage: docshare ${WEBHOOKS} <subcommand> [arguments] [options]

Your webhook endpoints: docshare POSTs signed events about your files to them (Standard Webhooks).

Subcommands:
${WEBHOOK_COMMANDS.map((c) => `  ${c.name.slice(WEBHOOKS.length + 1).padEnd(12)}${c.summary}`).join('\n')}

Run 'docshare ${WEBHOOKS} <subcommand> --help' for its options and examples.
`;
