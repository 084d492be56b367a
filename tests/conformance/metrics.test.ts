// Metrics (docs/observability.md): served on the internal metrics listener (METRICS_PORT) only,
// never on the public port; each metric an operator reads moves with what it counts.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import type { RegisteredUser } from '../support/client.ts';
import { expectError, expectSuccess } from '../support/expect.ts';
import { useServer } from '../support/fixture.ts';
import { sampleOf, samplesOf, scrape, type Service } from '../support/metrics.ts';
import { localOnly, startServer, TARGET } from '../support/server.ts';
import { eventually } from '../support/wait.ts';

let user: RegisteredUser;
const fx = useServer({}, async () => {
  user = await fx.c.register();
});

const PROJECTORS: { service: Service; group: string; model: string }[] = [
  { service: 'stats-projector', group: 'stats-projector', model: 'stats' },
  { service: 'files-projector', group: 'files-projector', model: 'files' },
  { service: 'search-projector', group: 'search-projector', model: 'search' },
];

/** Sends raw bytes and returns what the server wrote before it closed the connection. */
const rawExchange = async (url: string, text: string): Promise<string> => {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  socket.write(text);
  await new Promise((resolve) => socket.on('close', resolve));
  return Buffer.concat(chunks).toString('utf8');
};

describe('metrics listener', { skip: localOnly }, () => {
  it('serves Prometheus text and /healthz; anything else is the JSON envelope, bad requests included', async () => {
    const base = fx.server.metricsUrl!;
    const res = await fetch(`${base}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await res.text();
    assert.match(text, /^# HELP http_request_duration_seconds /m);
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    const missing = await fx.c.raw('GET', `${base}/api/V1/users/api-files`);
    expectError(missing, 404, 'Not found');
    const post = await fx.c.raw('POST', `${base}/metrics`);
    expectError(post, 405, 'Invalid request method');
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
    // What Node cannot parse is answered in the envelope, and the listener (and the service) live on.
    assert.match(await rawExchange(base, 'GARBAGE\r\n\r\n'), /^HTTP\/1\.1 400 [^]*"status":"error"/);
    assert.match(await rawExchange(base, `GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`), /^HTTP\/1\.1 431 /);
    assert.equal((await fetch(`${base}/metrics`)).status, 200);
    expectSuccess(await fx.c.stats(user.token), 200);
  });

  it('counts an upload in the upload-size histogram and in the bytes stored, and a deletion out of them', async () => {
    const before = await scrape(fx.server, 'docs-command');
    const size = 5000;
    const { fileId } = await fx.c.uploadOk(user.token, {}, new Uint8Array(size).fill(7));
    const after = await scrape(fx.server, 'docs-command');
    const moved = (text: string, name: string, labels: Record<string, string> = {}): number =>
      (sampleOf(text, name, labels) ?? 0) - (sampleOf(before, name, labels) ?? 0);
    assert.equal(moved(after, 'docshare_upload_size_bytes_count'), 1);
    assert.equal(moved(after, 'docshare_upload_size_bytes_sum'), size);
    // 5000 bytes: above the 4 KiB bucket, within 16 KiB.
    assert.equal(moved(after, 'docshare_upload_size_bytes_bucket', { le: '4096' }), 0);
    assert.equal(moved(after, 'docshare_upload_size_bytes_bucket', { le: '16384' }), 1);
    assert.equal(moved(after, 'docshare_stored_bytes'), size);

    expectSuccess(await fx.c.del(user.token, fileId), 200);
    const deleted = await scrape(fx.server, 'docs-command');
    assert.equal(moved(deleted, 'docshare_stored_bytes'), 0);
    assert.equal(moved(deleted, 'docshare_upload_size_bytes_count'), 1, 'a deletion is no upload');
  });

  it('reports each projector\'s consumer lag per partition, down to 0 once it has caught up', async () => {
    await fx.c.uploadOk(user.token);
    for (const { service, group } of PROJECTORS) {
      await eventually(async () => {
        const lag = samplesOf(await scrape(fx.server, service), 'docshare_consumer_lag')
          // Distributed groups carry the instance's suffix.
          .filter((s) => s.labels.group === group || s.labels.group?.startsWith(`${group}.`));
        assert.ok(lag.length > 0, `${service}: no docshare_consumer_lag for ${group}`);
        for (const s of lag) assert.match(s.labels.partition ?? '', /^\d+$/);
        assert.deepEqual(lag.map((s) => s.value).filter((v) => v !== 0), [], `${service}: lag`);
      }, { timeoutMs: 60_000 });
    }
  });

  it('counts text extractions by format and outcome, and reports the extractor\'s consumer lag', async () => {
    /** The extractor's lag samples, once it has caught up (earlier tests' uploads are read meanwhile). */
    const caughtUp = () => eventually(async () => {
      const text = await scrape(fx.server, 'text-extractor');
      const lag = samplesOf(text, 'docshare_consumer_lag')
        .filter((s) => s.labels.group === 'text-extractor' || s.labels.group?.startsWith('text-extractor.'));
      assert.ok(lag.length > 0, 'no docshare_consumer_lag for text-extractor');
      assert.deepEqual(lag.map((s) => s.value).filter((v) => v !== 0), []);
      return text;
    }, { timeoutMs: 60_000 });
    const before = await caughtUp();
    const ok = { format: 'text', outcome: 'ok' };
    const unsupported = { format: 'unknown', outcome: 'unsupported_type' };
    await fx.c.uploadOk(user.token, {}, new TextEncoder().encode('plain words to read'), 'a.txt', 'text/plain');
    await fx.c.uploadOk(user.token, {}, new Uint8Array([0, 1, 2]), 'a.bin', 'application/octet-stream');
    await eventually(async () => {
      const after = await scrape(fx.server, 'text-extractor');
      const moved = (labels: Record<string, string>): number =>
        (sampleOf(after, 'docshare_extractions_total', labels) ?? 0) - (sampleOf(before, 'docshare_extractions_total', labels) ?? 0);
      assert.equal(moved(ok), 1);
      assert.equal(moved(unsupported), 1);
      assert.ok((sampleOf(after, 'docshare_extraction_duration_seconds_count', { format: 'text' }) ?? 0) >= 1);
    }, { timeoutMs: 60_000 });
    await caughtUp();
  });

  it('reports the generation of every read model', async () => {
    for (const { service, model } of PROJECTORS) {
      const text = await scrape(fx.server, service);
      const seconds = sampleOf(text, 'docshare_read_model_generation_timestamp_seconds', { model });
      assert.ok(seconds !== undefined && Number.isFinite(seconds) && seconds >= 0, `${service}: ${model} generation ${seconds}`);
      // The deprecated name (removed in 0.3.0): the same generation in ms.
      assert.equal(sampleOf(text, 'docshare_read_model_generation', { model }), Math.round(seconds * 1000), `${service}: ${model}`);
    }
  });

  it('serves the outbox and dead-letter metrics where they belong', async () => {
    const docs = await scrape(fx.server, 'docs-command');
    for (const name of ['docshare_upload_size_bytes', 'docshare_stored_bytes', 'docshare_bytes_stored']) assert.match(docs, new RegExp(`^# HELP ${name} `, 'm'));
    // The outbox exists in distributed mode only (embedded, the log is the bus).
    if (TARGET === 'distributed') {
      assert.ok((sampleOf(docs, 'docshare_outbox_backlog_events') ?? -1) >= 0, docs);
      assert.ok((sampleOf(docs, 'docshare_outbox_oldest_unpublished_age_seconds') ?? -1) >= 0, docs);
    }
    for (const { service } of PROJECTORS) {
      assert.match(await scrape(fx.server, service), /^# HELP docshare_dead_letters_total /m, service);
    }
  });
});

describe('without METRICS_PORT', { skip: localOnly }, () => {
  it('nothing serves /metrics on the public port', async () => {
    const server = await startServer({ METRICS_PORT: undefined });
    try {
      assert.equal(server.metricsUrl, undefined);
      const res = await fetch(`${server.baseUrl}/metrics`);
      assert.equal(res.status, 404);
      assert.deepEqual(await res.json(), { status: 'error', message: 'Not found' });
    } finally {
      await server.dispose();
    }
  });
});
