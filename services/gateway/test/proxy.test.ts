// The gateway's HTTP proxy (distributed mode) under clients and services that misbehave: an early
// answer (413) is relayed and the client's body is no longer read, a client that goes away aborts
// the service's request, a service that dies mid-answer cuts only that answer, a service that
// cannot be reached is a 503 in the envelope. An uncaught stream error would fail this file.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import express, { type Express } from 'express';
import { M, tooLarge } from '@docshare/contracts';
import { closeServer, errorHandler, listen, makeLogger, requestDeadline, sendError, type HttpLimits } from '@docshare/http';
import { httpUpstream } from '../src/proxy.ts';

const logger = makeLogger('proxy-test', 'silent');
const LIMITS: HttpLimits = { headersTimeoutMs: 5_000, idleTimeoutMs: 10_000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000, maxConnections: 100 };
const BOUND_MS = 20_000;
const MAX_BYTES = 10_000;

/** What the fake service saw of its last request. */
const seen = { aborted: 0, bytes: 0 };
const answered = { late: 0 };

/** A service: refuses bodies over MAX_BYTES as soon as it has read that much (like docs-command). */
const service = (): Express => {
  const app = express();
  app.post('/upload', (req, res, next) => {
    seen.bytes = 0;
    req.on('close', () => {
      if (!req.complete) seen.aborted += 1;
    });
    req.on('data', (chunk: Buffer) => {
      seen.bytes += chunk.length;
      if (seen.bytes > MAX_BYTES && !res.headersSent) {
        req.pause();
        req.removeAllListeners('data');
        next(tooLarge(M.fileTooLarge));
      }
    });
    req.on('end', () => {
      if (!res.headersSent) res.status(201).json({ status: 'success' });
    });
  });
  app.get('/dies', (req, res) => {
    res.setHeader('Content-Length', '1000');
    res.write('x'.repeat(10));
    setTimeout(() => req.socket.destroy(), 50);
  });
  app.get('/slow', (_req, res) => {
    setTimeout(() => {
      answered.late += 1;
      if (!res.destroyed) res.json({ status: 'success' });
    }, 500);
  });
  app.get('/ok', (_req, res) => res.json({ status: 'success' }));
  app.delete('/echo', express.json(), (req, res) => res.json({ status: 'success', body: req.body as unknown }));
  app.use(errorHandler(logger));
  return app;
};

let upstream: Server;
let gateway: Server;
let deadGateway: Server;
let port = 0;
let deadPort = 0;

before(async () => {
  const up = await listen(service(), 0, '127.0.0.1', LIMITS, logger);
  upstream = up.server;
  const app = express();
  app.use(requestDeadline(200, (req) => req.path !== '/slow', logger));
  app.use(httpUpstream(`http://127.0.0.1:${up.port}`, logger));
  app.use((_req, res) => sendError(res, 404, M.notFound));
  const gw = await listen(app, 0, '127.0.0.1', LIMITS, logger);
  gateway = gw.server;
  port = gw.port;
  // A gateway whose service is not there at all (a port nothing listens on any more).
  const probe = await listen(express(), 0, '127.0.0.1', LIMITS);
  const gonePort = probe.port;
  await closeServer(probe.server);
  const dead = express();
  dead.use((_req, res, next) => {
    res.locals.failureMessage = M.searchFailed;
    next();
  });
  dead.use(httpUpstream(`http://127.0.0.1:${gonePort}`, logger));
  const d = await listen(dead, 0, '127.0.0.1', LIMITS, logger);
  deadGateway = d.server;
  deadPort = d.port;
});

after(async () => {
  await Promise.all([closeServer(gateway, 100), closeServer(upstream, 100), closeServer(deadGateway, 100)]);
});

interface Exchange { text: string; closed: boolean; written: number }

