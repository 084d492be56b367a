// The dispatcher with the real sealer and the real HTTP deliverer, to a receiver that verifies
// every delivery with the `standardwebhooks` library receivers use: the sealed secret is opened
// and signs; during a rotation both secrets verify. And the HTTP disable recorder against a fake
// docs-command: what it sends, what it retries, what ends it.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { retrying, webhookMessageId } from '@docshare/contracts';
import { makeLogger } from '@docshare/http';
import { makeDeliverer, makeSecretSealer, newWebhookSecret } from '@docshare/webhooks';
import { makeMemoryWebhookStore } from '@docshare/webhooks/store';
import { makeDispatcher } from '../src/dispatcher.ts';
import { makeHttpRecorder } from '../src/http-recorder.ts';
import { makeLog } from './history.ts';

const logger = makeLogger('test', 'silent');
const RECEIVER_PORT = 18146;
const DOCS_PORT = 18147;

const until = (check: () => boolean, what: string): Promise<void> => retrying(async () => {
  if (!check()) throw new Error(`still waiting for ${what}`);
}, { attempts: 1_000, baseMs: 2, capMs: 10 });

const listen = (server: Server, port: number): Promise<void> => new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', () => resolve());
});

interface Received { headers: IncomingHttpHeaders; body: string }

describe('webhook dispatcher: signed deliveries over HTTP', () => {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  before(() => listen(server, RECEIVER_PORT));
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('a receiver verifies each delivery with standardwebhooks, with either secret during a rotation', async () => {
    const sealer = makeSecretSealer('a-test-key-of-at-least-thirty-two-characters');
    const first = newWebhookSecret();
    const second = newWebhookSecret();
    const log = makeLog();
    const url = `http://127.0.0.1:${RECEIVER_PORT}/hook`;
    const registered = log.register(1, 1, ['file.uploaded'], url);
    (registered.event.data as { secret: unknown }).secret = sealer.seal(first, 1);
    const before = log.upload(10, 1);
    const rotated = log.rotate(1, 1, 'x', Date.now() + 86_400_000);
    (rotated.event.data as { secret: unknown }).secret = sealer.seal(second, 1);
    const during = log.upload(11, 1);
    const deliverer = makeDeliverer({ policy: { allowHttp: true, allowPrivate: true }, timeoutMs: 5_000 });
    const dispatcher = makeDispatcher({
      store: makeMemoryWebhookStore(), sealer, deliverer, logger, group: 'g', pollMs: 5,
      recorder: { disable: async () => { throw new Error('not expected'); } },
      settings: {
        maxPerUser: 10, policy: { allowHttp: true, allowPrivate: true }, secretKey: undefined, retryScheduleMs: [1], disableAfterMs: 86_400_000,
        timeoutMs: 5_000, concurrency: 4, endpointConcurrency: 1, retentionDays: 30, dispatcherUrl: undefined,
      },
      readModelsReached: async () => {},
    });
    dispatcher.start();
    try {
      // Signed with the secrets of the moment it is sent: before the rotation, then during it.
      await dispatcher.handle({ partition: 0, records: log.records.slice(0, 2), through: 2 });
      await until(() => received.length === 1, 'the first delivery');
      await dispatcher.handle({ partition: 0, records: log.records.slice(2), through: 4 });
      await until(() => received.length === 2, 'the second delivery');
    } finally {
      await dispatcher.stop();
      deliverer.close();
    }
    const [one, two] = received;
    assert.ok(one && two);
    const headersOf = (r: Received): Record<string, string> =>
      ({ 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) });
    assert.equal(one.headers['webhook-id'], webhookMessageId(before.event.id));
    assert.equal(two.headers['webhook-id'], webhookMessageId(during.event.id));
    assert.deepEqual(new Webhook(first).verify(one.body, headersOf(one)), JSON.parse(one.body));
    assert.throws(() => new Webhook(second).verify(one.body, headersOf(one)), 'the second secret did not exist yet');
    // During the rotation: both signatures, the new one first.
    assert.equal(String(two.headers['webhook-signature']).split(' ').length, 2);
    assert.deepEqual(new Webhook(second).verify(two.body, headersOf(two)), JSON.parse(two.body));
    assert.deepEqual(new Webhook(first).verify(two.body, headersOf(two)), JSON.parse(two.body));
    assert.equal((JSON.parse(two.body) as { type: string }).type, 'file.uploaded');
  });
});

describe('webhook dispatcher: the HTTP disable recorder', () => {
  const calls: { path: string; token: string | undefined; body: unknown }[] = [];
  let answers: number[] = [];
  const docs = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      calls.push({ path: req.url ?? '', token: req.headers['x-internal-token'] as string | undefined, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      const status = answers.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status: status < 300 ? 'success' : 'error' }));
    });
  });
  before(() => listen(docs, DOCS_PORT));
  after(() => new Promise<void>((resolve) => docs.close(() => resolve())));
  const recorder = makeHttpRecorder(`http://127.0.0.1:${DOCS_PORT}/`, 'tok', { baseMs: 1, capMs: 2, attempts: 4 });

  it('posts {owner_id, reason} with the internal token; retries 5xx and 429 until a 2xx', async () => {
    calls.length = 0;
    answers = [503, 429, 200];
    await recorder.disable(5, 9, 'gone');
    assert.equal(calls.length, 3);
    assert.deepEqual(calls[0], { path: '/internal/V1/webhooks/5/disabled', token: 'tok', body: { owner_id: 9, reason: 'gone' } });
  });

  it('a 404 ends it (nothing to disable); a 403 rejects at once; 5xx past its attempts rejects', async () => {
    calls.length = 0;
    answers = [404];
    await recorder.disable(5, 9, 'failing');
    assert.equal(calls.length, 1);
    answers = [403];
    await assert.rejects(recorder.disable(5, 9, 'failing'), /403/);
    assert.equal(calls.length, 2);
    answers = [500, 500, 500, 500];
    await assert.rejects(recorder.disable(5, 9, 'failing'), /500/);
    assert.equal(calls.length, 6);
  });
});
