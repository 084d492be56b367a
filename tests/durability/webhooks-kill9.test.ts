// Webhook delivery under SIGKILL (issue 23): clients stream uploads and comments while every user
// has an endpoint on a local receiver; the dispatcher is killed with SIGKILL at a random moment
// (embedded: the whole `npm start` process, then restarted on the same DATA_DIR; distributed: the
// webhook-dispatcher's own process, from DATA_DIR/run/webhook-dispatcher.pid, which its supervisor
// restarts while the API keeps answering). Then every acknowledged upload and comment must reach its
// owner's receiver: at least once, counted by distinct webhook-id (a re-sent delivery carries the
// same id and the same body), each verified with `standardwebhooks`; nothing nobody did arrives.
// Twice.
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { api, DEFAULT_UPLOAD, type Api, type RegisteredUser } from '../support/client.ts';
import { expectSuccess } from '../support/expect.ts';
import { TEST_JWT_SECRET } from '../support/jwt.ts';
import { alive, localOnly, startServer, TARGET, type Server } from '../support/server.ts';
import { waitFor } from '../support/wait.ts';
import { payloadOf, startReceiver, verifyDelivery, type Receiver } from '../support/webhook-receiver.ts';

const CLIENTS = 4;
const OPS_PER_ROUND = 240;
const ROUNDS = 2;
const REQUEST_TIMEOUT_MS = 60_000;
/** After the restart the backlog goes out; on a busy machine that takes a while. */
const SETTLED = { timeoutMs: 180_000, intervalMs: 500 };

interface Fact { owner: number; type: 'file.uploaded' | 'comment.received'; key: number }
/** `type:id` of a message: the file id of an upload, the comment id of a comment. */
const factKey = (type: string, key: number): string => `${type}:${key}`;

