// The gateway's side of resumable uploads (issue 22): the part PUT is outside the rate limit (no
// point spent, never 429) while the four control routes are limited like any; a part PUT has no
// total deadline; it needs no token and takes no upload slot; CORS lets a browser PUT and read the
// part's ETag; wrong methods answer 405; the proxy streams a part's body unchanged (Content-Length
// kept, nothing buffered) and passes the ETag back. No timed assertion.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { makeTokens, makeUrlSigner } from '@docshare/auth';
import { M } from '@docshare/contracts';
import { closeServer, httpLimitsOf, listen, makeLogger, makeOps, type HttpLimits } from '@docshare/http';
import { httpUpstream, makeGateway, type CorsOrigins, type GatewayOptions } from '../src/index.ts';

const tokens = makeTokens('a-test-secret-that-is-long-enough-0123456789', 3600);
const logger = makeLogger('resumable-routes-test', 'silent');
const UPLOADS = '/api/V1/docs/api-uploads';
const UPLOAD_ID = '3b241101-e2bb-4255-8caf-4136c566a962';
const PART = `${UPLOADS}/${UPLOAD_ID}/parts/1?expires=1763906500&signature=abc`;
const APP = 'https://app.example';

/** An upstream that answers what it was asked, with a part's ETag on a PUT. */
const echo: RequestHandler = (req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.method === 'PUT') res.setHeader('ETag', '"part-etag"');
    res.json({ status: 'success', method: req.method, path: req.path });
  });
};

const started: Array<{ server: Server; close: () => Promise<void> }> = [];
after(async () => {
  for (const { close } of started) await close();
});

