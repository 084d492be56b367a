// `docshare webhooks ...` in-process against a played server: routing of the subcommands, their
// requests, output (the secret printed once, with the warning on stderr), usage errors and exit
// codes. (End to end against a server and a receiver: tests/cli/webhooks.test.ts.)
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EXIT } from '../src/exit.ts';
import { jsonResponse, runCli, type Ran } from './harness.ts';

let home: string;
before(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-webhooks-'));
});
after(async () => {
  await rm(home, { recursive: true, force: true });
});

const env = { DOCSHARE_URL: 'http://api.test', DOCSHARE_TOKEN: 'tok' };
/** Runs the CLI; each request gets the next answer (the last repeats). */
const cli = (argv: string[], ...answers: [number, unknown][]): Promise<Ran> =>
  runCli(argv, {
    home, env,
    ...(answers.length > 0 ? { answer: () => { const [s, b] = (answers.length > 1 ? answers.shift() : answers[0]) as [number, unknown]; return jsonResponse(s, b); } } : {}),
  });
const BASE = 'http://api.test/api/V1/users/api-webhooks';
const webhook = { id: 7, url: 'https://hooks.example.com/in', events: ['file.uploaded', 'comment.received'], description: 'ci', enabled: true, disabled_reason: null, created_at: 't' };

