// RevokedUsers (revocations.ts): the memory list, and the Redis adapter against a fake client
// (its cache of "not revoked" answers on a clock of the test's, its own list while Redis fails).
// The real Redis: revocations.int.test.ts. No timed assertion.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import type { Logger } from '@docshare/http';
import { makeMemoryRevokedUsers, makeRedisRevokedUsers } from '../src/revocations.ts';

/** A Redis of SET/EXISTS only, counting the EXISTS it is asked; `down` makes every command fail. */
const fakeRedis = () => {
  const keys = new Map<string, { value: string; ex: number }>();
  const state = { down: false, exists: 0 };
  const redis = {
    set: async (key: string, value: string, mode: string, seconds: number) => {
      if (state.down) throw new Error('Connection is closed.');
      assert.equal(mode, 'EX');
      keys.set(key, { value, ex: seconds });
      return 'OK';
    },
    exists: async (key: string) => {
      state.exists++;
      if (state.down) throw new Error('Connection is closed.');
      return keys.has(key) ? 1 : 0;
    },
  };
  return { redis: redis as unknown as Redis, keys, state };
};

const recordingLogger = () => {
  const warnings: string[] = [];
  const logger = { warn: (_obj: object, msg: string) => void warnings.push(msg), info: () => {}, error: () => {}, debug: () => {} } as unknown as Logger;
  return { logger, warnings };
};

describe('RevokedUsers: memory', () => {
  it('refuses the users it was seeded with and those revoked since, no one else', async () => {
    const revoked = makeMemoryRevokedUsers([3]);
    assert.equal(await revoked.isRevoked(3), true);
    assert.equal(await revoked.isRevoked(4), false);
    const pending = revoked.revoke(4);
    assert.equal(revoked.has(4), true, 'at once, before the promise settles');
    await pending;
    assert.equal(await revoked.isRevoked(4), true);
    await revoked.revoke(4);
    assert.equal(await revoked.isRevoked(5), false);
  });
});

describe('RevokedUsers: Redis', () => {
  it('revoke sets <prefix>:<id> with the JWT lifetime as its expiry; every replica then refuses the user', async () => {
    const { redis, keys } = fakeRedis();
    const { logger } = recordingLogger();
    const a = makeRedisRevokedUsers(redis, logger, { keyPrefix: 'docshare-rl:revoked', ttlSeconds: 86_400 });
    const b = makeRedisRevokedUsers(redis, logger, { keyPrefix: 'docshare-rl:revoked', ttlSeconds: 86_400 });
    await a.revoke(42);
    assert.deepEqual([...keys], [['docshare-rl:revoked:42', { value: '1', ex: 86_400 }]]);
    assert.equal(await a.isRevoked(42), true);
    assert.equal(await b.isRevoked(42), true);
    assert.equal(await b.isRevoked(43), false);
  });

  it('the default key prefix is docshare-revoked', async () => {
    const { redis, keys } = fakeRedis();
    await makeRedisRevokedUsers(redis, recordingLogger().logger, { ttlSeconds: 60 }).revoke(7);
    assert.deepEqual([...keys.keys()], ['docshare-revoked:7']);
  });

  it('a "not revoked" answer is reused for less than notRevokedCacheMs, then Redis is asked again; a "revoked" one for good', async () => {
    const { redis, state } = fakeRedis();
    let now = 1_000_000;
    const { logger } = recordingLogger();
    const replica = makeRedisRevokedUsers(redis, logger, { ttlSeconds: 60, notRevokedCacheMs: 1_000, now: () => now });
    const other = makeRedisRevokedUsers(redis, logger, { ttlSeconds: 60, now: () => now });
    assert.equal(await replica.isRevoked(9), false);
    assert.equal(await replica.isRevoked(9), false);
    assert.equal(state.exists, 1, 'the second answer came from the cache');
    await other.revoke(9);
    now += 999;
    assert.equal(await replica.isRevoked(9), false, 'still the cached answer');
    now += 1;
    assert.equal(await replica.isRevoked(9), true, 'asked again once the answer is 1 s old');
    const asked = state.exists;
    assert.equal(await replica.isRevoked(9), true);
    assert.equal(state.exists, asked, 'a revoked user is kept without asking again');
  });

  it('a revocation made here is refused here at once, even before Redis has it', async () => {
    const { redis } = fakeRedis();
    const replica = makeRedisRevokedUsers(redis, recordingLogger().logger, { ttlSeconds: 60 });
    assert.equal(await replica.isRevoked(5), false);
    const pending = replica.revoke(5);
    assert.equal(await replica.isRevoked(5), true, 'the cached "not revoked" is dropped by the revocation');
    await pending;
  });

  it('Redis down: the revocations this replica made or saw are still refused, others are not, and it is logged once', async () => {
    const { redis, state } = fakeRedis();
    const { logger, warnings } = recordingLogger();
    const replica = makeRedisRevokedUsers(redis, logger, { ttlSeconds: 60 });
    const seen = makeRedisRevokedUsers(redis, logger, { ttlSeconds: 60 });
    await seen.revoke(1);
    assert.equal(await replica.isRevoked(1), true);
    state.down = true;
    await replica.revoke(2);
    assert.equal(await replica.isRevoked(1), true);
    assert.equal(await replica.isRevoked(2), true);
    assert.equal(await replica.isRevoked(3), false);
    assert.equal(await replica.isRevoked(4), false);
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0]!, /Redis failed/);
  });

  it('the cache keeps at most cacheCapacity users: the oldest are asked again', async () => {
    const { redis, state } = fakeRedis();
    const replica = makeRedisRevokedUsers(redis, recordingLogger().logger, { ttlSeconds: 60, cacheCapacity: 2, now: () => 0 });
    for (const user of [1, 2, 3]) await replica.isRevoked(user);
    assert.equal(state.exists, 3);
    await replica.isRevoked(3);
    await replica.isRevoked(2);
    assert.equal(state.exists, 3, '2 and 3 are cached');
    await replica.isRevoked(1);
    assert.equal(state.exists, 4, '1 was dropped');
  });
});
