import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DocshareError } from '@docshare/contracts';
import { openFileEventLog, VersionConflict } from '@docshare/event-store';
import { makeCommandHandler, type Decider } from '../src/commands/command-handler.ts';

type Counter = { n: number };
type Bumped = { type: 'test.bumped.v1'; data: { to: number } };
const counter: Decider<{ by: number }, Counter, Bumped> = {
  initialState: () => ({ n: 0 }),
  evolve: (_s, e) => ({ n: e.data.to }),
  decide: (c, s) => [{ type: 'test.bumped.v1', data: { to: s.n + c.by } }],
};
const meta = { requestId: 'req-1' };
const NOW = '2026-11-20T00:00:00.000Z';

describe('command handler', () => {
  it('decides again on a concurrent append, so no update is lost', async () => {
    const store = await openFileEventLog(await mkdtemp(join(tmpdir(), 'handler-')));
    const a = makeCommandHandler(store);
    const b = makeCommandHandler(store);
    await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).handle(counter, 'counter-1', { by: 1 }, NOW, meta)));
    const { state, version } = await a.load(counter, 'counter-1');
    assert.deepEqual(state, { n: 10 });
    assert.equal(version, 10);
    await store.close();
  });

  it('wraps each event in the CloudEvents envelope with stream version and correlation', async () => {
    const store = await openFileEventLog(await mkdtemp(join(tmpdir(), 'handler-')));
    const handler = makeCommandHandler(store);
    const { events, position } = await handler.handle(counter, 'counter-2', { by: 3 }, NOW, { requestId: 'r2', correlationId: 'c2' });
    assert.equal(position, 1);
    const [event] = events;
    assert.ok(event);
    assert.equal(event.specversion, '1.0');
    assert.match(event.id, /^[0-9a-f-]{36}$/);
    assert.equal(event.subject, 'counter-2');
    assert.equal(event.streamversion, 1);
    assert.equal(event.time, NOW);
    assert.equal(event.correlationid, 'c2');
    assert.equal(event.causationid, 'r2');
    assert.deepEqual((await store.readStream('counter-2'))[0]?.event, event);
    await store.close();
  });

  it('sees events another writer appended since its cached fold', async () => {
    const store = await openFileEventLog(await mkdtemp(join(tmpdir(), 'handler-')));
    const a = makeCommandHandler(store);
    const b = makeCommandHandler(store);
    await a.handle(counter, 'counter-3', { by: 1 }, NOW, meta);
    await b.handle(counter, 'counter-3', { by: 5 }, NOW, meta);
    assert.deepEqual((await a.handle(counter, 'counter-3', { by: 1 }, NOW, meta)).state, { n: 7 });
    await store.close();
  });

  it('retries a conflict on a fresh fold up to maxAttempts, then answers "try again" (503) and records nothing', async () => {
    const store = await openFileEventLog(await mkdtemp(join(tmpdir(), 'handler-')));
    let appends = 0;
    // Another writer wins every race: each append finds the stream one version further.
    const contended: typeof store = Object.assign(Object.create(store) as typeof store, {
      append: async (streamId: string, expected: number, _events: Parameters<typeof store.append>[2]) => {
        appends++;
        throw new VersionConflict(streamId, expected, expected + 1);
      },
    });
    const handler = makeCommandHandler(contended, { maxAttempts: 3 });
    await assert.rejects(handler.handle(counter, 'counter-9', { by: 1 }, NOW, meta), (error: unknown) =>
      error instanceof DocshareError && error.kind === 'unavailable' && /Too many concurrent changes/.test(error.message));
    // The optimistic try on the empty fold, then three on the stream as read.
    assert.equal(appends, 4);
    assert.deepEqual(await store.readStream('counter-9'), []);
    await store.close();
  });

  it('answers a conflict that clears within maxAttempts with the appended result', async () => {
    const store = await openFileEventLog(await mkdtemp(join(tmpdir(), 'handler-')));
    let conflicts = 2;
    const flaky: typeof store = Object.assign(Object.create(store) as typeof store, {
      append: async (streamId: string, expected: number, events: Parameters<typeof store.append>[2]) => {
        if (conflicts-- > 0) throw new VersionConflict(streamId, expected, expected);
        return store.append(streamId, expected, events);
      },
    });
    const { state, position } = await makeCommandHandler(flaky, { maxAttempts: 3 }).handle(counter, 'counter-10', { by: 2 }, NOW, meta);
    assert.deepEqual(state, { n: 2 });
    assert.equal(position, 1);
    await store.close();
  });

  /** The file log, counting the reads of a stream. */
  const countingStore = async () => {
    const store = await openFileEventLog(await mkdtemp(join(tmpdir(), 'handler-')));
    const reads = { count: 0 };
    const readStream = store.readStream.bind(store);
    store.readStream = (...args: Parameters<typeof readStream>) => {
      reads.count++;
      return readStream(...args);
    };
    return { store, reads };
  };

  it('decides on its cached fold without reading the stream, when nobody appended since', async () => {
    const { store, reads } = await countingStore();
    const handler = makeCommandHandler(store);
    await handler.handle(counter, 'counter-4', { by: 1 }, NOW, meta);
    const first = reads.count;
    await handler.handle(counter, 'counter-4', { by: 1 }, NOW, meta);
    await handler.handle(counter, 'counter-4', { by: 1 }, NOW, meta);
    assert.equal(reads.count, first, 'no read for a cached stream');
    assert.deepEqual((await makeCommandHandler(store).load(counter, 'counter-4')).state, { n: 3 });
    await store.close();
  });

  it('creates a stream it has not seen without reading it, and reads one that exists after its append is refused', async () => {
    const { store, reads } = await countingStore();
    const a = makeCommandHandler(store);
    await a.handle(counter, 'counter-6', { by: 2 }, NOW, meta);
    assert.equal(reads.count, 0, 'a new stream is not read');
    const b = makeCommandHandler(store); // has not seen counter-6: takes it for empty, its append at 0 is refused
    const { state, events } = await b.handle(counter, 'counter-6', { by: 1 }, NOW, meta);
    assert.deepEqual(state, { n: 3 });
    assert.equal(events[0]?.streamversion, 2);
    assert.equal(reads.count, 1);
    await store.close();
  });

  it('a refusal or a no-op decided on the cached fold is decided again on a fresh read', async () => {
    type Set = { type: 'test.set.v1'; data: { to: number } };
    // Refuses to go above 1; records nothing for a value it already has.
    const setter: Decider<{ to: number }, Counter, Set> = {
      initialState: () => ({ n: 0 }),
      evolve: (_s, e) => ({ n: e.data.to }),
      decide: (c, s) => {
        if (s.n === c.to) return [];
        if (s.n >= 1 && c.to > 1) throw new Error('refused');
        return [{ type: 'test.set.v1', data: { to: c.to } }];
      },
    };
    const store = await openFileEventLog(await mkdtemp(join(tmpdir(), 'handler-')));
    const a = makeCommandHandler(store);
    const b = makeCommandHandler(store);
    await a.handle(setter, 's', { to: 1 }, NOW, meta); // a's fold: 1
    await b.handle(setter, 's', { to: 0 }, NOW, meta); // now 0, a does not know
    const raised = await a.handle(setter, 's', { to: 5 }, NOW, meta);
    assert.deepEqual(raised.state, { n: 5 }, 'refused on the stale fold, accepted on the fresh one');
    // b's fold is 0: its append at version 3 is refused, and decided again on n = 5, it is refused.
    await b.handle(setter, 's', { to: 2 }, NOW, meta)
      .then(() => assert.fail('expected a refusal'), (error: unknown) => assert.match(String(error), /refused/));
    await a.handle(setter, 's', { to: 7 }, NOW, meta).then(() => assert.fail('expected a refusal'), (error: unknown) => assert.match(String(error), /refused/));
    const same = await b.handle(setter, 's', { to: 5 }, NOW, meta);
    assert.equal(same.position, null, 'nothing recorded: the value is already 5');
    assert.equal((await a.load(setter, 's')).version, 3);
    await store.close();
  });

  it('load takes a cached fold the caller holds for settled without a read', async () => {
    const { store, reads } = await countingStore();
    const handler = makeCommandHandler(store);
    await handler.handle(counter, 'counter-5', { by: 2 }, NOW, meta);
    const before = reads.count;
    assert.deepEqual((await handler.load(counter, 'counter-5', (s) => s.n >= 2)).state, { n: 2 });
    assert.equal(reads.count, before);
    await handler.load(counter, 'counter-5', (s) => s.n >= 3);
    assert.equal(reads.count, before + 1, 'a fold not settled is read');
    await store.close();
  });
});
