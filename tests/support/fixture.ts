// Per-file server fixture: registers before/after hooks that start and dispose a server.
import { after, before } from 'node:test';
import { api, type Api } from './client.ts';
import { startServer, type Server, type ServerEnv } from './server.ts';
import { TEST_JWT_SECRET } from './jwt.ts';

export interface Fixture {
  server: Server;
  c: Api;
}

/**
 * Start a server (JWT_SECRET known to the tests unless overridden) for the enclosing suite, then run
 * `setup`. (Root-level `before` hooks of node:test run concurrently, so put file setup here.)
 */
export function useServer(env: ServerEnv = {}, setup?: (fx: Fixture) => Promise<void>): Fixture {
  const fx = {} as Fixture;
  before(async () => {
    fx.server = await startServer({ JWT_SECRET: TEST_JWT_SECRET, ...env });
    fx.c = api(fx.server);
    if (setup !== undefined) await setup(fx);
  });
  after(async () => {
    if (fx.server !== undefined) await fx.server.dispose();
  });
  return fx;
}

export const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
