// The API reference page (/api/V1/docs), its static files and the index (`/`), in process.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { DOCS_ASSET_FILES, DOCS_ASSET_VERSION, indexBody, openApiDocument } from '../src/index.ts';
import { startGatewayAlone } from './gateway-alone.ts';

describe('API reference and index', () => {
  let base: string;
  let close: () => Promise<void>;
  before(async () => {
    ({ base, close } = await startGatewayAlone());
  });
  after(() => close());

  it('serves the reference page with a strict policy, loading only its own files and the document', async () => {
    const res = await fetch(`${base}/api/V1/docs`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html; charset=utf-8$/);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/, 'no inline or remote script');
    // "Try it out" calls the page's own origin (the document's server is relative): not PUBLIC_BASE_URL.
    assert.match(csp, /connect-src 'self';/);
    assert.doesNotMatch(csp, /docshare\.example\.com/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(res.headers.get('x-request-id')?.length, 36);
    assert.equal(res.headers.get('ratelimit-limit'), '1000');
    const html = await res.text();
    const refs = [...html.matchAll(/(?:src|href|data-openapi-url)="([^"]+)"/g)].map((m) => m[1] as string);
    assert.ok(refs.length >= 4, html);
    for (const ref of refs) assert.match(ref, /^\/api\/V1\//, `same-origin path: ${ref}`);
    assert.ok(refs.includes('/api/V1/openapi.json'));
    assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]/, 'no inline script');
    for (const ref of refs.filter((r) => r.includes('/assets/'))) {
      const asset = await fetch(`${base}${ref}`);
      assert.equal(asset.status, 200, ref);
      assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable', ref);
      assert.equal(asset.headers.get('x-content-type-options'), 'nosniff');
      assert.ok((await asset.arrayBuffer()).byteLength > 0, ref);
    }
  });

  it('serves every asset, gzipped when accepted, and nothing else under the assets path', async () => {
    for (const file of DOCS_ASSET_FILES) {
      const url = `${base}/api/V1/docs/assets/${DOCS_ASSET_VERSION}/${file}`;
      const plain = await fetch(url, { headers: { 'accept-encoding': 'identity' } });
      assert.equal(plain.status, 200, file);
      assert.equal(plain.headers.get('content-encoding'), null);
      const bytes = Buffer.from(await plain.arrayBuffer());
      assert.equal(Number(plain.headers.get('content-length')), bytes.length);
      const zipped = await fetch(url, { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(zipped.headers.get('content-encoding'), 'gzip', file);
      assert.deepEqual(Buffer.from(await zipped.arrayBuffer()), bytes, `${file}: same bytes once decoded`);
      assert.match(zipped.headers.get('vary') ?? '', /Accept-Encoding/);
    }
    for (const path of [`/api/V1/docs/assets/0.0.0/swagger-ui.css`, `/api/V1/docs/assets/${DOCS_ASSET_VERSION}/package.json`,
      `/api/V1/docs/assets/${DOCS_ASSET_VERSION}/..%2Fpackage.json`, `/api/V1/docs/assets/${DOCS_ASSET_VERSION}/constructor`]) {
      const res = await fetch(`${base}${path}`);
      assert.equal(res.status, 404, path);
      assert.deepEqual(await res.json(), { status: 'error', message: 'Not found' });
    }
  });

  it('answers `/` with JSON when asked for, HTML otherwise', async () => {
    const json = await fetch(`${base}/`, { headers: { accept: 'application/json' } });
    assert.equal(json.status, 200);
    assert.match(json.headers.get('content-type') ?? '', /^application\/json/);
    assert.match(json.headers.get('vary') ?? '', /Accept/);
    const body = await json.json();
    assert.deepEqual(body, indexBody());
    assert.deepEqual(body, { status: 'success', message: 'docshare API', api: '/api/V1', docs: '/api/V1/docs', openapi: '/api/V1/openapi.json', health: ['/healthz', '/readyz'] });
    // The document's example of the index is the real body.
    const doc = openApiDocument('https://docshare.example.com') as { paths: Record<string, { get: { responses: { 200: { content: Record<string, { examples: { default: { value: unknown } } }> } } } }> };
    assert.deepEqual(doc.paths['/']?.get.responses[200].content['application/json']?.examples.default.value, body);
    for (const accept of [undefined, 'text/html', '*/*', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8']) {
      const res = await fetch(`${base}/`, { headers: accept === undefined ? {} : { accept } });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/, String(accept));
      const html = await res.text();
      for (const link of ['/api/V1/docs', '/api/V1/openapi.json', '/healthz', '/readyz']) assert.ok(html.includes(`href="${link}"`), link);
      assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'; style-src 'sha256-/);
    }
  });

  it('answers other methods 405 with Allow, in the envelope', async () => {
    for (const path of ['/', '/api/V1/docs', `/api/V1/docs/assets/${DOCS_ASSET_VERSION}/swagger-ui.css`, '/api/V1/openapi.json']) {
      for (const method of ['POST', 'DELETE', 'PUT']) {
        const res = await fetch(`${base}${path}`, { method });
        assert.equal(res.status, 405, `${method} ${path}`);
        assert.equal(res.headers.get('allow'), 'GET, HEAD');
        assert.deepEqual(await res.json(), { status: 'error', message: 'Invalid request method' });
      }
      assert.equal((await fetch(`${base}${path}`, { method: 'HEAD' })).status, 200, `HEAD ${path}`);
      const options = await fetch(`${base}${path}`, { method: 'OPTIONS' });
      assert.equal(options.status, 405, `OPTIONS ${path}`);
      assert.deepEqual(await options.json(), { status: 'error', message: 'Invalid request method' });
    }
  });

  it('sends its whole answer to a GET that comes with a body it never reads', async () => {
    const { port } = new URL(base);
    const answer = await new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'GET', path: '/api/V1/openapi.json', headers: { 'content-type': 'application/json', 'content-length': 500_000 } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      // The server stops reading the body: the client's writes may fail once it closes.
      req.on('error', () => {});
      req.write('['.repeat(100_000));
    });
    assert.equal(answer.status, 200);
    assert.equal(answer.connection, 'close');
    assert.equal((JSON.parse(answer.body) as { openapi: string }).openapi, '3.1.0');
  });
});