describe('docshare webhooks', () => {
  it('add: POSTs url, events and description; prints the id and the secret once, the warning on stderr', async () => {
    const r = await cli(['webhooks', 'add', webhook.url, '--events', 'file.uploaded, comment.received', '--description', 'ci'],
      [201, { status: 'success', message: 'Webhook registered', webhook, secret: 'whsec_c2VjcmV0' }]);
    assert.equal(r.code, EXIT.ok, r.stderr);
    assert.equal(r.calls[0]?.url, BASE);
    assert.equal(r.calls[0]?.init?.method, 'POST');
    assert.deepEqual(r.calls[0]?.body, { url: webhook.url, events: ['file.uploaded', 'comment.received'], description: 'ci' });
    assert.match(r.stdout, /webhook 7 -> https:\/\/hooks\.example\.com\/in/);
    assert.equal(r.stdout.split('whsec_c2VjcmV0').length, 2, 'the secret is printed once');
    assert.match(r.stderr, /Store this secret now: it is not shown again/);
    const quiet = await cli(['webhooks', 'add', webhook.url, '--events', 'file.uploaded', '-q'], [201, { status: 'success', message: 'Webhook registered', webhook, secret: 'whsec_c2VjcmV0' }]);
    assert.equal(quiet.stdout, '7\twhsec_c2VjcmV0\n');
  });

  it('add without --events, or without a URL, is a usage error before any request', async () => {
    const none = await cli(['webhooks', 'add', webhook.url]);
    assert.equal(none.code, EXIT.usage);
    assert.match(none.stderr, /--events is required: one or more of file\.uploaded, file\.processed/);
    const noUrl = await cli(['webhooks', 'add', '--events', 'file.uploaded']);
    assert.equal(noUrl.code, EXIT.usage);
    assert.equal(none.calls.length + noUrl.calls.length, 0);
  });

  it('the server refusing a registration: its message, exit 1; --json prints its envelope', async () => {
    const r = await cli(['webhooks', 'add', 'http://127.0.0.1/x', '--events', 'file.uploaded', '--json'],
      [400, { status: 'error', message: 'Webhook URL must use https' }]);
    assert.equal(r.code, EXIT.apiError);
    assert.match(r.stderr, /Webhook URL must use https \(HTTP 400/);
    assert.deepEqual(JSON.parse(r.stdout), { status: 'error', message: 'Webhook URL must use https' });
  });

  it('list, test, rm: their requests and lines; an unknown webhook is exit 4', async () => {
    const list = await cli(['webhooks', 'list'], [200, { status: 'success', webhooks: [webhook, { ...webhook, id: 8, enabled: false, disabled_reason: 'gone' }] }]);
    assert.equal(list.code, EXIT.ok);
    assert.equal(list.stdout, '7\tenabled\thttps://hooks.example.com/in  [file.uploaded,comment.received]  ci\n8\tdisabled (gone)\thttps://hooks.example.com/in  [file.uploaded,comment.received]  ci\n');
    const test = await cli(['webhooks', 'test', '7'], [202, { status: 'success', message: 'Test delivery queued', message_id: 'msg_1' }]);
    assert.equal(test.stdout, 'Test delivery queued: message msg_1 to webhook 7\n');
    assert.equal(`${test.calls[0]?.init?.method} ${test.calls[0]?.url}`, `POST ${BASE}/7/test`);
    const removed = await cli(['webhooks', 'rm', '7'], [200, { status: 'success', message: 'Webhook deleted' }]);
    assert.equal(`${removed.calls[0]?.init?.method} ${removed.calls[0]?.url}`, `DELETE ${BASE}/7`);
    assert.equal(removed.stdout, 'Webhook deleted: webhook 7\n');
    const missing = await cli(['webhooks', 'rm', '99'], [404, { status: 'error', message: 'Webhook not found' }]);
    assert.equal(missing.code, EXIT.notFound);
    const bad = await cli(['webhooks', 'test', 'x1']);
    assert.equal(bad.code, EXIT.usage);
    assert.match(bad.stderr, /a webhook id is a positive integer/);
  });

  it('deliveries: one page with its filter, --all through the cursor, --json the whole list', async () => {
    const attempt = (n: number, outcome = 'failed') => ({ message_id: `msg_${n}`, event_id: `e${n}`, event_type: 'file.uploaded', attempt: n, attempted_at: `t${n}`, outcome, http_status: 500, latency_ms: 4, error: 'HTTP 500' });
    const one = await cli(['webhooks', 'deliveries', '7', '--status', 'failed'], [200, { status: 'success', deliveries: [attempt(1)], next_cursor: 'p2' }]);
    assert.equal(one.code, EXIT.ok);
    assert.equal(one.calls.length, 1);
    assert.equal(one.calls[0]?.url, `${BASE}/7/deliveries?status=failed`);
    assert.equal(one.stdout, 't1  failed  500  4 ms  file.uploaded  msg_1  attempt 1  HTTP 500\n');
    assert.match(one.stderr, /more follow: --all/);
    const all = await cli(['webhooks', 'deliveries', '7', '--all', '--json'],
      [200, { status: 'success', deliveries: [attempt(1)], next_cursor: 'p2' }], [200, { status: 'success', deliveries: [attempt(2)], next_cursor: null }]);
    assert.deepEqual(all.calls.map((c) => c.url), [`${BASE}/7/deliveries`, `${BASE}/7/deliveries?cursor=p2`]);
    assert.deepEqual(JSON.parse(all.stdout).deliveries.map((d: { message_id: string }) => d.message_id), ['msg_1', 'msg_2']);
    const loop = await cli(['webhooks', 'deliveries', '7', '--all'], [200, { status: 'success', deliveries: [attempt(1)], next_cursor: 'same' }]);
    assert.equal(loop.code, EXIT.server);
    const capped = await cli(['webhooks', 'deliveries', '7', '--all', '--max-pages', '2'],
      [200, { status: 'success', deliveries: [attempt(1)], next_cursor: 'a' }], [200, { status: 'success', deliveries: [attempt(2)], next_cursor: 'b' }]);
    assert.equal(capped.code, EXIT.incomplete);
    const status = await cli(['webhooks', 'deliveries', '7', '--status', 'dead']);
    assert.equal(status.code, EXIT.usage);
  });

  it('replay: --since/--until or --message-id (repeatable), checked before any request', async () => {
    const queued: [number, unknown] = [202, { status: 'success', message: 'Replay queued', replay_id: 'r1' }];
    const since = await cli(['webhooks', 'replay', '7', '--since', '2025-11-22T10:00:00Z', '--until', '2025-11-22T11:00:00Z'], queued);
    assert.equal(since.code, EXIT.ok, since.stderr);
    assert.deepEqual(since.calls[0]?.body, { since: '2025-11-22T10:00:00Z', until: '2025-11-22T11:00:00Z' });
    assert.equal(since.stdout, 'Replay queued: replay r1 to webhook 7\n');
    const ids = await cli(['webhooks', 'replay', '7', '--message-id', 'msg_a', '--message-id', 'msg_b', '-q'], queued);
    assert.deepEqual(ids.calls[0]?.body, { message_ids: ['msg_a', 'msg_b'] });
    assert.equal(ids.stdout, 'r1\n');
    for (const argv of [['--since', 'yesterday'], [], ['--since', '2025-11-22', '--message-id', 'msg_a'], ['--until', '2025-11-22T10:00:00Z', '--message-id', 'msg_a']]) {
      const r = await cli(['webhooks', 'replay', '7', ...argv]);
      assert.equal(r.code, EXIT.usage, argv.join(' '));
      assert.equal(r.calls.length, 0);
    }
  });

  it('help: the group lists its subcommands; each subcommand has its own; an unknown one is a usage error', async () => {
    const group = await cli(['webhooks', '--help']);
    assert.equal(group.code, EXIT.ok);
    for (const sub of ['add', 'list', 'test', 'deliveries', 'replay', 'rm']) assert.match(group.stdout, new RegExp(`^  ${sub} `, 'm'));
    const bare = await cli(['webhooks']);
    assert.equal(bare.code, EXIT.usage);
    assert.match(bare.stderr, /Usage: docshare webhooks <subcommand>/);
    const add = await cli(['webhooks', 'add', '--help']);
    assert.match(add.stdout, /^Usage: docshare webhooks add <url> --events <types> \[options\]/);
    const viaHelp = await cli(['help', 'webhooks', 'replay']);
    assert.match(viaHelp.stdout, /--message-id <msg_\.\.\.>/);
    assert.match((await cli(['help', 'webhooks'])).stdout, /Subcommands:/);
    const unknown = await cli(['webhooks', 'frob']);
    assert.equal(unknown.code, EXIT.usage);
    assert.match(unknown.stderr, /unknown command 'webhooks frob'/);
    const main = await cli(['--help']);
    assert.match(main.stdout, /^ {2}webhooks add /m);
  });
});
