// The metrics listener (METRICS_PORT): its configuration, what it serves, and that it stays up.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Gauge } from 'prom-client';
import {
  closeServer, ConfigError, HTTP_VARS, httpLimitsOf, makeLogger, makeOps, metricsListenOf, readConfig, serveMetrics,
} from '../src/index.ts';
import { raw } from './fixtures/raw-socket.ts';

const logger = makeLogger('test', 'silent');

describe('METRICS_PORT and METRICS_HOST', () => {
  it('are part of every service\'s HTTP variables: unset, no metrics listener; set, one on 127.0.0.1 unless told', () => {
    assert.equal(metricsListenOf({}), undefined);
    assert.equal(metricsListenOf({ METRICS_PORT: '' }), undefined);
    assert.deepEqual(metricsListenOf({ METRICS_PORT: '9464' }), { port: 9464, host: '127.0.0.1' });
    assert.deepEqual(metricsListenOf({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }, 8080), { port: 9464, host: '0.0.0.0' });
    assert.equal(readConfig(HTTP_VARS, {}).METRICS_PORT, undefined);
  });

  it('refuse a value that is not a port, and the service\'s own port', () => {
    for (const value of ['0', '65536', 'x', '-1', '1.5']) {
      assert.throws(() => metricsListenOf({ METRICS_PORT: value }), (error: unknown) => error instanceof ConfigError && /METRICS_PORT/.test(error.message), value);
      assert.throws(() => readConfig(HTTP_VARS, { METRICS_PORT: value }), /METRICS_PORT/, value);
    }
    assert.throws(() => metricsListenOf({ METRICS_PORT: '8080' }, 8080), /METRICS_PORT must differ/);
  });
});


describe('serveMetrics', () => {
  it('serves /metrics, /healthz and /readyz, and the JSON envelope for everything else', async () => {
    const ops = makeOps('test', {});
    new Gauge({ name: 'test_answer', help: 'The answer', registers: [ops.registry] }).set(42);
    const { server, port } = await serveMetrics(ops, { port: 0, host: '127.0.0.1' }, logger, httpLimitsOf({}));
    try {
      const base = `http://127.0.0.1:${port}`;
      const metrics = await fetch(`${base}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(metrics.headers.get('content-type') ?? '', /^text\/plain/);
      assert.match(await metrics.text(), /^test_answer 42$/m);
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
      const missing = await fetch(`${base}/api/V1/users/api-files`);
      assert.equal(missing.status, 404);
      assert.deepEqual(await missing.json(), { status: 'error', message: 'Not found' });
      assert.ok(missing.headers.get('x-request-id'));
      const post = await fetch(`${base}/metrics`, { method: 'POST' });
      assert.equal(post.status, 405);
      assert.equal(post.headers.get('allow'), 'GET, HEAD');
      assert.deepEqual(await post.json(), { status: 'error', message: 'Invalid request method' });
      // Case-sensitive like every route.
      assert.equal((await fetch(`${base}/METRICS`)).status, 404);
    } finally {
      await closeServer(server, 0);
    }
  });

  it('answers bad requests in the envelope and keeps serving', async () => {
    const ops = makeOps('test', {});
    const { server, port } = await serveMetrics(ops, { port: 0, host: '127.0.0.1' }, logger, httpLimitsOf({}));
    try {
      assert.match(await raw(port, 'GARBAGE\r\n\r\n'), /^HTTP\/1\.1 400 [^]*\{"status":"error","message":"Bad request"\}/);
      assert.match(await raw(port, `GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`), /^HTTP\/1\.1 431 /);
      assert.match(await raw(port, 'CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n'), /^HTTP\/1\.1 405 /);
      assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`)).status, 200);
    } finally {
      await closeServer(server, 0);
    }
  });

  it('bounds a scrape whose collect hangs with HTTP_REQUEST_TIMEOUT_MS (503, the envelope), and keeps serving', async () => {
    const ops = makeOps('test', {});
    let hang = true;
    new Gauge({
      name: 'test_slow', help: 'Waits for a frozen server', registers: [ops.registry],
      async collect() {
        if (hang) await new Promise(() => {});
      },
    });
    const { server, port } = await serveMetrics(ops, { port: 0, host: '127.0.0.1' }, logger, httpLimitsOf({ HTTP_REQUEST_TIMEOUT_MS: '200' }));
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(res.status, 503);
      assert.equal((await res.json() as { status: string }).status, 'error');
      hang = false;
      assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`)).status, 200);
    } finally {
      await closeServer(server, 0);
    }
  });

  it('fails to start on a port in use, leaving the caller to exit', async () => {
    const ops = makeOps('test', {});
    const first = await serveMetrics(ops, { port: 0, host: '127.0.0.1' }, logger, httpLimitsOf({}));
    try {
      await assert.rejects(serveMetrics(ops, { port: first.port, host: '127.0.0.1' }, logger, httpLimitsOf({})), /EADDRINUSE/);
    } finally {
      await closeServer(first.server, 0);
    }
  });
});
