// Request bodies at the HTTP layer (issue 17, item 7): a body that trickles or never ends is
// answered 408 and its connection freed; a body the server itself is not reading is never blamed
// on the client; uploads in flight are counted per process and per user. Small limits so nothing
// waits long; no assertion on how long anything took.
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import net from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import {
  bodyVerdict, closeServer, defaultMaxConnections, errorHandler, httpLimitsOf, isTransient, listen, makeLogger, makeUploadSlots, uploadSlot,
  type HttpLimits, type TransferLimits,
} from '../src/index.ts';

const LIMITS: TransferLimits = { minBytesPerSecond: 1024, graceMs: 10_000, windowMs: 30_000, deadlineMs: 3_600_000, maxUploads: 4, maxUploadsPerUser: 2 };

describe('bodyVerdict', () => {
  const at = (...points: Array<[number, number]>) => [{ waitedMs: 0, bytes: 0 }, ...points.map(([waitedMs, bytes]) => ({ waitedMs, bytes }))];

  it('leaves a body alone during the grace, whatever its pace', () => {
    assert.equal(bodyVerdict(LIMITS, 9_000, at([9_000, 0])), 'ok');
  });

  it('after the grace, a body below the pace is too slow; one at the pace is not', () => {
    // One byte every 10 s: the finding's upload.
    assert.equal(bodyVerdict(LIMITS, 10_000, at([10_000, 1])), 'too_slow');
    assert.equal(bodyVerdict(LIMITS, 10_000, at([10_000, 10_240])), 'ok');
  });

  it('judges the last window only: a fast start does not pay for a stall', () => {
    const samples = at([1_000, 5_000_000], [30_500, 5_000_000], [41_000, 5_000_000]);
    assert.equal(bodyVerdict(LIMITS, 30_500, samples.slice(0, 3)), 'ok', 'the window still holds the fast start');
    assert.equal(bodyVerdict(LIMITS, 41_000, samples), 'too_slow');
  });

  it('time the server did not wait for the client does not count', () => {
    // 10 min in all, but the server waited for bytes only 5 s of it (it was writing them out).
    assert.equal(bodyVerdict(LIMITS, 600_000, at([5_000, 100])), 'ok');
  });

  it('a body past the deadline ends, whatever its pace; no minimum means none', () => {
    assert.equal(bodyVerdict(LIMITS, 3_600_000, at([3_600_000, 1e12])), 'deadline');
    assert.equal(bodyVerdict({ ...LIMITS, minBytesPerSecond: 0 }, 100_000, at([100_000, 0])), 'ok');
  });
});

describe('upload slots', () => {
  const fakeExchange = () => {
    const listeners: Array<() => void> = [];
    const res = { once: (_event: string, listener: () => void) => listeners.push(listener) } as unknown as ServerResponse;
    return { req: {} as IncomingMessage, res, close: () => listeners.forEach((listener) => listener()) };
  };

  it('caps uploads per user and per process, once per request, and frees a slot when its answer ends', () => {
    const slots = makeUploadSlots(LIMITS);
    const a1 = fakeExchange();
    assert.equal(slots.take(a1.req, a1.res, 'a'), 'ok');
    assert.equal(slots.take(a1.req, a1.res, 'a'), 'ok', 'a request asked twice (gateway, then docs-command) holds one slot');
    const a2 = fakeExchange();
    assert.equal(slots.take(a2.req, a2.res, 'a'), 'ok');
    assert.equal(slots.take(fakeExchange().req, fakeExchange().res, 'a'), 'user_full');
    assert.equal(slots.take(fakeExchange().req, fakeExchange().res, 'b'), 'ok');
    assert.equal(slots.take(fakeExchange().req, fakeExchange().res, 'c'), 'ok');
    assert.equal(slots.inFlight(), 4);
    assert.equal(slots.take(fakeExchange().req, fakeExchange().res, 'd'), 'process_full');
    a1.close();
    assert.equal(slots.inFlight(), 3);
    assert.equal(slots.take(fakeExchange().req, fakeExchange().res, 'a'), 'ok');
  });
});

describe('descriptor budget', () => {
  it('budgets two descriptors per connection, uploads half the connections', () => {
    assert.equal(defaultMaxConnections(1024), 384);
    assert.equal(defaultMaxConnections(1_048_576), 10_000);
    const limits = httpLimitsOf({ HTTP_MAX_CONNECTIONS: '100' });
    assert.equal(limits.transfers?.maxUploads, 50);
    assert.equal(httpLimitsOf({ HTTP_MAX_UPLOADS: '7', HTTP_MAX_UPLOADS_PER_USER: '0' }).transfers?.maxUploads, 7);
    assert.throws(() => httpLimitsOf({ HTTP_MAX_UPLOADS: '-1' }), /HTTP_MAX_UPLOADS/);
  });

  it('running out of descriptors is a dependency failure (503 with Retry-After), not a bug (500)', async () => {
    assert.equal(isTransient(Object.assign(new Error('open'), { code: 'EMFILE' })), true);
    assert.equal(isTransient(Object.assign(new Error('open'), { code: 'ENFILE' })), true);
    const app = express();
    app.get('/download', () => {
      throw Object.assign(new Error("EMFILE: too many open files, open '/data/blobs/ab/abc'"), { code: 'EMFILE', errno: -24 });
    });
    app.use(errorHandler(makeLogger('test', 'silent')));
    const { server, port } = await listen(app, 0, '127.0.0.1', httpLimitsOf({}));
    try {
      const res = await fetch(`http://127.0.0.1:${port}/download`);
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '5');
      assert.deepEqual(await res.json(), { status: 'error', message: 'Service unavailable, try again later' });
    } finally {
      await closeServer(server, 100);
    }
  });
});

