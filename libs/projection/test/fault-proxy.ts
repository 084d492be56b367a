import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a real server that a test can break the way servers break, without
 * touching the server (other suites share it):
 *   - `forward`: passes bytes both ways (the normal state);
 *   - `freeze`: accepts and keeps connections but moves no bytes either way (a SIGSTOPped server);
 *   - `mute`: passes requests to the server but drops its answers (the request may take effect,
 *     the client never hears; `reset()` then makes it a dropped connection);
 *   - `down`: refuses new connections and resets the open ones (a killed server).
 */
export interface FaultProxy {
  /** host:port to give the client. */
  readonly address: string;
  readonly port: number;
  set(mode: 'forward' | 'freeze' | 'mute' | 'down'): void;
  /** Resets every open client connection (a server that died mid-request). */
  reset(): void;
  close(): Promise<void>;
}

export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  let mode: 'forward' | 'freeze' | 'mute' | 'down' = 'forward';
  const pairs = new Set<{ client: Socket; upstream: Socket; held: Buffer[] }>();
  let listening: Server | null = null;
  let port = 0;

  const accept = (client: Socket): void => {
    if (mode === 'down') {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    const pair = { client, upstream, held: [] as Buffer[] };
    pairs.add(pair);
    const end = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => {
      if (mode === 'freeze') pair.held.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (mode === 'forward') client.write(chunk);
      // freeze: nothing moves; mute: the answer is lost.
    });
  };

  const listen = (at: number): Promise<void> => new Promise((resolve, reject) => {
    const server = createServer(accept);
    server.once('error', reject);
    server.listen(at, '127.0.0.1', () => {
      listening = server;
      port = (server.address() as AddressInfo).port;
      resolve();
    });
  });
  await listen(0);

  return {
    get address() { return `127.0.0.1:${port}`; },
    get port() { return port; },
    set(next) {
      mode = next;
      if (next === 'down') {
        for (const pair of [...pairs]) pair.client.resetAndDestroy();
      } else if (next === 'forward') {
        for (const pair of pairs) {
          for (const chunk of pair.held.splice(0)) pair.upstream.write(chunk);
        }
      }
    },
    reset() {
      for (const pair of [...pairs]) pair.client.resetAndDestroy();
    },
    async close() {
      for (const pair of [...pairs]) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      await new Promise<void>((resolve) => (listening ? listening.close(() => resolve()) : resolve()));
    },
  };
}
