import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { EVENT_SOURCE, type CloudEvent, type StoredEvent } from '@docshare/contracts';
import { makeLogBus } from '@docshare/event-bus';
import { openFileEventLog } from '@docshare/event-store';
import { openingConsumer, sealingEventStore } from '../src/decorators.ts';
import { REDACTED } from '../src/fields.ts';
import { parseKek } from '../src/kek.ts';
import { makeMemoryKeyStore } from '../src/memory-key-store.ts';
import { makePersonalData } from '../src/personal-data.ts';

/*
 * Where sealing and opening happen (design §1): docs-command appends through sealingEventStore, so
 * the log (and what the relay publishes from it) holds only sealed values; every consumer reads
 * through openingConsumer, so projections and deciders see plain values, or REDACTED once erased.
 */

const root = await mkdtemp(join(tmpdir(), 'docshare-pd-decorators-'));
after(async () => {
  await rm(root, { recursive: true, force: true });
});
let dirs = 0;

const registered = (userId: number, name: string, streamversion = 1): CloudEvent => ({
  specversion: '1.0', id: randomUUID(), source: EVENT_SOURCE, type: 'docs.user.registered.v1', time: '2026-01-01T00:00:00.000Z',
  subject: `user-${userId}`, datacontenttype: 'application/json',
  data: { userId, name, email: `${name.toLowerCase()}@example.com`, registeredAt: 't' },
  correlationid: 'c', causationid: 'c', streamversion,
});
const viewed = (fileId: number): CloudEvent => ({
  specversion: '1.0', id: randomUUID(), source: EVENT_SOURCE, type: 'docs.file.viewed.v2', time: '2026-01-01T00:00:00.000Z',
  subject: `file-${fileId}`, datacontenttype: 'application/json', data: { fileId, ownerId: 1, viewer: 'u:2', viewedAt: 't' },
  correlationid: 'c', causationid: 'c', streamversion: 0,
});

const setup = async () => {
  const dir = join(root, `log-${++dirs}`);
  const raw = await openFileEventLog(dir);
  const pd = makePersonalData({ store: makeMemoryKeyStore(), kek: parseKek(`k1:${randomBytes(32).toString('base64url')}`) });
  return { dir, raw, pd, store: sealingEventStore(raw, pd) };
};
const nameOf = (record: StoredEvent<CloudEvent> | undefined): unknown => (record?.event.data as { name?: unknown } | undefined)?.name;

describe('sealingEventStore', () => {
  it('writes sealed events (no plain value in the log file) and reads them opened', async () => {
    const { dir, raw, pd, store } = await setup();
    const mark = `Marker${randomUUID().slice(0, 8)}`;
    await store.append('user-1', 0, [registered(1, mark)]);
    await store.appendUnversioned([viewed(3)]);
    await store.append('user-2', 0, [registered(2, 'Bob')]);

    assert.equal((await readFile(join(dir, 'events.log'), 'utf8')).includes(mark), false);
    const rawAll = await raw.readAll(0, 10);
    assert.equal(rawAll[0]?.event.personaldata, 'v1');
    assert.match(String(nameOf(rawAll[0])), /^pd1\./);
    assert.equal(rawAll[1]?.event.personaldata, undefined);

    const all = await store.readAll(0, 10);
    assert.deepEqual(all.map(nameOf), [mark, undefined, 'Bob']);
    assert.equal(all[0]?.event.personaldata, undefined);
    assert.deepEqual((await store.readStream('user-1')).map(nameOf), [mark]);
    assert.equal(await store.lastPosition(), 3);

    await pd.destroy(1);
    assert.deepEqual((await store.readAll(0, 10)).map(nameOf), [REDACTED, undefined, 'Bob']);
    assert.deepEqual((await store.readStream('user-1')).map(nameOf), [REDACTED]);
    await store.close();
  });
});

describe('openingConsumer', () => {
  it('hands subscribers (one by one and in batches) the opened events, redacted once the key is destroyed', async () => {
    const { raw, pd, store } = await setup();
    const bus = makeLogBus(raw);
    const consumer = openingConsumer(bus, pd);
    const single: unknown[] = [];
    const batched: unknown[] = [];
    const subscriptions = [
      await consumer.subscribe('single', async (record) => {
        single.push(nameOf(record));
      }),
      await consumer.subscribeBatches('batched', async (batch) => {
        batched.push(...batch.records.map(nameOf));
      }),
    ];
    await store.append('user-1', 0, [registered(1, 'Ann')]);
    const { position } = await store.append('user-2', 0, [registered(2, 'Bob')]);
    assert.equal(await bus.waitForGroups(position, 30_000), true);
    await pd.destroy(2);
    const last = await store.append('user-2', 1, [registered(2, 'Bob again', 2)]);
    assert.equal(await bus.waitForGroups(last.position, 30_000), true);
    assert.deepEqual(single, ['Ann', 'Bob', REDACTED]);
    assert.deepEqual(batched, ['Ann', 'Bob', REDACTED]);
    // A group subscribing now replays the log (a rebuild): Bob's earlier event reads redacted too.
    const replayed: unknown[] = [];
    subscriptions.push(await consumer.subscribeBatches('replay', async (batch) => {
      replayed.push(...batch.records.map(nameOf));
    }));
    assert.equal(await bus.waitForGroups(last.position, 30_000), true);
    assert.deepEqual(replayed, ['Ann', REDACTED, REDACTED]);
    await Promise.all(subscriptions.map((s) => s.stop()));
    await store.close();
  });
});
