/**
 * The receiver of bench:stack's webhooks scenario: one loopback HTTP server standing for every
 * endpoint (`/ok/<i>` answers 200 at once, `/hang/<i>` holds each request until `hangUntil` has
 * passed, `/fail/<i>` answers 500). It notes the arrival time as soon as a request's headers are
 * in (before its body is read), verifies each delivery with the `standardwebhooks` library a
 * creator's receiver would use (a signature that does not verify is counted, not dropped: the
 * figure is about time), and hands what it read to the current phase's sink.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { parseDelivery, receiverPath, type Delivery, type ReceiverMode } from './webhooks-stats.ts';

export interface ReceiverCounts {
  requests: number;
  byMode: Record<ReceiverMode, number>;
  /** requests that were not a delivery (parseDelivery's reasons → count) */
  invalid: Record<string, number>;
  badSignatures: number;
  /** hang requests the client gave up on before the receiver answered (the dispatcher's timeout) */
  abandoned: number;
}

export interface Receiver {
  readonly port: number;
  url(mode: ReceiverMode, index: number): string;
  /** The secret of an endpoint, as its registration returned it (deliveries to it are verified with it). */
  setSecret(mode: ReceiverMode, index: number, secret: string): void;
  /** Epoch ms until which `/hang/*` requests are held (0: not hanging). */
  hangUntil: number;
  /** Where each delivery goes (the current phase). */
  sink: (delivery: Delivery) => void;
  readonly counts: ReceiverCounts;
  close(): Promise<void>;
}

/** Listens on `port` (0: any free one; `port` of the answer says which). */
export const startReceiver = async (port: number, host = '127.0.0.1'): Promise<Receiver> => {
  const verifiers = new Map<string, Webhook>();
  const held = new Set<http.ServerResponse>();
  const counts: ReceiverCounts = { requests: 0, byMode: { ok: 0, hang: 0, fail: 0 }, invalid: {}, badSignatures: 0, abandoned: 0 };
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const arrivalMs = Date.now();
    counts.requests += 1;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      const body = Buffer.concat(chunks).toString('utf8');
      const header = (name: string): string | undefined => {
        const value = req.headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      const delivery = parseDelivery(path, header('webhook-id'), body, arrivalMs);
      if (typeof delivery === 'string') {
        const reason = delivery.startsWith('unknown path') ? 'unknown path' : delivery;
        counts.invalid[reason] = (counts.invalid[reason] ?? 0) + 1;
        res.writeHead(404).end();
        return;
      }
      counts.byMode[delivery.mode] += 1;
      const verifier = verifiers.get(path);
      try {
        if (!verifier) throw new Error('no secret');
        verifier.verify(body, {
          'webhook-id': header('webhook-id') ?? '', 'webhook-timestamp': header('webhook-timestamp') ?? '', 'webhook-signature': header('webhook-signature') ?? '',
        }, { jsonParse: false });
      } catch {
        counts.badSignatures += 1;
      }
      receiver.sink(delivery);
      if (delivery.mode === 'fail') {
        res.writeHead(500, { 'content-type': 'text/plain' }).end('failing on purpose');
      } else if (delivery.mode === 'hang' && receiver.hangUntil > Date.now()) {
        held.add(res);
        const timer = setTimeout(() => {
          held.delete(res);
          res.writeHead(200).end();
        }, receiver.hangUntil - Date.now());
        res.once('close', () => {
          clearTimeout(timer);
          if (held.delete(res)) counts.abandoned += 1;
        });
      } else {
        res.writeHead(200).end();
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const receiver: Receiver = {
    port: bound,
    url: (mode: ReceiverMode, index: number): string => `http://${host}:${bound}${receiverPath(mode, index)}`,
    setSecret: (mode: ReceiverMode, index: number, secret: string): void => { verifiers.set(receiverPath(mode, index), new Webhook(secret)); },
    hangUntil: 0,
    sink: (_delivery: Delivery): void => undefined,
    counts,
    close: async (): Promise<void> => {
      for (const res of held) res.destroy();
      held.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return receiver;
};
