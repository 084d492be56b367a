// RevokedUsers against a real Redis (REDIS_URL; see docs/minio-redis.md): two replicas share the
// revocations, each key expires with the JWT lifetime, and a replica whose Redis is unreachable
// keeps refusing what it revoked itself. No timed assertion.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { Redis, type RedisOptions } from 'ioredis';
import { makeLogger } from '@docshare/http';
import { makeRedisRevokedUsers } from '../src/revocations.ts';

const redisUrl = process.env.REDIS_URL;
if (redisUrl === undefined || redisUrl === '') {
  throw new Error('REDIS_URL is not set: this integration test needs a running Redis ' +
    '(e.g. `set -a; . /root/.cache/docshare/data/stack.env; set +a`)');
}

const logger = makeLogger('revocations-int-test', 'silent');
const clients: Redis[] = [];
const connect = (url: string, options: RedisOptions = {}): Redis => {
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 500, ...options });
  client.on('error', () => {});
  clients.push(client);
  return client;
};
after(async () => {
  for (const client of clients) client.disconnect();
});
/** A prefix per run, so runs (and other users of the shared Redis) never see each other's keys. */
const prefix = (): string => `docshare-revoked-test-${randomUUID()}`;
const ready = (client: Redis): Promise<unknown> => (client.status === 'ready' ? Promise.resolve() : new Promise((resolve) => client.once('ready', resolve)));

describe('RevokedUsers: Redis (real)', () => {
  it('a revocation by one replica is refused by another; the key expires with the JWT lifetime', async () => {
    const keyPrefix = prefix();
    const [one, two] = [connect(redisUrl), connect(redisUrl)];
    await Promise.all([ready(one), ready(two)]);
    const a = makeRedisRevokedUsers(one, logger, { keyPrefix, ttlSeconds: 3600 });
    const b = makeRedisRevokedUsers(two, logger, { keyPrefix, ttlSeconds: 3600, notRevokedCacheMs: 0 });
    assert.equal(await b.isRevoked(77), false);
    await a.revoke(77);
    assert.equal(await b.isRevoked(77), true);
    assert.equal(await b.isRevoked(78), false);
    const ttl = await one.ttl(`${keyPrefix}:77`);
    assert.ok(ttl > 3500 && ttl <= 3600, `ttl ${ttl}`);
  });

  it('Redis unreachable: the replica refuses what it revoked itself, lets others through, never throws', async () => {
    // Nothing listens on port 1: every command fails at once (no offline queue).
    const dead = connect('redis://127.0.0.1:1', { lazyConnect: true, retryStrategy: () => null });
    const replica = makeRedisRevokedUsers(dead, logger, { keyPrefix: prefix(), ttlSeconds: 60 });
    await replica.revoke(5);
    assert.equal(await replica.isRevoked(5), true);
    assert.equal(await replica.isRevoked(6), false);
  });
});
