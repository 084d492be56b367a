// A gateway in process with no service behind it (every upstream answers 500): for what the
// gateway answers itself, such as the OpenAPI document, the reference page and the index.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { makeTokens } from '@docshare/auth';
import { makeLogger, makeOps } from '@docshare/http';
import { makeGateway } from '../src/index.ts';

const unused: RequestHandler = (_req, res) => {
  res.status(500).json({ status: 'error', message: 'no service in this test' });
};

/** Listens on a free loopback port; `base` is its URL, `close` stops it. */
export const startGatewayAlone = async (): Promise<{ server: Server; base: string; close: () => Promise<void> }> => {
  const app = makeGateway({
    tokens: makeTokens('a-test-secret-that-is-long-enough-0123456789', 3600), logger: makeLogger('test', 'silent'), ops: makeOps('test', {}),
    limiter: new RateLimiterMemory({ points: 1000, duration: 60 }), rateLimitPoints: 1000, rateLimitWindowSeconds: 60,
    publicBaseUrl: 'https://docshare.example.com',
    upstreams: { docs: unused, stats: unused, files: unused, search: unused },
  });
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};
