// A trickling upload through the gateway's proxy (distributed mode, issue 17 item 7): the gateway
// answers the JSON 408 and the service's request is aborted with it, so neither process keeps the
// client's socket, the connection to the service or what the service opened for the body (its
// spool file, its MinIO upload). No assertion on how long anything took.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import { closeServer, httpLimitsOf, listen, makeLogger, type HttpLimits } from '@docshare/http';
import { httpUpstream } from '../src/proxy.ts';

const logger = makeLogger('proxy-transfers-test', 'silent');
const base = httpLimitsOf({});
const limits = (transfers: Partial<NonNullable<HttpLimits['transfers']>>): HttpLimits =>
  ({ ...base, transfers: { ...(base.transfers as NonNullable<HttpLimits['transfers']>), ...transfers } });

describe('gateway proxy: a body that trickles', () => {
  it('gets the gateway\'s JSON 408, and the service\'s request is aborted with it', async () => {
    let bodies = 0;
    let aborted = 0;
    const service = express();
    service.post('/api/V1/docs/api-upload', (req, res) => {
      bodies++;
      req.on('close', () => {
        if (!req.complete) aborted++;
      });
      req.resume();
      req.on('end', () => res.json({ status: 'success' }));
    });
    // The service judges no pace of its own here: the gateway is the one to cut the client.
    const upstream = await listen(service, 0, '127.0.0.1', limits({ minBytesPerSecond: 0 }));
    const gateway = express();
    gateway.post('/api/V1/docs/api-upload', httpUpstream(`http://127.0.0.1:${upstream.port}`, logger));
    const edge = await listen(gateway, 0, '127.0.0.1', limits({ graceMs: 300, windowMs: 600 }), logger);

    const socket = net.connect(edge.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write('POST /api/V1/docs/api-upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\nAAAA');
    const trickle = setInterval(() => { if (socket.writable) socket.write('A'); }, 50);
    try {
      await closed;
      const text = Buffer.concat(chunks).toString('utf8');
      assert.match(text, /^HTTP\/1\.1 408 /);
      assert.deepEqual(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)), { status: 'error', message: 'Request timeout' });
      assert.equal(bodies, 1, 'the body had reached the service');
      // Polled until the service has seen its request end (bounded by the test's own timeout).
      while (aborted === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(aborted, 1);
    } finally {
      clearInterval(trickle);
      socket.destroy();
      await closeServer(edge.server, 100);
      await closeServer(upstream.server, 100);
    }
  });
});
