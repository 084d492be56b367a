import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { once } from 'node:events';
import { after, describe, it } from 'node:test';
import { rateLimiterContract } from '../src/contract.ts';
import { makeRateLimiter } from '../src/index.ts';
import type { RateLimiter } from '../src/index.ts';
import { decide, eventually, freePort, recordingLogger, watchUnhandled } from './helpers.ts';

/*
 * Against a real Redis: REDIS_URL (see /root/.cache/docshare/data/stack.env or
 * docs/minio-redis.md) for the shared budget, and a redis-server of our own on a spare port for
 * the outage (it is killed and restarted; the shared one is never touched).
 */
const redisUrl = process.env.REDIS_URL;
if (redisUrl === undefined || redisUrl === '') {
  throw new Error('REDIS_URL is not set: this integration test needs a running Redis ' +
    '(e.g. `set -a; . /root/.cache/docshare/data/stack.env; set +a`)');
}

const unhandled = watchUnhandled();
const opened: RateLimiter[] = [];
const open = (...args: Parameters<typeof makeRateLimiter>): RateLimiter => {
  const rl = makeRateLimiter(...args);
  opened.push(rl);
  return rl;
};
const servers = new Set<ChildProcess>();
after(async () => {
  for (const rl of opened) await rl.close();
  for (const child of servers) child.kill('SIGKILL');
  unhandled.stop();
  assert.deepEqual(unhandled.errors, [], 'no unhandled rejection or uncaught exception');
});
// A prefix per run so runs (and other users of the shared Redis) never see each other's counts.
const prefix = (): string => `docshare-rl-test-${randomUUID()}`;

/*
 * The outage tests run a redis-server of their own, whichever stack provides REDIS_URL (under
 * testcontainers Redis is a container and nothing else has installed the binary): the project's
 * provisioning installs it here, a no-op once it is there.
 */
const provisioned = spawnSync('bash', [join(import.meta.dirname, '..', '..', '..', 'infra', 'local', 'provision.sh'), 'redis'], { stdio: 'inherit' });
if (provisioned.status !== 0) throw new Error(`infra/local/provision.sh redis failed (exit ${provisioned.status})`);

/** Starts a throwaway redis-server (no persistence) and resolves once it accepts connections. */
const startRedis = async (port: number): Promise<ChildProcess> => {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  servers.add(child);
  child.once('exit', () => servers.delete(child));
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
  });
  child.stdout?.resume();
  return child;
};
const kill = async (child: ChildProcess): Promise<void> => {
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
};

rateLimiterContract('redis', async (options) => {
  const rl = open({ ...options, redis: { url: redisUrl } });
  await eventually(() => rl.ready());
  return rl;
});

