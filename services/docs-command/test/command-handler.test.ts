import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openFileEventLog } from '@docshare/event-store';
import { makeCommandHandler, type Decider } from '../src/command-handler.ts';

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
});
