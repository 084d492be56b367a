// The SDK's low-level request() against a hostile HTTP server: an answer's body is read up to a
// bound (64 MiB by default), whatever the server sends or declares, compressed or not, and the
// connection is cut there (issue 17, finding 9: a 400 MB answer took the CLI to 1.78 GB).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createGzip } from 'node:zlib';
import { MAX_RESPONSE_BYTES, readResponse, request, RESPONSE_TOO_LARGE, ResponseTooLargeError } from '../src/request.ts';

const MiB = 1024 * 1024;

interface Served { written: number; closed: Promise<void> }

describe('request(): a bounded answer', () => {
  let server: http.Server;
  let url = '';
  /** What the server does for the next request; each request's byte count is pushed to `served`. */
  let handler: (res: http.ServerResponse, served: Served) => void = () => {};
  const served: Served[] = [];

  before(async () => {
    server = http.createServer((_req, res) => {
      let done = (): void => {};
      const s: Served = { written: 0, closed: new Promise((resolve) => { done = resolve; }) };
      res.on('close', done);
      served.push(s);
      handler(res, s);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Writes `total` bytes of `a` (or through `via`), as fast as the client reads, until it goes away. */
  const endless = (total: number, headers: Record<string, string> = {}) => (res: http.ServerResponse, s: Served): void => {
    res.writeHead(200, { 'Content-Type': 'application/json', ...headers });
    const chunk = Buffer.alloc(MiB, 0x61);
    const pump = (): void => {
      while (!res.destroyed && s.written < total) {
        s.written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    pump();
  };

  it('an ordinary answer reads as before: status, headers, JSON and text', async () => {
    handler = (res) => res.writeHead(201, { 'Content-Type': 'application/json', 'X-Request-Id': 'r1' }).end('\ufeff{"status":"success","n":1}');
    const res = await request({ baseUrl: url, method: 'GET', path: '/x' });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('x-request-id'), 'r1');
    assert.deepEqual(res.body, { status: 'success', n: 1 });
    assert.equal(res.text, '{"status":"success","n":1}');
  });

  it('a 400 MB answer is refused once 64 MiB are read; the connection is cut there', async () => {
    served.length = 0;
    handler = endless(400 * MiB);
    const failure = await request({ baseUrl: url, method: 'GET', path: '/x' }).then(() => undefined, (e: unknown) => e);
    assert.ok(failure instanceof ResponseTooLargeError, String(failure));
    assert.equal(failure.code, RESPONSE_TOO_LARGE);
    assert.equal(failure.limit, MAX_RESPONSE_BYTES);
    assert.equal(failure.message, "the server's answer is larger than 64 MiB: refused");
    await served[0]?.closed;
    // The server stopped writing because the client cut the connection. What it got to write: what the client read, plus what the sockets' buffers held.
    const written = served[0]?.written ?? 0;
    assert.ok(written > MAX_RESPONSE_BYTES && written < MAX_RESPONSE_BYTES + 32 * MiB, `the server wrote ${written / MiB} MiB`);
  });

  it('a smaller bound is kept exactly: an answer of the bound passes, one byte more does not', async () => {
    handler = (res) => res.writeHead(200).end('x'.repeat(1000));
    assert.equal((await request({ baseUrl: url, method: 'GET', path: '/x', maxResponseBytes: 1000 })).text.length, 1000);
    await assert.rejects(request({ baseUrl: url, method: 'GET', path: '/x', maxResponseBytes: 999 }), ResponseTooLargeError);
  });

  it('a declared Content-Length over the bound is refused before the body is read', async () => {
    served.length = 0;
    handler = endless(8 * MiB, { 'Content-Length': String(8 * MiB) });
    await assert.rejects(request({ baseUrl: url, method: 'GET', path: '/x', maxResponseBytes: MiB }), ResponseTooLargeError);
    await served[0]?.closed;
  });

  it('a compressed answer is bounded by what it inflates to (a gzip bomb)', async () => {
    served.length = 0;
    handler = (res, s) => {
      res.writeHead(200, { 'Content-Encoding': 'gzip', 'Content-Type': 'application/json' });
      const gzip = createGzip();
      gzip.pipe(res);
      const zeros = Buffer.alloc(MiB);
      const pump = (): void => {
        // 100 GiB of zeros (about 100 MB gzipped): no client could hold it inflated.
        while (!res.destroyed && s.written < 100 * 1024 * MiB) {
          s.written += zeros.length;
          if (!gzip.write(zeros)) return void gzip.once('drain', pump);
        }
        gzip.end();
      };
      res.on('close', () => gzip.destroy());
      pump();
    };
    const failure = await request({ baseUrl: url, method: 'GET', path: '/x', maxResponseBytes: 4 * MiB }).then(() => undefined, (e: unknown) => e);
    assert.ok(failure instanceof ResponseTooLargeError, String(failure));
    await served[0]?.closed;
  });

  it('readResponse() takes the bound too', async () => {
    const body = new Response('y'.repeat(2048));
    await assert.rejects(readResponse(body, 1024), (e: unknown) => e instanceof ResponseTooLargeError && e.limit === 1024 && /1024 bytes/.test(e.message));
  });
});