describe('SIGKILL of the webhook dispatcher under load loses no acknowledged event', { skip: localOnly }, () => {
  let server: Server | undefined;
  let receiver: Receiver | undefined;
  let c: Api;
  const users: RegisteredUser[] = [];
  const paths: string[] = [];
  const files: Array<{ id: number; owner: number }> = [];
  /** Acknowledged facts, by `type:id`. */
  const acked = new Map<string, Fact>();
  /** Titles and comment texts of requests in flight at the kill (maybe recorded). */
  const doubtful = new Set<string>();
  /** Deliveries that did not verify on arrival (the library checks the timestamp too: verified as they come). */
  const unverified: string[] = [];

  before(async () => {
    receiver = await startReceiver();
    server = await startServer({
      JWT_SECRET: TEST_JWT_SECRET, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_RETRY_SCHEDULE: '200ms,500ms,1s,2s,5s,10s',
    });
    c = api(server);
    for (let i = 0; i < CLIENTS; i += 1) {
      const user = await c.register();
      users.push(user);
      const hookPath = `/k9/${i}/${randomBytes(4).toString('hex')}`;
      const body = expectSuccess(await c.json('POST', '/api/V1/users/api-webhooks', user.token, {
        url: receiver.url(hookPath), events: ['file.uploaded', 'comment.received'],
      }), 201);
      paths.push(hookPath);
      receiver.hook(hookPath, (d) => {
        try {
          verifyDelivery(body.secret as string, d);
        } catch (err) {
          unverified.push(`${hookPath} ${d.headers['webhook-id']}: ${String(err)}`);
        }
      });
    }
  });

  after(async () => {
    if (server !== undefined) await server.dispose();
    if (receiver !== undefined) await receiver.close();
  });

  /** The dispatcher's current pid (distributed), from the pid file its supervisor rewrites on every start. */
  const dispatcherPid = async (): Promise<number> => {
    assert.ok(server);
    const text = await readFile(path.join(server.dataDir, 'run', 'webhook-dispatcher.pid'), 'utf8');
    const pid = Number(text.trim());
    assert.ok(Number.isInteger(pid) && pid > 0, `pid file: ${JSON.stringify(text)}`);
    return pid;
  };

  /** Kills the dispatcher: the server process (embedded), or the dispatcher's process (distributed). */
  const killDispatcher = async (): Promise<number | null> => {
    assert.ok(server);
    if (TARGET === 'embedded') {
      await server.kill();
      return null;
    }
    const pid = await dispatcherPid();
    process.kill(pid, 'SIGKILL');
    return pid;
  };

  async function stream(round: number): Promise<{ ackedNow: number; ackedAtKill: number; killAt: number; errors: string[]; killedPid: Promise<number | null> }> {
    assert.ok(server);
    const base = server.baseUrl;
    const killAt = randomInt(Math.floor(OPS_PER_ROUND * 0.25), Math.floor(OPS_PER_ROUND * 0.75));
    let ackedNow = 0;
    let ackedAtKill = 0;
    let killing: Promise<number | null> | null = null;
    const kill = (): Promise<number | null> => {
      if (killing === null) ackedAtKill = ackedNow;
      return (killing ??= killDispatcher());
    };
    const ack = (): void => {
      ackedNow += 1;
      if (ackedNow >= killAt) void kill();
    };
    // Embedded: a failure after the kill is the kill's doing. Distributed: the API stays up.
    const failureExcused = (): boolean => killing !== null && TARGET === 'embedded';
    const errors: string[] = [];

    async function client(idx: number): Promise<void> {
      const user = users[idx] as RegisteredUser;
      for (let n = 0; n < OPS_PER_ROUND / CLIENTS && !failureExcused(); n += 1) {
        if (files.length === 0 || Math.random() < 0.5) {
          const title = `wk9 r${round} c${idx} n${n} ${randomBytes(4).toString('hex')}`;
          doubtful.add(title);
          const form = c.uploadForm({ ...DEFAULT_UPLOAD, title }, randomBytes(randomInt(1, 2048)), 'k9.bin', 'application/octet-stream');
          try {
            const res = await fetch(`${base}/api/V1/docs/api-upload`, {
              method: 'POST', headers: { 'X-Authorization': `Bearer ${user.token}` }, body: form, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
            });
            const text = await res.text();
            if (res.status !== 201 && res.status !== 200) {
              errors.push(`upload answered ${res.status}: ${text.slice(0, 200)}`);
              doubtful.delete(title);
              return;
            }
            const id = Number((JSON.parse(text) as { file_id: string }).file_id);
            doubtful.delete(title);
            files.push({ id, owner: idx });
            acked.set(factKey('file.uploaded', id), { owner: idx, type: 'file.uploaded', key: id });
            ack();
          } catch (err) {
            if (!failureExcused()) errors.push(`upload failed before the kill: ${String(err)}`);
            return;
          }
        } else {
          const target = files[randomInt(0, files.length)] as { id: number; owner: number };
          const text = `wk9 comment r${round} c${idx} n${n} ${randomBytes(6).toString('hex')}`;
          doubtful.add(text);
          try {
            const res = await fetch(`${base}/api/V1/docs/api-comment`, {
              method: 'POST',
              headers: { 'X-Authorization': `Bearer ${user.token}`, 'Content-Type': 'application/json' },
              body: JSON.stringify({ file_id: target.id, comment: text }),
              signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
            });
            const body = await res.text();
            if (res.status !== 201 && res.status !== 200) {
              errors.push(`comment answered ${res.status}: ${body.slice(0, 200)}`);
              doubtful.delete(text);
              return;
            }
            const id = (JSON.parse(body) as { comment_id: number }).comment_id;
            doubtful.delete(text);
            acked.set(factKey('comment.received', id), { owner: target.owner, type: 'comment.received', key: id });
            ack();
          } catch (err) {
            if (!failureExcused()) errors.push(`comment failed before the kill: ${String(err)}`);
            return;
          }
        }
      }
    }

    await Promise.all(users.map((_, i) => client(i)));
    const killedPid = kill();
    return { ackedNow, ackedAtKill, killAt, errors, killedPid };
  }

  /** Every acknowledged fact reached its owner's receiver; every delivery verifies and is about something someone did. */
  async function verify(round: number): Promise<void> {
    assert.ok(receiver);
    const rx = receiver;
    const result = await waitFor(() => {
      const seen = new Map<string, { owner: number; ids: Set<string> }>();
      for (const [owner, hookPath] of paths.entries()) {
        for (const d of rx.deliveries(hookPath)) {
          const p = payloadOf(d);
          const key = p.type === 'file.uploaded' ? Number(p.data['file_id']) : Number(p.data['comment_id']);
          const k = factKey(p.type, key);
          const entry = seen.get(k) ?? { owner, ids: new Set<string>() };
          entry.ids.add(d.headers['webhook-id'] ?? '');
          seen.set(k, entry);
        }
      }
      const missing = [...acked.entries()].filter(([k, fact]) => seen.get(k)?.owner !== fact.owner).map(([k]) => k);
      assert.deepEqual(missing.slice(0, 20), [], `round ${round}: ${missing.length} of ${acked.size} acknowledged events not delivered to their owner yet`);
      return seen;
    }, SETTLED);

    // One message per fact: a re-send carries the same webhook-id, so ids per fact stay one.
    for (const [k, entry] of result) assert.equal(entry.ids.size, 1, `${k}: delivered under several webhook-ids ${[...entry.ids].join(', ')}`);
    assert.deepEqual(unverified, [], 'every delivery verifies with standardwebhooks');
    let resent = 0;
    for (const [owner, hookPath] of paths.entries()) {
      const byId = new Map<string, string>();
      for (const d of rx.deliveries(hookPath)) {
        const p = payloadOf(d);
        assert.equal(p.data['owner_id'], users[owner]?.userId, `a delivery to user ${owner} about another user's file`);
        const id = d.headers['webhook-id'] ?? '';
        const before = byId.get(id);
        if (before !== undefined) {
          resent += 1;
          assert.equal(d.body, before, `${id}: a re-send with another body`);
        }
        byId.set(id, d.body);
        // Not acknowledged: it must have been in flight at the kill.
        const k = factKey(p.type, p.type === 'file.uploaded' ? Number(p.data['file_id']) : Number(p.data['comment_id']));
        if (!acked.has(k)) {
          const what = p.type === 'file.uploaded' ? String(p.data['title']) : String(p.data['comment']);
          assert.ok(doubtful.has(what), `round ${round}: a delivery of something nobody did: ${d.body}`);
        }
      }
    }
    console.log(`round ${round}: ${acked.size} acknowledged events delivered; ${result.size} distinct messages, ${resent} re-sent with the same webhook-id`);
  }

  for (let round = 1; round <= ROUNDS; round += 1) {
    it(`round ${round}: stream, SIGKILL the dispatcher, restart, every acknowledged event delivered`, { timeout: 15 * 60_000 }, async () => {
      assert.ok(server);
      const { ackedNow, ackedAtKill, killAt, errors, killedPid } = await stream(round);
      assert.deepEqual(errors, [], 'no request may fail before the kill');
      assert.ok(ackedNow >= killAt, `acknowledged ${ackedNow}, kill planned at ${killAt}`);
      const pid = await killedPid;
      if (TARGET === 'embedded') {
        await server.restart();
      } else {
        // The supervisor starts another dispatcher: a new pid in the file, alive.
        await waitFor(async () => {
          const now = await dispatcherPid();
          assert.ok(now !== pid && alive(now), 'the dispatcher has not been restarted yet');
          return true;
        }, { timeoutMs: 120_000, intervalMs: 200 });
      }
      console.log(`round ${round}: dispatcher killed after ${ackedAtKill} acknowledged commands (planned ${killAt}), ${ackedNow} in all; in doubt: ${doubtful.size}`);
      await verify(round);
    });
  }
});