/** What the server wrote before it closed the connection. */
const collect = (socket: net.Socket): Promise<string> => new Promise((resolve) => {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
});

const small = (transfers: Partial<TransferLimits>): HttpLimits => ({
  ...httpLimitsOf({}), transfers: { ...LIMITS, graceMs: 300, windowMs: 600, ...transfers },
});

/** An app that reads (and counts) every body, and answers once it has all of it. */
const readingApp = (): express.Express => {
  const app = express();
  app.post('/', (req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => { bytes += chunk.length; });
    req.on('end', () => res.json({ status: 'success', bytes }));
  });
  return app;
};

describe('listen: request bodies', () => {
  it('a body trickling below the pace gets a JSON 408 and its connection closes', async () => {
    const { server, port } = await listen(readingApp(), 0, '127.0.0.1', small({}));
    const socket = net.connect(port, '127.0.0.1');
    const answer = collect(socket);
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n');
    // One byte every 50 ms: 20 B/s, far below 1 KiB/s, and never idle.
    const trickle = setInterval(() => { if (socket.writable) socket.write('x'); }, 50);
    try {
      const text = await answer;
      assert.match(text, /^HTTP\/1\.1 408 /);
      assert.match(text, /\r\nX-Content-Type-Options: nosniff\r\n/i);
      assert.deepEqual(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)), { status: 'error', message: 'Request timeout' });
    } finally {
      clearInterval(trickle);
      socket.destroy();
      await closeServer(server, 100);
    }
  });

  it('a body past the overall deadline gets a 408, however fast it goes', async () => {
    const { server, port } = await listen(readingApp(), 0, '127.0.0.1', small({ minBytesPerSecond: 0, deadlineMs: 400 }));
    const socket = net.connect(port, '127.0.0.1');
    const answer = collect(socket);
    socket.write('POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
    const chunk = `${(8192).toString(16)}\r\n${'y'.repeat(8192)}\r\n`;
    const flow = setInterval(() => { if (socket.writable) socket.write(chunk); }, 20);
    try {
      assert.match(await answer, /^HTTP\/1\.1 408 [^]*"Request timeout"/);
    } finally {
      clearInterval(flow);
      socket.destroy();
      await closeServer(server, 100);
    }
  });

  it('a body the server is not reading (its own backpressure) is not the client\'s fault', async () => {
    let release = (): void => {};
    const released = new Promise<void>((resolve) => { release = resolve; });
    const app = express();
    app.post('/', async (req, res) => {
      // Not reading: the client's bytes fill the buffers, then wait for the server.
      await released;
      let bytes = 0;
      req.on('data', (chunk: Buffer) => { bytes += chunk.length; });
      req.on('end', () => res.json({ status: 'success', bytes }));
    });
    const { server, port } = await listen(app, 0, '127.0.0.1', small({}));
    const socket = net.connect(port, '127.0.0.1');
    const answer = collect(socket);
    const total = 4 * 1024 * 1024;
    socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${total}\r\nConnection: close\r\n\r\n`);
    socket.write(Buffer.alloc(total, 0x61));
    try {
      // Held well past grace + window (counted in ticks of the server's own timer, not in wall time).
      for (let i = 0; i < 40; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      release();
      const text = await answer;
      assert.match(text, /^HTTP\/1\.1 200 /);
      assert.equal(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).bytes, total);
    } finally {
      socket.destroy();
      await closeServer(server, 100);
    }
  });

  it('uploads over the caps answer 429 (user) and 503 (process) with Retry-After, in the envelope', async () => {
    const app = express();
    const hold: Array<() => void> = [];
    app.post('/upload', uploadSlot((req) => req.get('x-user')), (_req, res) => {
      hold.push(() => res.json({ status: 'success' }));
    });
    app.use(errorHandler(makeLogger('test', 'silent')));
    const { server, port } = await listen(app, 0, '127.0.0.1', small({ maxUploads: 2, maxUploadsPerUser: 1 }));
    const post = (user: string) => fetch(`http://127.0.0.1:${port}/upload`, { method: 'POST', headers: { 'x-user': user } });
    try {
      const first = post('a');
      // The first holds its slot once the server has it.
      for (let i = 0; i < 400 && hold.length < 1; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      const mine = await post('a');
      assert.equal(mine.status, 429);
      assert.equal(mine.headers.get('retry-after'), '5');
      assert.deepEqual(await mine.json(), { status: 'error', message: 'Too many uploads in progress. Please try again later.' });
      const second = post('b');
      for (let i = 0; i < 400 && hold.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      const full = await post('c');
      assert.equal(full.status, 503);
      assert.equal(full.headers.get('retry-after'), '5');
      assert.deepEqual(await full.json(), { status: 'error', message: 'Service unavailable, try again later' });
      for (const done of hold.splice(0)) done();
      assert.equal((await first).status, 200);
      assert.equal((await second).status, 200);
      const again = post('c');
      for (let i = 0; i < 400 && hold.length < 1; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      hold.splice(0).forEach((done) => done());
      assert.equal((await again).status, 200, 'slots are given back when answers end');
    } finally {
      await closeServer(server, 100);
    }
  });
});