/** Sends `head` then `body` chunks (each waiting for the socket to take it) and collects the answer until close. */
const exchange = async (to: number, head: string, body?: () => Iterable<Buffer>, abortAfter?: number): Promise<Exchange> => {
  const socket = net.connect(to, '127.0.0.1');
  const chunks: Buffer[] = [];
  let written = 0;
  let closed = false;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  const done = new Promise<boolean>((resolve) => {
    const bound = setTimeout(() => resolve(false), BOUND_MS);
    socket.on('close', () => {
      closed = true;
      clearTimeout(bound);
      resolve(true);
    });
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const write = (data: Buffer | string): Promise<boolean> => new Promise((resolve) => {
    if (closed || !socket.writable) return resolve(false);
    socket.write(data, (err) => resolve(!err));
  });
  await write(head);
  for (const chunk of body?.() ?? []) {
    if (!(await write(chunk))) break;
    written += chunk.length;
    if (abortAfter !== undefined && written >= abortAfter) {
      socket.destroy();
      break;
    }
  }
  const wasClosed = await done;
  return { text: Buffer.concat(chunks).toString('latin1'), closed: wasClosed, written };
};

const chunked = (total: number) => function* (): Iterable<Buffer> {
  const chunk = Buffer.alloc(64 * 1024, 0x41);
  for (let sent = 0; sent < total; sent += chunk.length) {
    yield Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
  }
  yield Buffer.from('0\r\n\r\n');
};

const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? NaN);
const bodyOf = (text: string): unknown => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

const expectAlive = async (): Promise<void> => {
  const res = await fetch(`http://127.0.0.1:${port}/ok`, { signal: AbortSignal.timeout(BOUND_MS) });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
};

describe('gateway proxy', () => {
  it('relays a service\'s early 413 at once and stops reading and forwarding the client\'s body', async () => {
    const total = 64 * 1024 * 1024;
    const res = await exchange(port, 'POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n', chunked(total));
    assert.equal(statusOf(res.text), 413, res.text.slice(0, 300));
    assert.deepEqual(bodyOf(res.text), { status: 'error', message: 'File too large' });
    assert.match(res.text, /\r\nConnection: close\r\n/i);
    assert.ok(res.closed, 'the client connection must close after the early answer');
    assert.ok(res.written < total / 2, `the gateway read ${res.written} of ${total} bytes`);
    await expectAlive();
  });

  it('a client that goes away mid-upload aborts the service\'s request', async () => {
    const before = seen.aborted;
    await exchange(port, `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${MAX_BYTES}\r\n\r\n`,
      function* () { for (let i = 0; i < 10; i += 1) yield Buffer.alloc(100, 0x41); }, 500);
    for (let i = 0; i < 200 && seen.aborted === before; i += 1) await new Promise((r) => setTimeout(r, 25));
    assert.equal(seen.aborted, before + 1, 'the service must see its request aborted');
    await expectAlive();
  });

  it('a service that dies mid-answer cuts the client\'s answer, and the gateway stays up', async () => {
    const res = await exchange(port, 'GET /dies HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(statusOf(res.text), 200);
    assert.ok(res.closed, 'the client must see the answer cut off');
    assert.ok(res.text.length < res.text.indexOf('\r\n\r\n') + 4 + 1000, 'the answer is shorter than announced');
    await expectAlive();
  });

  it('a chunked DELETE body reaches the service framed (Node sends DELETE bodies unframed by default)', async () => {
    const json = Buffer.from(JSON.stringify({ id: 'x'.repeat(300) }));
    const res = await exchange(port, 'DELETE /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
      function* () {
        for (let i = 0; i < json.length; i += 53) {
          const piece = json.subarray(i, i + 53);
          yield Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
        }
        yield Buffer.from('0\r\n\r\n');
      });
    assert.equal(statusOf(res.text), 200, res.text);
    assert.deepEqual(bodyOf(res.text), { status: 'success', body: { id: 'x'.repeat(300) } });
  });

  it('a service that cannot be reached → 503 with the route\'s message and Retry-After', async () => {
    const res = await fetch(`http://127.0.0.1:${deadPort}/anything`, { signal: AbortSignal.timeout(BOUND_MS) });
    assert.equal(res.status, 503);
    assert.ok(res.headers.get('retry-after'));
    assert.deepEqual(await res.json(), { status: 'error', message: M.searchFailed });
  });

  it('a request past the gateway\'s deadline → 503 JSON; the service\'s late answer goes nowhere', async () => {
    const lateBefore = answered.late;
    const res = await fetch(`http://127.0.0.1:${port}/slow`, { signal: AbortSignal.timeout(BOUND_MS) });
    assert.equal(res.status, 503);
    assert.deepEqual(await res.json(), { status: 'error', message: M.unavailable });
    for (let i = 0; i < 200 && answered.late === lateBefore; i += 1) await new Promise((r) => setTimeout(r, 25));
    assert.equal(answered.late, lateBefore + 1);
    await expectAlive();
  });
});
