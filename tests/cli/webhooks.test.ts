// `docshare webhooks` end to end: the npm bin against a started server (private networks and http
// allowed, as on a laptop) with a receiver on loopback that checks every delivery with the
// `standardwebhooks` library and the SDK's verifyWebhook. Registration prints the secret once;
// `test` and an upload reach the receiver signed; deliveries lists the attempts; replay of a
// message delivers it again under the same webhook-id; rm ends it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { verifyWebhook, type WebhookPayload } from '@docshare/client';
import { Webhook } from 'standardwebhooks';
import { randomWord } from '../support/client.ts';
import { useServer } from '../support/fixture.ts';
import { REPO_ROOT } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

const BIN = path.join(REPO_ROOT, 'libs', 'cli', 'bin', 'docshare.js');

interface Run { code: number; stdout: string; stderr: string }
interface Delivery { id: string; headers: http.IncomingHttpHeaders; body: string }

describe('docshare webhooks (CLI end to end)', () => {
  const fx = useServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_RETRY_SCHEDULE: '1s,1s' });
  let tmp: string;
  let work: string;
  let env: NodeJS.ProcessEnv;
  let receiver: http.Server;
  let receiverUrl: string;
  const deliveries: Delivery[] = [];

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'docshare-cli-webhooks-'));
    work = path.join(tmp, 'work');
    await mkdir(work);
    env = { ...process.env, HOME: tmp, XDG_CONFIG_HOME: path.join(tmp, 'config'), DOCSHARE_URL: fx.server.baseUrl };
    for (const k of ['DOCSHARE_TOKEN', 'DOCSHARE_PASSWORD', 'NODE_TEST_CONTEXT']) delete env[k];
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        deliveries.push({ id: String(req.headers['webhook-id']), headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  after(async () => {
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
    await rm(tmp, { recursive: true, force: true });
  });

  const docshare = (args: string[], more: NodeJS.ProcessEnv = {}): Promise<Run> => new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: work, env: { ...env, ...more } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    }).stdin?.end();
  });
  const ok = (r: Run, what: string): Run => {
    assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r;
  };

  /** The deliveries of a type, each verified by the library and by the SDK (the same payload from both). */
  const received = (secret: string, type: string): { delivery: Delivery; payload: WebhookPayload }[] =>
    deliveries.map((delivery) => {
      const headers = { 'webhook-id': String(delivery.headers['webhook-id']), 'webhook-timestamp': String(delivery.headers['webhook-timestamp']), 'webhook-signature': String(delivery.headers['webhook-signature']) };
      const payload = verifyWebhook(secret, delivery.headers, delivery.body);
      assert.deepEqual(new Webhook(secret).verify(delivery.body, headers), payload);
      return { delivery, payload };
    }).filter((d) => d.payload.type === type);

  let webhookId = 0;
  let secret = '';

  it('registers, adds an endpoint (the secret printed once) and lists it', async () => {
    ok(await docshare(['register', '--name', 'Hook User', '--email', `${randomWord(12)}@example.com`], { DOCSHARE_PASSWORD: 'correct horse battery' }), 'register');
    const add = ok(await docshare(['webhooks', 'add', receiverUrl, '--events', 'file.uploaded,comment.received', '--description', 'e2e']), 'webhooks add');
    const m = /webhook (\d+) -> .*\nSecret: (whsec_\S+)/.exec(add.stdout);
    assert.ok(m, add.stdout);
    [webhookId, secret] = [Number(m[1]), m[2] as string];
    assert.match(add.stderr, /Store this secret now/);
    const list = ok(await docshare(['webhooks', 'list']), 'webhooks list');
    assert.match(list.stdout, new RegExp(`^${webhookId}\\tenabled\\t${receiverUrl.replace(/[.]/g, '\\.')}  \\[file\\.uploaded,comment\\.received\\]  e2e$`, 'm'));
    assert.doesNotMatch(list.stdout, /whsec_/);
  });

  it('test: a signed webhook.test delivery reaches the receiver under the message id the CLI printed', async () => {
    const test = ok(await docshare(['webhooks', 'test', String(webhookId), '--quiet']), 'webhooks test');
    const messageId = test.stdout.trim();
    assert.match(messageId, /^msg_[0-9a-f]{32}$/);
    const [got] = await eventually(() => {
      const found = received(secret, 'webhook.test').filter((d) => d.delivery.id === messageId);
      return found.length > 0 && found;
    });
    assert.equal(got?.payload.type === 'webhook.test' ? got.payload.data.webhook_id : undefined, webhookId);
  });

  it('an upload reaches the receiver as file.uploaded; deliveries lists the attempt; replay sends it again under the same webhook-id', async () => {
    await writeFile(path.join(work, 'hook.txt'), `webhook test ${randomWord(12)}\n`);
    const upload = ok(await docshare(['upload', 'hook.txt', '--title', 'Hooked', '--description', 'd', '--tags', 't', '--license', 'CC BY', '--new-category', 'Hooks', '-q']), 'upload');
    const fileId = Number(upload.stdout.trim());
    const [uploaded] = await eventually(() => {
      const found = received(secret, 'file.uploaded').filter((d) => d.payload.type === 'file.uploaded' && d.payload.data.file_id === fileId);
      return found.length > 0 && found;
    });
    const messageId = uploaded?.delivery.id as string;
    const attempts = await eventually(async () => {
      const r = ok(await docshare(['webhooks', 'deliveries', String(webhookId), '--status', 'succeeded', '--all', '--json']), 'deliveries');
      const list = (JSON.parse(r.stdout) as { deliveries: { message_id: string; outcome: string; http_status: number }[] }).deliveries;
      return list.some((d) => d.message_id === messageId) && list;
    });
    assert.ok(attempts.every((d) => d.outcome === 'succeeded' && d.http_status === 204));
    const before = deliveries.filter((d) => d.id === messageId).length;
    ok(await docshare(['webhooks', 'replay', String(webhookId), '--message-id', messageId]), 'replay');
    await eventually(() => deliveries.filter((d) => d.id === messageId).length > before);
    const again = received(secret, 'file.uploaded').filter((d) => d.delivery.id === messageId);
    assert.deepEqual(again.at(-1)?.payload, uploaded?.payload);
  });

  it('rm deletes it: the list is empty and a test is exit 4', async () => {
    ok(await docshare(['webhooks', 'rm', String(webhookId)]), 'webhooks rm');
    const list = ok(await docshare(['webhooks', 'list', '--json']), 'webhooks list');
    assert.deepEqual((JSON.parse(list.stdout) as { webhooks: unknown[] }).webhooks, []);
    const test = await docshare(['webhooks', 'test', String(webhookId)]);
    assert.equal(test.code, 4, test.stderr);
    assert.match(test.stderr, /Webhook not found/);
  });
});