const gatewayOn = async (options: Partial<GatewayOptions> & { points?: number }, docs: RequestHandler = echo): Promise<string> => {
  const points = options.points ?? 1000;
  const app = makeGateway({
    tokens, logger, ops: makeOps('test', {}),
    limiter: new RateLimiterMemory({ points, duration: 60 }), rateLimitPoints: points, rateLimitWindowSeconds: 60,
    publicBaseUrl: 'http://example.test',
    upstreams: { docs, stats: echo, files: echo, search: echo },
    ...options,
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  started.push({ server, close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

const put = (base: string, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${base}${PART}`, { method: 'PUT', headers: { 'content-type': 'application/octet-stream', ...headers }, body: 'part bytes' });

describe('resumable upload routes at the gateway', () => {
  it('part PUTs spend no rate-limit point and are never refused, while the control routes are limited like any', async () => {
    const base = await gatewayOn({ points: 3 });
    const user = { 'x-authorization': `Bearer ${tokens.issue(11)}` };
    const first = await fetch(`${base}${UPLOADS}`, { method: 'POST', headers: user });
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('ratelimit-remaining'), '2');
    await first.arrayBuffer();
    // Parts, the user's token with them or not: no point spent, no RateLimit headers.
    for (let i = 0; i < 5; i++) {
      const res = await put(base, i % 2 === 0 ? user : {});
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('etag'), '"part-etag"');
      for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit', 'retry-after']) assert.equal(res.headers.get(name), null, name);
      await res.arrayBuffer();
    }
    const second = await fetch(`${base}${UPLOADS}/${UPLOAD_ID}`, { headers: user });
    assert.equal(second.headers.get('ratelimit-remaining'), '1', 'the parts spent nothing');
    await second.arrayBuffer();
    assert.equal((await fetch(`${base}${UPLOADS}/${UPLOAD_ID}/complete`, { method: 'POST', headers: user })).status, 200);
    // The budget is spent: every control route is refused, the parts still go through.
    for (const [method, path] of [['POST', UPLOADS], ['GET', `${UPLOADS}/${UPLOAD_ID}`], ['POST', `${UPLOADS}/${UPLOAD_ID}/complete`], ['DELETE', `${UPLOADS}/${UPLOAD_ID}`]] as const) {
      const res = await fetch(`${base}${path}`, { method, headers: user });
      assert.equal(res.status, 429, `${method} ${path}`);
      assert.deepEqual(await res.json(), { status: 'error', message: M.rateLimited });
    }
    for (let i = 0; i < 3; i++) {
      const res = await put(base, user);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: 'success', method: 'PUT', path: `${UPLOADS}/${UPLOAD_ID}/parts/1` });
    }
    // Another method on the part's path is no part: counted (and refused) like any request.
    assert.equal((await fetch(`${base}${UPLOADS}/${UPLOAD_ID}/parts/1`, { method: 'POST', headers: user })).status, 429);
  });

  it('with the link signer, only genuine current part links are outside the limit: forged ones spend the IP budget', async () => {
    const signer = makeUrlSigner('a-test-secret-that-is-long-enough-0123456789');
    const base = await gatewayOn({ points: 2, partLinks: signer });
    const path = `${UPLOADS}/${UPLOAD_ID}/parts/1`;
    const genuine = `${path}?${signer.sign(path, Math.floor(Date.now() / 1000) + 3600)}`;
    const other = `${UPLOADS}/${UPLOAD_ID}/parts/2?${signer.sign(path, Math.floor(Date.now() / 1000) + 3600)}`;
    const send = (target: string) => fetch(`${base}${target}`, { method: 'PUT', body: 'part bytes' });
    for (let i = 0; i < 4; i++) {
      const res = await send(genuine);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('ratelimit-remaining'), null);
      await res.arrayBuffer();
    }
    // A forged signature, and a genuine one moved to another part: counted, then refused.
    const counted = [await send(PART), await send(other), await send(PART)];
    assert.deepEqual(counted.map((res) => res.status), [200, 200, 429]);
    assert.equal(counted[0]!.headers.get('ratelimit-remaining'), '1');
    for (const res of counted) await res.arrayBuffer();
    // The genuine link still goes through with the budget spent.
    assert.equal((await send(genuine)).status, 200);
  });

  it('the control routes need a token; a part PUT does not (its signature is checked by docs-command)', async () => {
    const base = await gatewayOn({});
    for (const [method, path] of [['POST', UPLOADS], ['GET', `${UPLOADS}/${UPLOAD_ID}`], ['POST', `${UPLOADS}/${UPLOAD_ID}/complete`], ['DELETE', `${UPLOADS}/${UPLOAD_ID}`]] as const) {
      const res = await fetch(`${base}${path}`, { method });
      assert.equal(res.status, 401, `${method} ${path}`);
      assert.deepEqual(await res.json(), { status: 'error', message: 'Missing JWT token' });
    }
    const res = await put(base);
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  });

  it('a part PUT has no total deadline, a control route has', async () => {
    // The upstream holds the part's answer until the control request has been cut by the deadline:
    // the part started first, so its deadline (had it one) would have passed first.
    let releasePart = (): void => {};
    const partHeld = new Promise<void>((resolve) => { releasePart = resolve; });
    const docs: RequestHandler = (req, res) => {
      req.resume();
      if (req.method === 'PUT') {
        void partHeld.then(() => res.setHeader('ETag', '"late"').json({ status: 'success' }));
      }
      // Any other request is never answered: the gateway's deadline answers it.
    };
    const base = await gatewayOn({ requestTimeoutMs: 50 }, docs);
    const part = put(base);
    const control = await fetch(`${base}${UPLOADS}/${UPLOAD_ID}/complete`, { method: 'POST', headers: { 'x-authorization': `Bearer ${tokens.issue(3)}` } });
    assert.equal(control.status, 503);
    await control.arrayBuffer();
    releasePart();
    const res = await part;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('etag'), '"late"');
    assert.deepEqual(await res.json(), { status: 'success' });
  });

  it('wrong methods on the new paths answer 405 with Allow', async () => {
    const base = await gatewayOn({});
    for (const [method, path, allow] of [
      ['PUT', UPLOADS, 'POST'],
      ['PUT', `${UPLOADS}/${UPLOAD_ID}`, 'GET, HEAD, DELETE'],
      ['POST', `${UPLOADS}/${UPLOAD_ID}`, 'GET, HEAD, DELETE'],
      ['GET', `${UPLOADS}/${UPLOAD_ID}/complete`, 'POST'],
      ['GET', `${UPLOADS}/${UPLOAD_ID}/parts/1`, 'PUT'],
      ['PATCH', `${UPLOADS}/${UPLOAD_ID}/parts/1`, 'PUT'],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method, headers: { 'x-authorization': `Bearer ${tokens.issue(3)}` } });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('allow'), allow, `${method} ${path}`);
      assert.deepEqual(await res.json(), { status: 'error', message: 'Invalid request method' });
    }
  });

  it('CORS: a preflight for a part allows PUT, and the part\'s answer exposes its ETag', async () => {
    const base = await gatewayOn({ corsOrigins: [APP] satisfies CorsOrigins });
    const pre = await fetch(`${base}${PART}`, {
      method: 'OPTIONS', headers: { Origin: APP, 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'content-type' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), APP);
    const methods = (pre.headers.get('access-control-allow-methods') ?? '').split(',').map((m) => m.trim());
    assert.ok(methods.includes('PUT'), methods.join(', '));
    const headers = (pre.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim().toLowerCase());
    for (const name of ['content-type', 'idempotency-key', 'x-authorization']) assert.ok(headers.includes(name), name);
    const res = await put(base, { Origin: APP });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), APP);
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(',').map((h) => h.trim());
    assert.ok(exposed.includes('ETag'), exposed.join(', '));
    assert.equal(res.headers.get('etag'), '"part-etag"');
    await res.arrayBuffer();
  });
});

describe('resumable upload parts through the proxy (distributed mode)', () => {
  /** The transfers' defaults, but one upload in flight per user: a part must take none. */
  const base = httpLimitsOf({});
  const oneUploadPerUser: HttpLimits = { ...base, transfers: { ...(base.transfers as NonNullable<HttpLimits['transfers']>), maxUploadsPerUser: 1 } };

  it('streams a PUT body of a few MiB unchanged to docs-command, Content-Length kept, and passes the ETag back', async () => {
    const body = randomBytes(5 * 1024 * 1024 + 3);
    const half = 2 * 1024 * 1024;
    let received = 0;
    let signalHalf = (): void => {};
    const halfReceived = new Promise<void>((resolve) => { signalHalf = resolve; });
    const seen: IncomingHttpHeaders[] = [];
    const service = express();
    service.put('/api/V1/docs/api-uploads/:uploadId/parts/:partNumber', (req, res) => {
      seen.push(req.headers);
      const hash = createHash('sha256');
      req.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        received += chunk.length;
        if (received >= half) signalHalf();
      });
      req.on('end', () => {
        const etag = `"${hash.digest('hex')}"`;
        res.setHeader('ETag', etag);
        res.json({ status: 'success', message: 'Part received', part_number: Number(req.params.partNumber), etag });
      });
    });
    const upstream = await listen(service, 0, '127.0.0.1', oneUploadPerUser);
    const app = makeGateway({
      tokens, logger, ops: makeOps('test', {}),
      limiter: new RateLimiterMemory({ points: 1, duration: 60 }), rateLimitPoints: 1, rateLimitWindowSeconds: 60,
      publicBaseUrl: 'http://example.test',
      upstreams: { docs: httpUpstream(`http://127.0.0.1:${upstream.port}`, logger), stats: echo, files: echo, search: echo },
    });
    const edge = await listen(app, 0, '127.0.0.1', oneUploadPerUser, logger);
    try {
      const send = (): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> => new Promise((resolve, reject) => {
        const req = request({
          host: '127.0.0.1', port: edge.port, method: 'PUT', path: PART,
          headers: { 'content-type': 'application/octet-stream', 'content-length': String(body.length), 'x-authorization': `Bearer ${tokens.issue(4)}` },
        }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        });
        req.on('error', reject);
        // The rest is sent only once the service has seen the first part of the body: a proxy that
        // buffered the whole body before forwarding it would never get there.
        req.write(body.subarray(0, half));
        void halfReceived.then(() => req.end(body.subarray(half)));
      });
      // Two parts of one user at once: no upload slot taken (one per user here), the rate limit's one point untouched.
      const [first, second] = await Promise.all([send(), send()]);
      const etag = `"${createHash('sha256').update(body).digest('hex')}"`;
      for (const res of [first, second]) {
        assert.equal(res?.status, 200, res?.body);
        assert.equal(res?.headers.etag, etag);
        assert.equal(res?.headers['ratelimit-remaining'], undefined);
        assert.deepEqual(JSON.parse(res?.body ?? ''), { status: 'success', message: 'Part received', part_number: 1, etag });
      }
      assert.equal(seen.length, 2);
      for (const headers of seen) {
        assert.equal(headers['content-length'], String(body.length));
        assert.equal(headers['transfer-encoding'], undefined);
      }
    } finally {
      await closeServer(edge.server, 100);
      await closeServer(upstream.server, 100);
    }
  });
});
