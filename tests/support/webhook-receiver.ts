// A local webhook receiver for the black-box tests (issue 23): an HTTP server on 127.0.0.1 that
// records every delivery (path, headers, raw body, its answer) and answers per path as scripted:
// a list of answers taken in order (500, 500, 500, then the default 200; 410; 'hang', which holds
// the request open until the receiver closes). A hook per path runs before the answer, so a test can
// play a receiver that calls the API when it is told something (what it sees then is the point).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { freePort } from './server.ts';

export type Answer = number | 'hang' | { status: number; headers?: Record<string, string> };

export interface Delivery {
  path: string;
  /** Lower-case header names, as node gives them. */
  headers: Record<string, string>;
  /** The body exactly as received (what the signature covers). */
  body: string;
  /** The status answered (null: held open, 'hang'). */
  answered: number | null;
  /** Order of arrival over the whole receiver (0-based). */
  seq: number;
}

export interface Receiver {
  readonly baseUrl: string;
  /** `http://127.0.0.1:<port><path>`. */
  url(path: string): string;
  /** Answers for the next requests to `path`, in order; once spent, the default (200). */
  script(path: string, answers: readonly Answer[]): void;
  /** The default answer for `path` once its script is spent (200 unless set). */
  answerAlways(path: string, answer: Answer): void;
  /** Runs (and is awaited) for each request to `path` before it is answered. */
  hook(path: string, fn: (delivery: Delivery) => Promise<void> | void): void;
  /** Deliveries received so far (to `path`, or all). */
  deliveries(path?: string): Delivery[];
  close(): Promise<void>;
}

/** The three Standard Webhooks headers of a delivery, as `standardwebhooks` wants them. */
export const webhookHeaders = (d: Delivery): Record<string, string> => ({
  'webhook-id': d.headers['webhook-id'] ?? '',
  'webhook-timestamp': d.headers['webhook-timestamp'] ?? '',
  'webhook-signature': d.headers['webhook-signature'] ?? '',
});

/** Verifies a delivery with the `standardwebhooks` library (throws when it does not verify); returns the parsed payload. */
export const verifyDelivery = (secret: string, d: Delivery): { type: string; timestamp: string; data: Record<string, unknown> } =>
  new Webhook(secret).verify(d.body, webhookHeaders(d)) as { type: string; timestamp: string; data: Record<string, unknown> };

/** The parsed body of a delivery (no verification). */
export const payloadOf = (d: Delivery): { type: string; timestamp: string; data: Record<string, unknown> } =>
  JSON.parse(d.body) as { type: string; timestamp: string; data: Record<string, unknown> };

export async function startReceiver(): Promise<Receiver> {
  const scripts = new Map<string, Answer[]>();
  const defaults = new Map<string, Answer>();
  const hooks = new Map<string, (delivery: Delivery) => Promise<void> | void>();
  const received: Delivery[] = [];
  const held = new Set<ServerResponse>();
  const sockets = new Set<Socket>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
    const delivery: Delivery = { path, headers, body: Buffer.concat(chunks).toString('utf8'), answered: null, seq: received.length };
    const queue = scripts.get(path);
    const answer: Answer = queue !== undefined && queue.length > 0 ? (queue.shift() as Answer) : (defaults.get(path) ?? 200);
    const hook = hooks.get(path);
    if (hook !== undefined) {
      try {
        await hook(delivery);
      } catch {
        // A hook records what it saw; its failure is the test's to report, not the receiver's.
      }
    }
    received.push(delivery);
    if (answer === 'hang') {
      held.add(res);
      return;
    }
    const { status, headers: extra } = typeof answer === 'number' ? { status: answer, headers: {} } : { headers: {}, ...answer };
    delivery.answered = status;
    res.writeHead(status, { 'content-type': 'text/plain', ...extra });
    res.end(status >= 200 && status < 300 ? 'ok' : 'no');
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const baseUrl = `http://127.0.0.1:${port}`;

  return {
    baseUrl,
    url: (path) => `${baseUrl}${path}`,
    script: (path, answers) => scripts.set(path, [...answers]),
    answerAlways: (path, answer) => defaults.set(path, answer),
    hook: (path, fn) => hooks.set(path, fn),
    deliveries: (path) => (path === undefined ? [...received] : received.filter((d) => d.path === path)),
    close: async () => {
      for (const res of held) res.destroy();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
