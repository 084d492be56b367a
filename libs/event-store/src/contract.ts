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

    it('appendUnversioned never conflicts: 200 concurrent calls on one subject, a versioned stream, all land', () =>
      withStore(async (store) => {
        const stream = freshId('unversioned-race');
        const versioned = testEvents(stream, 1, 2);
        const before = await store.lastPosition();
        await store.append(stream, 0, versioned);
        const calls = Array.from({ length: 200 }, (_, i) => [testEvent(stream, 0, { view: i }), ...(i % 10 === 0 ? [testEvent(stream, 0, { extra: i })] : [])]);

        const results = await Promise.all(calls.map((events) => store.appendUnversioned(events)));

        const read = (await store.readAll(before, 10_000))
          .filter((record) => record.event.subject === stream && record.event.streamversion === 0);
        assert.equal(read.length, 220);
        assert.equal(new Set(read.map((record) => record.position)).size, 220);
        // Each call resolves to the position of its own last event.
        const byId = new Map(read.map((record) => [record.event.id, record.position]));
        calls.forEach((events, i) => assert.equal(results[i]!.position, byId.get(events.at(-1)!.id), `call ${i}`));
        // The stream's own versions are untouched: its events only, and the next append at version 2.
        assert.deepEqual((await store.readStream(stream)).map((record) => record.event), versioned);
        assert.equal((await store.append(stream, 2, testEvents(stream, 3, 1))).version, 3);
        assert.deepEqual((await store.readStream(stream, 2)).map((record) => record.event.streamversion), [3]);
      }));

    it('unversioned events are never read by readStream, even of a stream that does not exist', () =>
      withStore(async (store) => {
        const subject = freshId('unversioned-only');
        const { position } = await store.appendUnversioned([testEvent(subject, 0), testEvent(subject, 0)]);
        assert.deepEqual(await store.readStream(subject), []);
        assert.deepEqual(await store.readStream(subject, 0), []);
        // A first append to that stream is at version 0, as to any new stream.
        await assert.rejects(store.append(subject, 1, [testEvent(subject, 2)]), isConflict(subject, 1, 0));
        const first = await store.append(subject, 0, [testEvent(subject, 1)]);
        assert.equal(first.version, 1);
        assert.ok(first.position > position);
        assert.deepEqual((await store.readStream(subject)).map((record) => record.event.streamversion), [1]);
      }));

    it('readAll interleaves unversioned events with appends in global order, and lastPosition counts them', () =>
      withStore(async (store) => {
        const stream = freshId('mixed');
        const before = await store.lastPosition();
        const a1 = testEvent(stream, 1);
        const u = [testEvent(stream, 0, { k: 1 }), testEvent(stream, 0, { k: 2 })];
        const a2 = testEvent(stream, 2);
        const u2 = testEvent(stream, 0, { k: 3 });
        const positions = [
          (await store.append(stream, 0, [a1])).position,
          (await store.appendUnversioned(u)).position,
          (await store.append(stream, 1, [a2])).position,
          (await store.appendUnversioned([u2])).position,
        ];
        assert.ok((await store.lastPosition()) >= positions[3]!);

        const read = (await store.readAll(before, 1000)).filter((record) => record.event.subject === stream);
        assert.deepEqual(read.map((record) => record.event), [a1, ...u, a2, u2]);
        assert.deepEqual([read[0]!.position, read[2]!.position, read[3]!.position, read[4]!.position], positions);
        assert.equal(read[2]!.position, read[1]!.position + 1, 'the events of one call are consecutive');
        for (let i = 1; i < read.length; i++) assert.ok(read[i]!.position > read[i - 1]!.position);
        // From inside an unversioned call on, and one event at a time.
        assert.deepEqual((await store.readAll(read[1]!.position, 1000)).filter((r) => r.event.subject === stream).map((r) => r.event), [u[1], a2, u2]);
        assert.deepEqual(await store.readAll(read[1]!.position, 1), [read[2]]);
        assert.deepEqual((await store.readStream(stream)).map((record) => record.event), [a1, a2]);
        const [newest] = await store.readAll(positions[3]! - 1, 1);
        assert.deepEqual(newest, { position: positions[3], event: u2 });
      }));

    it('appendUnversioned refuses events with a streamversion other than 0 or no subject, appending nothing', () =>
      withStore(async (store) => {
        const subject = freshId('unversioned-invalid');
        const before = await store.lastPosition();
        const refused = (error: unknown): boolean => {
          assert.ok(error instanceof Error && !(error instanceof VersionConflict), `expected a plain Error, got ${String(error)}`);
          assert.match(error.message, /appendUnversioned/);
          return true;
        };
        await assert.rejects(store.appendUnversioned([]), refused);
        await assert.rejects(store.appendUnversioned([testEvent(subject, 1)]), refused);
        await assert.rejects(store.appendUnversioned([testEvent(subject, -1)]), refused);
        await assert.rejects(store.appendUnversioned([testEvent(subject, 0), testEvent(subject, 1)]), refused);
        await assert.rejects(store.appendUnversioned([{ ...testEvent(subject, 0), streamversion: '0' as unknown as number }]), refused);
        await assert.rejects(store.appendUnversioned([testEvent('', 0)]), refused);
        await assert.rejects(store.appendUnversioned([{ ...testEvent(subject, 0), subject: undefined as unknown as string }]), refused);
        const after = await store.readAll(before, 10_000);
        assert.deepEqual(after.filter((record) => record.event.subject === subject || record.event.subject === ''), []);
        assert.deepEqual(await store.readStream(subject), []);
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
