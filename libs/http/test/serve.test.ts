// The HTTP limits' configuration and the edge's answers to what Node's parser refuses.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import { closeServer, DEFAULT_HTTP_LIMITS, defaultMaxConnections, httpLimitsOf, listen } from '../src/index.ts';
import { raw } from './fixtures/raw-socket.ts';

describe('httpLimitsOf', () => {
  it('reads every HTTP_* variable, with the documented defaults', () => {
    assert.deepEqual(httpLimitsOf({
      HTTP_HEADERS_TIMEOUT_MS: '1', HTTP_BODY_IDLE_TIMEOUT_MS: '2', HTTP_REQUEST_TIMEOUT_MS: '3',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '4', HTTP_MAX_CONNECTIONS: '5',
      HTTP_BODY_MIN_BYTES_PER_SECOND: '6', HTTP_BODY_RATE_GRACE_MS: '7', HTTP_BODY_RATE_WINDOW_MS: '8', HTTP_BODY_DEADLINE_MS: '9',
      HTTP_MAX_UPLOADS: '10', HTTP_MAX_UPLOADS_PER_USER: '11',
    }), {
      headersTimeoutMs: 1, idleTimeoutMs: 2, requestTimeoutMs: 3, keepAliveTimeoutMs: 4, maxConnections: 5,
      transfers: { minBytesPerSecond: 6, graceMs: 7, windowMs: 8, deadlineMs: 9, maxUploads: 10, maxUploadsPerUser: 11 },
    });
    const defaults = httpLimitsOf({});
    assert.equal(defaults.headersTimeoutMs, DEFAULT_HTTP_LIMITS.headersTimeoutMs);
    assert.equal(defaults.requestTimeoutMs, 30_000);
  });

  it('refuses values that are not positive integers, naming the variable', () => {
    for (const value of ['0', '-1', 'ten', '1.5']) {
      assert.throws(() => httpLimitsOf({ HTTP_HEADERS_TIMEOUT_MS: value }), /HTTP_HEADERS_TIMEOUT_MS/);
    }
  });

  it('keeps the default connection limit below the descriptor limit', () => {
    assert.equal(defaultMaxConnections(1_048_576), 10_000);
    // Two descriptors per connection (its socket, and a spool file or an upstream socket).
    assert.equal(defaultMaxConnections(1024), 384);
    assert.equal(defaultMaxConnections(100), 16);
  });
});


describe('listen', () => {
  it('answers unparseable requests, oversized headers and CONNECT in the JSON envelope, then closes', async () => {
    const { server, port } = await listen((_req, res) => res.end('ok'), 0, '127.0.0.1', httpLimitsOf({}));
    try {
      const cases: Array<[string, number, string]> = [
        ['GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', 400, 'Bad request'],
        [`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'Request header fields too large'],
        ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405, 'Invalid request method'],
      ];
      for (const [text, status, message] of cases) {
        const answer = await raw(port, text);
        assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `));
        assert.match(answer, /\r\nContent-Type: application\/json; charset=utf-8\r\n/);
        assert.match(answer, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/);
        assert.deepEqual(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), { status: 'error', message });
      }
    } finally {
      await closeServer(server, 100);
    }
  });

  it('closes a connection whose headers never end (HTTP_HEADERS_TIMEOUT_MS), answering 408 JSON', async () => {
    const limits = { ...httpLimitsOf({}), headersTimeoutMs: 200 };
    const { server, port } = await listen((_req, res) => res.end('ok'), 0, '127.0.0.1', limits);
    try {
      const socket = net.connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', () => {});
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
      const trickle = setInterval(() => { if (socket.writable) socket.write('X-A: b\r\n'); }, 50);
      await new Promise((resolve) => socket.on('close', resolve));
      clearInterval(trickle);
      const answer = Buffer.concat(chunks).toString('utf8');
      assert.match(answer, /^HTTP\/1\.1 408 /);
      assert.deepEqual(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), { status: 'error', message: 'Request timeout' });
    } finally {
      await closeServer(server, 100);
    }
  });
});
