/**
 * The chaos suite's webhook receiver and its check (issue 23): every test user registers one
 * endpoint on a receiver the suite runs on loopback, subscribed to every event type; the receiver
 * verifies each delivery's signature with the `standardwebhooks` library (what a receiver in the
 * wild uses) and keeps the distinct `webhook-id`s each user got. At the end, every message the
 * final event store makes for a user with an endpoint (the events after their first registration)
 * must have reached that user's receiver, and nothing else: kills of the dispatcher, Kafka and
 * MongoDB lose no message, and no user gets another's. A message re-sent after a crash carries the
 * same `webhook-id`, so it counts once (the re-sends are reported, not a violation).
 *
 * The pure part (events → expected messages; expected × received → violations) is tested in
 * verify.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { sleep, WEBHOOK_EVENT_TYPES, webhookMessageOf, type CloudEvent } from '@docshare/contracts';
import type { Recorder, User } from './load.ts';
import type { Event } from './verify.ts';

const REGISTERED = 'docs.webhook.registered.v1';

/**
 * The `webhook-id`s each user's endpoints must receive: the message of every event of the log that
 * makes one (webhookMessageOf), for its owner, when the owner registered an endpoint before it.
 */
export const expectedWebhookMessages = (events: readonly Event[]): Map<number, Set<string>> => {
  const since = new Map<number, number>();
  for (const e of events) {
    const owner = Number(e.data.ownerId);
    if (e.type === REGISTERED && !since.has(owner)) since.set(owner, e.position);
  }
  const expected = new Map<number, Set<string>>([...since.keys()].map((owner) => [owner, new Set<string>()]));
  for (const e of events) {
    const message = webhookMessageOf(e as unknown as CloudEvent);
    if (message === null) continue;
    const from = since.get(message.ownerId);
    if (from !== undefined && e.position > from) expected.get(message.ownerId)?.add(message.id);
  }
  return expected;
};

/** What the receiver got: per user, the distinct `webhook-id`s; and the deliveries that did not verify. */
export interface Received {
  byUser: ReadonlyMap<number, ReadonlySet<string>>;
  badSignatures: readonly string[];
}

/** Messages lost (expected, never received) and unasked for (received by a user no event of whose makes them); pure. */
export const checkWebhookDeliveries = (expected: ReadonlyMap<number, ReadonlySet<string>>, received: Received): string[] => {
  const violations: string[] = [];
  for (const [user, ids] of expected) {
    const got = received.byUser.get(user) ?? new Set<string>();
    const lost = [...ids].filter((id) => !got.has(id));
    if (lost.length > 0) violations.push(`WEBHOOK LOST: user ${user} never received ${lost.length} of ${ids.size} message(s), e.g. ${lost.slice(0, 5).join(', ')}`);
  }
  for (const [user, ids] of received.byUser) {
    const mine = expected.get(user) ?? new Set<string>();
    const unasked = [...ids].filter((id) => !mine.has(id));
    if (unasked.length > 0) violations.push(`WEBHOOK UNASKED: user ${user} received ${unasked.length} message(s) no event of theirs makes, e.g. ${unasked.slice(0, 5).join(', ')}`);
  }
  if (received.badSignatures.length > 0) {
    violations.push(`WEBHOOK SIGNATURE: ${received.badSignatures.length} delivery(ies) did not verify, e.g.\n      ${received.badSignatures.slice(0, 5).join('\n      ')}`);
  }
  return violations;
};

/** Whether every expected message has arrived (the suite waits for that, bounded). */
export const allReceived = (expected: ReadonlyMap<number, ReadonlySet<string>>, received: Received): boolean =>
  [...expected].every(([user, ids]) => [...ids].every((id) => received.byUser.get(user)?.has(id) === true));

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

/**
 * An HTTP server on 127.0.0.1 taking `POST /hooks/<userId>/<token>`: one path per registration
 * attempt (the token), so a delivery is verified with the secret of the endpoint it came from,
 * known once its registration was answered. Answers 204; anything else 404, counted as stray (on a
 * shared machine another process may probe a port it once picked: not a delivery).
 */
export class WebhookReceiver {
  private server: Server | null = null;
  private port = 0;
  private readonly secrets = new Map<string, string>();
  private readonly byUser = new Map<number, Set<string>>();
  private readonly bad: string[] = [];
  /** Every POST, re-sends included. */
  deliveries = 0;
  /** Deliveries to an endpoint whose registration answer never came (its secret unknown): counted, not verified. */
  unverified = 0;
  /** Requests that are not a POST to an endpoint of the suite (answered 404). */
  stray = 0;

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      void (async () => {
        const body = await readBody(req);
        res.writeHead(this.take(req, body) ? 204 : 404).end();
      })().catch(() => res.writeHead(500).end());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** A fresh endpoint URL for `userId`, and its token (to give its secret once known). */
  endpoint(userId: number): { url: string; token: string } {
    const token = randomBytes(6).toString('hex');
    return { url: `http://127.0.0.1:${this.port}/hooks/${userId}/${token}`, token };
  }

  knowSecret(token: string, secret: string): void { this.secrets.set(token, secret); }

  received(): Received { return { byUser: this.byUser, badSignatures: this.bad }; }

  /** Distinct messages received, all users together. */
  distinct(): number { return [...this.byUser.values()].reduce((n, ids) => n + ids.size, 0); }

  /** Records a delivery; false for a request that is not one. */
  private take(req: IncomingMessage, body: string): boolean {
    const match = /^\/hooks\/(\d+)\/([0-9a-f]+)$/.exec(req.url ?? '');
    const id = String(req.headers['webhook-id'] ?? '');
    if (req.method !== 'POST' || !match) {
      this.stray += 1;
      return false;
    }
    this.deliveries += 1;
    const secret = this.secrets.get(match[2] ?? '');
    if (secret === undefined) this.unverified += 1;
    else {
      try {
        new Webhook(secret).verify(body, {
          'webhook-id': id,
          'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
          'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
        });
      } catch (error) {
        this.bad.push(`${id} to user ${match[1]}: ${String(error)}`);
        return true;
      }
    }
    const user = Number(match[1]);
    const ids = this.byUser.get(user) ?? new Set<string>();
    ids.add(id);
    this.byUser.set(user, ids);
    return true;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/**
 * Registers one endpoint of `user` on the receiver, subscribed to every event type; retries (a new
 * request and URL each time) on a 5xx or no answer until `deadlineMs` (recorder time). An
 * attempt that failed yet was recorded leaves a second endpoint: its deliveries count all the same.
 */
export const registerWebhook = async (rec: Recorder, client: string, user: User, receiver: WebhookReceiver, deadlineMs: number): Promise<void> => {
  for (;;) {
    const { url, token } = receiver.endpoint(user.userId);
    const r = await rec.send(client, 'webhook', 'POST', '/api/V1/users/api-webhooks',
      { token: user.token, json: { url, events: [...WEBHOOK_EVENT_TYPES], description: `chaos ${client}` } }, { userId: user.userId });
    const secret = (r.json as { secret?: unknown } | undefined)?.secret;
    if (r.status === 201 && typeof secret === 'string') {
      receiver.knowSecret(token, secret);
      return;
    }
    if (r.status >= 400 && r.status < 500) throw new Error(`${client}: webhook registration refused: ${r.status} ${r.body ?? ''}`);
    if (rec.now() > deadlineMs) throw new Error(`${client}: could not register a webhook: ${r.status || r.error} ${r.body ?? ''}`);
    await sleep(500);
  }
};