describe('rate limiter on Redis', { timeout: 60_000 }, () => {
  it('two replicas on one Redis share one budget', async () => {
    const keyPrefix = prefix();
    const a = open({ points: 5, windowSeconds: 60, keyPrefix, redis: { url: redisUrl } });
    const b = open({ points: 5, windowSeconds: 60, keyPrefix, redis: { url: redisUrl } });
    await eventually(() => a.ready());
    await eventually(() => b.ready());
    assert.equal(a.status().mode, 'redis');

    const answers: string[] = [];
    for (const rl of [a, b, a, b, a]) answers.push(await decide(rl.limiter.consume('user-7')));
    assert.deepEqual(answers, ['allowed', 'allowed', 'allowed', 'allowed', 'allowed']);
    // The 6th request is refused whichever replica gets it.
    assert.equal(await decide(b.limiter.consume('user-7')), 'refused');
    assert.equal(await decide(a.limiter.consume('user-7')), 'refused');
    // Peeking on either replica sees the shared count; another key is untouched.
    const seen = await b.limiter.get('user-7');
    assert.ok(seen);
    assert.equal(seen.remainingPoints, 0);
    assert.ok(seen.msBeforeNext > 0 && seen.msBeforeNext <= 60_000);
    assert.equal(await decide(a.limiter.consume('user-8')), 'allowed');
    assert.equal((await b.limiter.get('user-8'))?.consumedPoints, 1);
    assert.equal(a.status().fallbackDecisions + b.status().fallbackDecisions, 0, 'every decision came from Redis');
  });

  it('the memory variant counts per instance', async () => {
    const a = open({ points: 2, windowSeconds: 60 });
    const b = open({ points: 2, windowSeconds: 60 });
    for (const rl of [a, b]) {
      assert.equal(await decide(rl.limiter.consume('user-7')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('user-7')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('user-7')), 'refused');
    }
  });

  it('Redis going down: each replica keeps limiting on its own; back up: shared again', async () => {
    const port = await freePort();
    let server = await startRedis(port);
    const url = `redis://127.0.0.1:${port}`;
    const keyPrefix = prefix();
    const logger = recordingLogger();
    const a = open({ points: 4, windowSeconds: 60, keyPrefix, logger, redis: { url } });
    const b = open({ points: 4, windowSeconds: 60, keyPrefix, redis: { url } });
    await eventually(() => a.ready());
    await eventually(() => b.ready());

    // Shared: two on each replica use up the budget.
    assert.equal(await decide(a.limiter.consume('u')), 'allowed');
    assert.equal(await decide(b.limiter.consume('u')), 'allowed');
    assert.equal(await decide(a.limiter.consume('u')), 'allowed');
    assert.equal(await decide(b.limiter.consume('u')), 'allowed');
    assert.equal(await decide(a.limiter.consume('u')), 'refused');

    await kill(server);
    await eventually(() => assert.equal(a.status().mode, 'fallback'));
    await eventually(() => assert.equal(b.status().mode, 'fallback'));
    await assert.rejects(a.ready());

    // Every call still answers — no error reaches the caller — and still refuses past the limit,
    // now per replica: each one has its own budget of 4 for a key it counts from scratch.
    for (const rl of [a, b]) {
      for (let i = 0; i < 4; i++) assert.equal(await decide(rl.limiter.consume('v')), 'allowed');
      assert.equal(await decide(rl.limiter.consume('v')), 'refused');
      assert.equal((await rl.limiter.get('v'))?.consumedPoints, 5, 'peeking answers from memory too');
    }
    assert.equal(a.status().fallbackDecisions, 5);
    // Let several reconnect attempts fail (they are not logged one by one).
    await eventually(() => assert.ok(a.status().connectionErrors >= 3));

    // Back on the same port (empty: no persistence). Both replicas reconnect by themselves.
    server = await startRedis(port);
    await eventually(() => a.ready());
    await eventually(() => b.ready());
    assert.equal(a.status().mode, 'redis');
    // Shared again (the Lua script is reloaded on the new server transparently).
    assert.equal(await decide(a.limiter.consume('w')), 'allowed');
    assert.equal(await decide(b.limiter.consume('w')), 'allowed');
    assert.equal(await decide(b.limiter.consume('w')), 'allowed');
    assert.equal(await decide(a.limiter.consume('w')), 'allowed');
    assert.equal(await decide(b.limiter.consume('w')), 'refused');
    assert.equal(a.status().fallbackDecisions, 5, 'no more local decisions once Redis is back');

    // What ops see: connected, one warning for the whole outage, one line when it ends.
    const lines = logger.lines.map((line) => `${line.level}: ${line.msg}`);
    assert.deepEqual(lines, [
      'info: rate limit: connected to Redis; the limit is shared by all replicas',
      'warn: rate limit: Redis unreachable; each replica now limits on its own until it is back',
      'info: rate limit: Redis is back; the limit is shared by all replicas again',
    ]);
    const recovered = logger.lines[2]!.obj as { downMs: number; connectionErrors: number };
    assert.ok(recovered.connectionErrors >= 3);
    console.log(`# outage: ${recovered.downMs} ms, ${recovered.connectionErrors} failed reconnect attempts, logged once`);
    await kill(server);
  });

  it('a frozen Redis: a command timeout, then the connection is dropped and decisions are local', async () => {
    const port = await freePort();
    const server = await startRedis(port);
    const keyPrefix = prefix();
    const logger = recordingLogger();
    const rl = open({ points: 5, windowSeconds: 60, keyPrefix, logger, redis: { url: `redis://127.0.0.1:${port}`, commandTimeoutMs: 200 } });
    await eventually(() => rl.ready());
    assert.equal(await decide(rl.limiter.consume('s')), 'allowed');
    server.kill('SIGSTOP');
    try {
      // The connection still looks up; the command times out and the local limiter answers.
      const started = performance.now();
      assert.equal(await decide(rl.limiter.consume('s')), 'allowed');
      console.log(`# consume against a frozen Redis answered in ${(performance.now() - started).toFixed(0)} ms`);
      assert.equal(rl.status().fallbackDecisions, 1);
      await assert.rejects(rl.ready(), /timed out/);
      assert.ok(logger.lines.some((line) => line.level === 'warn' && /timed out/.test(line.msg)));
      // Replies overdue past socketTimeout: the connection is dropped and counted as down, so
      // decisions no longer wait for a timeout at all.
      await eventually(() => assert.equal(rl.status().mode, 'fallback'));
      const quick = performance.now();
      assert.equal(await decide(rl.limiter.consume('s')), 'allowed');
      console.log(`# then, with the connection counted as down: ${(performance.now() - quick).toFixed(1)} ms`);
    } finally {
      server.kill('SIGCONT');
    }
    await eventually(() => rl.ready());
    await kill(server);
  });
});
