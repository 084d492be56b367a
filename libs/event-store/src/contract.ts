import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { testEvent, testEvents } from '@docshare/contracts/testing';
import { VersionConflict } from './port.ts';
import type { EventStore } from './port.ts';

// Every stream and id kind gets a random suffix so the suite can run against a shared server.
const freshId = (label: string): string => `contract-${label}-${randomUUID()}`;

const isConflict = (streamId: string, expected: number, actual: number) => (error: unknown): boolean => {
  assert.ok(error instanceof VersionConflict, `expected VersionConflict, got ${String(error)}`);
  assert.equal(error.streamId, streamId);
  assert.equal(error.expected, expected);
  assert.equal(error.actual, actual);
  return true;
};

/** The behaviour every EventStore adapter must show; `make` returns a fresh, open store. */
export const eventStoreContract = (name: string, make: () => Promise<EventStore>): void => {
  const withStore = async (test: (store: EventStore) => Promise<void>): Promise<void> => {
    const store = await make();
    try {
      await test(store);
    } finally {
      await store.close();
    }
  };

  describe(`EventStore contract: ${name}`, () => {
    it('reads back an appended stream unchanged, in order', () =>
      withStore(async (store) => {
        const stream = freshId('roundtrip');
        const first = testEvents(stream, 1, 2);
        first[0] = testEvent(stream, 1, { nested: { list: [1, 'two', null], flag: true }, text: 'é ✓ "quoted"\nline' });
        const second = testEvents(stream, 3, 1);

        assert.equal((await store.append(stream, 0, first)).version, 2);
        const result = await store.append(stream, 2, second);

        const read = await store.readStream(stream);
        assert.deepEqual(read.map((record) => record.event), [...first, ...second]);
        assert.equal(result.version, 3);
        assert.equal(result.position, read[2]?.position);
        for (let i = 1; i < read.length; i++) assert.ok(read[i]!.position > read[i - 1]!.position);
      }));

    it('readStream returns only the events after afterVersion', () =>
      withStore(async (store) => {
        const stream = freshId('after');
        const events = testEvents(stream, 1, 4);
        await store.append(stream, 0, events);

        assert.deepEqual((await store.readStream(stream, 2)).map((record) => record.event), events.slice(2));
        assert.deepEqual(await store.readStream(stream, 4), []);
        assert.deepEqual((await store.readStream(stream, 0)).map((record) => record.event), events);
      }));

    it('readStream of an unknown stream is empty', () =>
      withStore(async (store) => {
        assert.deepEqual(await store.readStream(freshId('unknown')), []);
      }));

    it('a new stream can only be appended to at expected version 0', () =>
      withStore(async (store) => {
        const stream = freshId('new');
        await assert.rejects(store.append(stream, 1, [testEvent(stream, 2)]), isConflict(stream, 1, 0));
        assert.deepEqual(await store.readStream(stream), []);

        assert.equal((await store.append(stream, 0, [testEvent(stream, 1)])).version, 1);
      }));

    it('an append at the wrong expected version throws VersionConflict and appends nothing', () =>
      withStore(async (store) => {
        const stream = freshId('conflict');
        const original = testEvents(stream, 1, 2);
        await store.append(stream, 0, original);

        await assert.rejects(store.append(stream, 1, testEvents(stream, 2, 2)), isConflict(stream, 1, 2));
        await assert.rejects(store.append(stream, 3, testEvents(stream, 4, 1)), isConflict(stream, 3, 2));

        assert.deepEqual((await store.readStream(stream)).map((record) => record.event), original);
        assert.equal((await store.append(stream, 2, testEvents(stream, 3, 1))).version, 3);
      }));

    it('of two concurrent appends at the same expected version exactly one wins', () =>
      withStore(async (store) => {
        const stream = freshId('race');
        await store.append(stream, 0, [testEvent(stream, 1)]);
        const contenders = [testEvents(stream, 2, 2), testEvents(stream, 2, 1)];

        const results = await Promise.allSettled(contenders.map((events) => store.append(stream, 1, events)));

        const winners = results.flatMap((result, i) => (result.status === 'fulfilled' ? [i] : []));
        assert.equal(winners.length, 1);
        const loser = results.find((result) => result.status === 'rejected');
        assert.ok(loser?.reason instanceof VersionConflict, `loser got ${String(loser?.reason)}`);
        assert.equal(loser.reason.expected, 1);
        const read = await store.readStream(stream, 1);
        assert.deepEqual(read.map((record) => record.event), contenders[winners[0]!]);
      }));

    it('rejects events whose subject or streamversion do not match, appending nothing', () =>
      withStore(async (store) => {
        const stream = freshId('invalid');
        await assert.rejects(store.append(stream, 0, [testEvent(freshId('other'), 1)]), (error) => !(error instanceof VersionConflict));
        await assert.rejects(store.append(stream, 0, [testEvent(stream, 1), testEvent(stream, 3)]), (error) => !(error instanceof VersionConflict));
        await assert.rejects(store.append(stream, 0, [testEvent(stream, 2)]), (error) => !(error instanceof VersionConflict));
        assert.deepEqual(await store.readStream(stream), []);
      }));

    it('readAll returns every stream\'s events in global order after a position', () =>
      withStore(async (store) => {
        const [a, b] = [freshId('all-a'), freshId('all-b')];
        const before = await store.lastPosition();
        const a1 = testEvent(a, 1);
        const b1 = testEvent(b, 1);
        const a2 = testEvents(a, 2, 2);
        const positions = [
          (await store.append(a, 0, [a1])).position,
          (await store.append(b, 0, [b1])).position,
          (await store.append(a, 1, a2)).position,
        ];
        const ours = (records: StoredEvent<CloudEvent>[]) => records.filter((r) => r.event.subject === a || r.event.subject === b);

        const read = ours(await store.readAll(before, 1000));
        assert.deepEqual(read.map((record) => record.event), [a1, b1, ...a2]);
        for (let i = 1; i < read.length; i++) assert.ok(read[i]!.position > read[i - 1]!.position);
        assert.deepEqual([read[0]?.position, read[1]?.position, read[3]?.position], positions);
        assert.ok(read[0]!.position > before);

        assert.deepEqual(ours(await store.readAll(positions[0]!, 1000)).map((record) => record.event), [b1, ...a2]);
        assert.deepEqual(ours(await store.readAll(positions[2]!, 1000)), []);
      }));

    it('readAll returns at most limit events', () =>
      withStore(async (store) => {
        const stream = freshId('limit');
        const before = await store.lastPosition();
        await store.append(stream, 0, testEvents(stream, 1, 5));

        const page = await store.readAll(before, 2);
        assert.equal(page.length, 2);
        assert.ok(page[0]!.position > before && page[1]!.position > page[0]!.position);
        assert.deepEqual(page, (await store.readAll(before, 1000)).slice(0, 2));
      }));

    it('lastPosition is the position of the newest event', () =>
      withStore(async (store) => {
        const stream = freshId('last');
        const events = testEvents(stream, 1, 3);
        const { position } = await store.append(stream, 0, events);

        assert.ok((await store.lastPosition()) >= position);
        const [newest] = await store.readAll(position - 1, 1);
        assert.equal(newest?.position, position);
        assert.deepEqual(newest?.event, events[2]);
      }));

    it('nextId gives 200 concurrent callers distinct ids', () =>
      withStore(async (store) => {
        const kind = freshId('ids');
        const ids = await Promise.all(Array.from({ length: 200 }, () => store.nextId(kind)));

        for (const id of ids) assert.ok(Number.isSafeInteger(id) && id > 0, `bad id ${id}`);
        assert.equal(new Set(ids).size, 200);
        const more = await store.nextId(kind);
        assert.ok(!ids.includes(more));
      }));

    it('nextId sequences are independent per kind', () =>
      withStore(async (store) => {
        const [busy, quiet, fresh] = [freshId('kind-busy'), freshId('kind-quiet'), freshId('kind-fresh')];
        const firstQuiet = await store.nextId(quiet);
        const busyIds = await Promise.all(Array.from({ length: 150 }, () => store.nextId(busy)));
        const firstFresh = await store.nextId(fresh);

        // Another kind consuming ids does not move a kind's sequence: fresh kinds start alike.
        assert.equal(firstFresh, firstQuiet);
        assert.equal(new Set(busyIds).size, 150);
        assert.notEqual(await store.nextId(quiet), firstQuiet);
      }));
  });
};
