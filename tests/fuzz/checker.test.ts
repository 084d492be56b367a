// The fuzz suite's own checks can fail: the response checker flags what the properties forbid,
// the raw response parser reads what servers send, and the sentinel check notices a change.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useServer } from '../support/fixture.ts';
import { checkExchange, checkResponse, newTally } from './lib/check.ts';
import type { Case } from './lib/gen.ts';
import { checkSentinel, FUZZ_WEBHOOK_ENV, makeWorld } from './lib/setup.ts';
import { exchange, parseResponses, type Wire, type WireResponse } from './lib/wire.ts';
import { createServer, type Socket } from 'node:net';

const res = (status: number, headers: Array<[string, string]>, body: string): WireResponse =>
  ({ status, reason: '', version: 'HTTP/1.1', headers: [['X-Request-Id', 'r1'], ...headers], body: Buffer.from(body), head: '' });
const JSON_CT: [string, string] = ['Content-Type', 'application/json; charset=utf-8'];
const kinds = (method: string, path: string, r: WireResponse): string[] => checkResponse(method, path, r).map(([k]) => k);

describe('fuzz response checker', () => {
  it('accepts the envelope, the HTML view page, file bytes, the OpenAPI document and HEAD', () => {
    assert.deepEqual(kinds('POST', '/api/V1/stats/api-stats', res(200, [JSON_CT], '{"status":"success","data":{}}')), []);
    assert.deepEqual(kinds('GET', '/x', res(404, [JSON_CT], '{"status":"error","message":"Not found"}')), []);
    assert.deepEqual(kinds('GET', '/docs/7', res(404, [['Content-Type', 'text/html; charset=utf-8']], '<html></html>')), []);
    assert.deepEqual(kinds('GET', '/files/7/content', res(206, [['Content-Type', 'image/png']], 'PNG')), []);
    assert.deepEqual(kinds('GET', '/api/V1/openapi.json', res(200, [JSON_CT], '{"openapi":"3.1.0"}')), []);
    assert.deepEqual(kinds('HEAD', '/api/V1/openapi.json', res(405, [JSON_CT], '')), []);
    // Routed like the server routes them: a fragment ends the path, a trailing slash is the same route.
    assert.deepEqual(kinds('GET', '/docs/7#x', res(200, [['Content-Type', 'text/html; charset=utf-8']], '<html></html>')), []);
    assert.deepEqual(kinds('GET', '/api/V1/openapi.json/', res(200, [JSON_CT], '{"openapi":"3.1.0"}')), []);
    assert.deepEqual(kinds('GET', '/api/V1/openapi.jsonx', res(200, [['Content-Type', 'text/html']], '<html></html>')), ['not-json']);
    // /metrics is never served on the public port: Prometheus text there is a violation, its 404 is the envelope.
    assert.deepEqual(kinds('GET', '/metrics', res(404, [JSON_CT], '{"status":"error","message":"Not found"}')), []);
    assert.deepEqual(kinds('GET', '/metrics', res(200, [['Content-Type', 'text/plain; version=0.0.4']], '# HELP x')), ['not-json']);
  });

  it('flags a 5xx, a body that is not the envelope, an empty 400, a leak, a status mismatch and a missing X-Request-Id', () => {
    assert.ok(kinds('POST', '/api/V1/stats/api-search', res(500, [JSON_CT], '{"status":"error","message":"Error during search"}')).includes('5xx'));
    assert.ok(kinds('POST', '/api/V1/stats/api-search', res(503, [JSON_CT], '{"status":"error","message":"Error during search"}')).includes('5xx'));
    assert.deepEqual(kinds('GET', '/healthz', { ...res(400, [], ''), headers: [] }), ['no-request-id', 'not-json']);
    assert.deepEqual(kinds('OPTIONS', '/healthz', res(200, [['Content-Type', 'text/plain']], 'GET,HEAD')), ['not-json']);
    assert.deepEqual(kinds('GET', '/x', res(200, [JSON_CT], '[1,2]')), ['not-envelope']);
    assert.deepEqual(kinds('GET', '/x', res(400, [JSON_CT], '{"status":"error"}')), ['not-envelope']);
    assert.deepEqual(kinds('GET', '/x', res(400, [JSON_CT], '{"status":"success"}')), ['status-mismatch']);
    assert.deepEqual(kinds('GET', '/x', res(400, [JSON_CT], '{"status":"error","message":"TypeError: x at f (/a/b.ts:1:2)"}')), ['leak']);
    assert.deepEqual(kinds('GET', '/files/7/content', res(403, [['Content-Type', 'text/plain']], 'Forbidden')), ['not-json']);
    assert.deepEqual(kinds('GET', '/Metrics', res(200, [['Content-Type', 'text/plain']], 'x')), ['not-json']);
  });

  it('flags a connection dropped or hung without an answer, but not one the client aborted', () => {
    const c = (mode: 'complete' | 'abort'): Case => ({ gen: 'raw', label: 'GET /', path: '/', wire: { chunks: [Buffer.from('GET / HTTP/1.1\r\n\r\n')], gapMs: 0, mode, closeAfterMs: 0, methods: ['GET'] } });
    assert.deepEqual(checkExchange(c('complete'), 0, { responses: [], end: 'closed', sentAll: true }, 1, newTally()).map((v) => v.kind), ['dropped']);
    assert.deepEqual(checkExchange(c('complete'), 0, { responses: [], end: 'timeout', sentAll: true }, 1, newTally()).map((v) => v.kind), ['hang']);
    assert.deepEqual(checkExchange(c('abort'), 0, { responses: [], end: 'closed', sentAll: true }, 1, newTally()), []);
    assert.deepEqual(checkExchange(c('complete'), 0, { responses: [], end: 'closed', sentAll: false }, 1, newTally()), []);
  });

  it('parses pipelined, chunked, 1xx and close-delimited responses', () => {
    const raw = Buffer.from([
      'HTTP/1.1 100 Continue\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
      'HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n',
      'HTTP/1.0 400 Bad Request\r\n\r\nuntil close',
    ].join(''));
    const parsed = parseResponses(raw, ['GET', 'GET', 'HEAD', 'GET'], true);
    assert.equal(parsed.error, undefined);
    assert.deepEqual(parsed.responses.map((r) => [r.status, r.body.toString()]), [[200, 'ok'], [404, 'abcde'], [200, ''], [400, 'until close']]);
    assert.match(parseResponses(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort'), ['GET'], true).error ?? '', /cut short/);
    assert.match(parseResponses(Buffer.from('garbage\r\n\r\n'), ['GET'], true).error ?? '', /not an HTTP status line/);
  });

  it('an answer cut by the server is flagged; one still arriving when an aborting client hangs up is not', async () => {
    // A server that answers every request with a 4 MiB body it sends 64 KiB at a time, and either
    // keeps sending or closes after the first part; or that answers with bytes that are no HTTP.
    let behaviour: 'slow' | 'cut' | 'garbage' = 'slow';
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
      socket.once('data', () => {
        if (behaviour === 'garbage') return void socket.end('garbage\r\n\r\n');
        socket.write(`HTTP/1.1 200 OK\r\nX-Request-Id: r1\r\nContent-Length: ${4 * 1024 * 1024}\r\n\r\n`);
        socket.write(Buffer.alloc(64 * 1024, 0x61));
        if (behaviour === 'cut') socket.end();
        else { const more = setInterval(() => (socket.destroyed ? clearInterval(more) : socket.write(Buffer.alloc(64 * 1024, 0x61))), 50); }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const wire = (mode: Wire['mode']): Wire => ({ chunks: [Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')], gapMs: 0, mode, closeAfterMs: 20, methods: ['GET'] });
    try {
      behaviour = 'cut';
      const cut = await exchange('127.0.0.1', port, wire('complete'), 10_000);
      assert.equal(cut.end, 'closed');
      assert.match(cut.garbage ?? '', /cut short/);
      behaviour = 'slow';
      const aborted = await exchange('127.0.0.1', port, wire('abort'), 10_000);
      assert.equal(aborted.end, 'aborted');
      assert.equal(aborted.garbage, undefined);
      behaviour = 'garbage';
      const garbage = await exchange('127.0.0.1', port, wire('abort'), 10_000);
      assert.match(garbage.garbage ?? '', /not an HTTP status line/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

const fx = useServer({ RATE_LIMIT_POINTS: '1000000', MAX_UPLOAD_BYTES: '65536', ...FUZZ_WEBHOOK_ENV });

describe('fuzz sentinel check', () => {
  it('passes while the sentinel is untouched and fails once its owner changes a file', async () => {
    const { sentinel } = await makeWorld(fx.c, 65_536);
    await checkSentinel(fx.c, sentinel, 2_000);
    await checkSentinel(fx.c, sentinel, 2_000);
    const r = await fx.c.update(sentinel.user.token, { id: sentinel.fileIds[0], title: 'changed by its owner' });
    assert.equal(r.status, 200, r.text);
    await assert.rejects(checkSentinel(fx.c, sentinel, 2_000), /file list changed/);
  });
});
