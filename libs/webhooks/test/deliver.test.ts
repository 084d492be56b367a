import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { makeDeliverer, type DeliveryRequest, WEBHOOK_USER_AGENT } from '../src/deliver.ts';
import { newWebhookSecret } from '../src/secrets.ts';

const OPEN = { allowHttp: true, allowPrivate: true };
const SECRET = newWebhookSecret();
const BODY = JSON.stringify({ type: 'webhook.test', timestamp: '2026-01-02T03:04:05.000Z', data: { webhook_id: 1, owner_id: 2 } });

interface Received { headers: IncomingMessage['headers']; body: string; url: string }

/** A receiver on 127.0.0.1 that counts connections, keeps what it got, and answers with `handler`. */
const receiver = async (handler: (req: IncomingMessage, res: ServerResponse) => void) => {
  const received: Received[] = [];
  const sockets: Socket[] = [];
  /** One per connection, resolved when it closes (events.once would reject on the reset's 'error'). */
  const closed: Promise<void>[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), url: req.url ?? '' });
      handler(req, res);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.push(socket);
    closed.push(new Promise((resolve) => socket.once('close', () => resolve())));
    socket.on('error', () => { /* a client hanging up mid-answer: what some tests do on purpose */ });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`, port, received, sockets, closed,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
};

const request = (url: string, secrets: readonly string[] = [SECRET]): DeliveryRequest => ({
  url, messageId: 'msg_00112233445566778899aabbccddeeff', timestampSeconds: Math.floor(Date.now() / 1000), body: BODY, secrets,
});

describe('makeDeliverer', () => {
  const deliverer = makeDeliverer({ policy: OPEN, timeoutMs: 5_000 });
  after(() => deliverer.close());

  it('2xx: succeeded, signed so the standardwebhooks library verifies it, with the documented headers', async () => {
    const server = await receiver((_req, res) => res.writeHead(204).end());
    try {
      const previous = newWebhookSecret();
      const result = await deliverer.deliver(request(server.url, [SECRET, previous]));
      assert.equal(result.outcome, 'succeeded');
      assert.equal(result.status, 204);
      assert.equal(result.error, null);
      assert.equal(result.retryAfterMs, undefined);
      assert.ok(result.latencyMs >= 0);
      const [got] = server.received;
      assert.ok(got);
      assert.equal(got.body, BODY);
      assert.equal(got.headers['content-type'], 'application/json');
      assert.equal(got.headers['user-agent'], WEBHOOK_USER_AGENT);
      assert.equal(got.headers['webhook-id'], 'msg_00112233445566778899aabbccddeeff');
      const headers = { 'webhook-id': String(got.headers['webhook-id']), 'webhook-timestamp': String(got.headers['webhook-timestamp']), 'webhook-signature': String(got.headers['webhook-signature']) };
      assert.deepEqual(new Webhook(SECRET).verify(got.body, headers), JSON.parse(BODY));
      assert.doesNotThrow(() => new Webhook(previous).verify(got.body, headers));
    } finally {
      await server.close();
    }
  });

  it('keeps the connection alive between deliveries to one receiver', async () => {
    const server = await receiver((_req, res) => res.writeHead(200).end('ok'));
    try {
      assert.equal((await deliverer.deliver(request(server.url))).outcome, 'succeeded');
      assert.equal((await deliverer.deliver(request(server.url))).outcome, 'succeeded');
      assert.equal(server.received.length, 2);
      assert.equal(server.sockets.length, 1);
    } finally {
      await server.close();
    }
  });

  it('500: failed with its status, and Retry-After read', async () => {
    const server = await receiver((_req, res) => res.writeHead(500, { 'retry-after': '30' }).end('boom'));
    try {
      const result = await deliverer.deliver(request(server.url));
      assert.deepEqual({ ...result, latencyMs: 0 }, { outcome: 'failed', status: 500, error: 'HTTP 500', latencyMs: 0, retryAfterMs: 30_000 });
    } finally {
      await server.close();
    }
  });

  it('410: gone', async () => {
    const server = await receiver((_req, res) => res.writeHead(410).end());
    try {
      const result = await deliverer.deliver(request(server.url));
      assert.equal(result.outcome, 'gone');
      assert.equal(result.status, 410);
      assert.equal(result.error, 'HTTP 410');
    } finally {
      await server.close();
    }
  });

  it('301: failed, and the redirect is not followed', async () => {
    const server = await receiver((req, res) => {
      if (req.url === '/hook') res.writeHead(301, { location: '/elsewhere' }).end();
      else res.writeHead(200).end();
    });
    try {
      const result = await deliverer.deliver(request(server.url));
      assert.equal(result.outcome, 'failed');
      assert.equal(result.status, 301);
      assert.equal(result.error, 'HTTP 301');
      assert.deepEqual(server.received.map((got) => got.url), ['/hook']);
    } finally {
      await server.close();
    }
  });

  it('a receiver that never answers: failed on the timeout, no status', async () => {
    const hanging = makeDeliverer({ policy: OPEN, timeoutMs: 300 });
    const server = await receiver(() => { /* never answers */ });
    try {
      const result = await hanging.deliver(request(server.url));
      assert.equal(result.outcome, 'failed');
      assert.equal(result.status, null);
      assert.equal(result.error, 'timeout after 300 ms');
    } finally {
      hanging.close();
      await server.close();
    }
  });

  it('a receiver answering 1 MiB: the read stops and the connection is dropped', async () => {
    const server = await receiver((_req, res) => {
      res.on('error', () => { /* the client hung up: expected */ });
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.alloc(1024 * 1024, 0x61));
    });
    try {
      const result = await deliverer.deliver(request(server.url));
      assert.equal(result.outcome, 'succeeded');
      assert.equal(result.status, 200);
      // A connection read to its end would be kept alive and reused: this one was dropped, so the
      // next delivery opens another, and the first closes.
      assert.equal((await deliverer.deliver(request(server.url))).outcome, 'succeeded');
      assert.equal(server.sockets.length, 2);
      await server.closed[0];
    } finally {
      await server.close();
    }
  });

  it('a small response within the limit keeps the connection', async () => {
    const small = makeDeliverer({ policy: OPEN, timeoutMs: 5_000, maxResponseBytes: 16 });
    const server = await receiver((_req, res) => res.writeHead(200).end('x'.repeat(16)));
    try {
      assert.equal((await small.deliver(request(server.url))).outcome, 'succeeded');
      assert.equal((await small.deliver(request(server.url))).outcome, 'succeeded');
      assert.equal(server.sockets.length, 1);
    } finally {
      small.close();
      await server.close();
    }
  });

  it('a closed port: connection refused', async () => {
    const server = await receiver((_req, res) => res.end());
    const { url } = server;
    await server.close();
    const result = await deliverer.deliver(request(url));
    assert.deepEqual([result.outcome, result.status, result.error], ['failed', null, 'connection refused']);
  });

  it('without the private-network opt-in: 127.0.0.1, [::1] and localhost are refused before any connection', async () => {
    const strict = makeDeliverer({ policy: { allowHttp: true, allowPrivate: false }, timeoutMs: 5_000 });
    const server = await receiver((_req, res) => res.end());
    try {
      for (const url of [server.url, `http://localhost:${server.port}/hook`, `http://[::1]:${server.port}/hook`, `http://2130706433:${server.port}/hook`]) {
        const result = await strict.deliver(request(url));
        assert.deepEqual([result.outcome, result.status, result.error], ['failed', null, 'refused: private address'], url);
      }
      assert.equal(server.sockets.length, 0);
      assert.equal(server.received.length, 0);
    } finally {
      strict.close();
      await server.close();
    }
  });

  it('http without the opt-in, and a URL that is not one, are refused', async () => {
    const httpsOnly = makeDeliverer({ policy: { allowHttp: false, allowPrivate: true }, timeoutMs: 5_000 });
    try {
      assert.equal((await httpsOnly.deliver(request('http://127.0.0.1:9/hook'))).error, 'refused: http not allowed');
      assert.equal((await httpsOnly.deliver(request('not a url'))).error, 'invalid url');
      assert.equal((await httpsOnly.deliver(request('ftp://127.0.0.1/x'))).error, 'invalid url');
    } finally {
      httpsOnly.close();
    }
  });

  it('never puts a secret or the body in the error', async () => {
    const server = await receiver((_req, res) => res.writeHead(503, { 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' }).end(BODY));
    try {
      const result = await deliverer.deliver(request(server.url));
      assert.equal(result.error, 'HTTP 503');
      assert.equal(result.retryAfterMs, 0);
      assert.ok(!JSON.stringify(result).includes(SECRET.slice(6)) && !JSON.stringify(result).includes('webhook_id'));
    } finally {
      await server.close();
    }
  });
});
