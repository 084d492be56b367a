// X-Internal-Token is the text extractor's credential for docs-command's internal route, sent on
// the back network only. A client that sends one through the gateway never gets it to a service,
// on any route: the gateway's proxy drops it with the hop-by-hop headers.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { makeTokens } from '@docshare/auth';
import { makeLogger, makeOps } from '@docshare/http';
import { makeGateway, ROUTES } from '../src/index.ts';
import { httpUpstream } from '../src/proxy.ts';

const tokens = makeTokens('a-test-secret-that-is-long-enough-0123456789', 3600);
const logger = makeLogger('internal-token-test', 'silent');

/** Headers of every request the fake services received. */
const received: IncomingHttpHeaders[] = [];

const listen = async (server: Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

describe('gateway: a client\'s X-Internal-Token never reaches a service', () => {
  let service: Server;
  let gateway: Server;
  let base: string;
  before(async () => {
    // Stands for docs-command and the projectors: reads the body, answers, remembers the headers.
    service = createServer((req, res) => {
      received.push(req.headers);
      req.resume();
      req.once('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"success"}'));
    });
    const serviceUrl = await listen(service);
    const upstream = httpUpstream(serviceUrl, logger);
    gateway = createServer(makeGateway({
      tokens, logger, ops: makeOps('test', {}),
      limiter: new RateLimiterMemory({ points: 1000, duration: 60 }), rateLimitPoints: 1000, rateLimitWindowSeconds: 60,
      publicBaseUrl: 'http://example.test',
      upstreams: { docs: upstream, stats: upstream, files: upstream, search: upstream },
    }));
    base = await listen(gateway);
  });
  after(async () => {
    await new Promise<void>((resolve) => gateway.close(() => resolve()));
    await new Promise<void>((resolve) => service.close(() => resolve()));
  });

  it('is dropped on every route, in any spelling; the client\'s other headers go through', async () => {
    const token = tokens.issue(7);
    for (const [i, route] of ROUTES.entries()) {
      const res = await fetch(`${base}${route.path.replace(':fileId', '1')}`, {
        method: route.method.toUpperCase(),
        headers: {
          'x-authorization': `Bearer ${token}`,
          // Header names are case-insensitive: Node hands every spelling over lower-cased.
          [i % 2 === 0 ? 'X-Internal-Token' : 'x-INTERNAL-token']: 'guessed-or-stolen',
          'x-client-note': `route ${i}`,
        },
      });
      await res.arrayBuffer();
      assert.equal(res.status, 200, `${route.method} ${route.path}`);
    }
    assert.equal(received.length, ROUTES.length, 'every route reached the service');
    for (const [i, headers] of received.entries()) {
      assert.equal(headers['x-internal-token'], undefined, `${ROUTES[i]?.method} ${ROUTES[i]?.path} forwarded X-Internal-Token`);
      assert.equal(headers['x-client-note'], `route ${i}`, 'an ordinary client header is forwarded');
    }
  });
});
