import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { testEvent, testEvents } from '@docshare/contracts/testing';
import { openFileEventLog } from '@docshare/event-store';
import type { FileEventLog } from '@docshare/event-store';
import { eventConsumerContract } from '../src/contract.ts';
import { makeLogBus } from '../src/log-bus.ts';
import type { LogBus, LogBusOptions } from '../src/log-bus.ts';

const tempDirs: string[] = [];
after(() => Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true }))));

async function openTempLog(): Promise<FileEventLog> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'docshare-log-bus-'));
  tempDirs.push(dir);
  return openFileEventLog(dir);
}

// The log checks each append against the versions of appends still in flight, so appending all at once keeps order.
const publishTo = (log: FileEventLog) => async (events: CloudEvent[]): Promise<void> => {
  await Promise.all(events.map((event) => log.append(event.subject, event.streamversion - 1, [event])));
};

eventConsumerContract('log bus over a file log', async () => {
  const log = await openTempLog();
  return { consumer: makeLogBus(log), publish: publishTo(log), close: () => log.close() };
});

async function waitFor(predicate: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Appends `count` more events to `stream`; returns the position of the last one. */
async function appendTo(log: FileEventLog, stream: string, count: number): Promise<number> {
  const version = (await log.readStream(stream)).length;
  return (await log.append(stream, version, testEvents(stream, version + 1, count))).position;
}

async function withBus(test: (log: FileEventLog, bus: LogBus) => Promise<void>, options?: LogBusOptions): Promise<void> {
  const log = await openTempLog();
  try {
    await test(log, makeLogBus(log, options));
  } finally {
    await log.close();
  }
}

const positions = (records: StoredEvent<CloudEvent>[]): number[] => records.map((record) => record.position);
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('log bus', () => {
  it('replays the whole log, in position order, to a group of a fresh bus', () =>
    withBus(async (log, bus) => {
      await appendTo(log, 'a', 3);
      await appendTo(log, 'b', 2);
      const seen: StoredEvent<CloudEvent>[] = [];
      const subscription = await bus.subscribe('replay', async (record) => void seen.push(record));
      await waitFor(() => seen.length === 5, 'the replay');
      assert.deepEqual(positions(seen), range(1, 5));
      await subscription.stop();
    }));

  it('delivers unversioned events (streamversion 0) at their positions between a stream\'s events, live and on replay', () =>
    withBus(async (log, bus) => {
      await appendTo(log, 'file-1', 1);
      const live: StoredEvent<CloudEvent>[] = [];
      const subscription = await bus.subscribe('unversioned', async (record) => void live.push(record));
      await log.appendUnversioned([testEvent('file-1', 0), testEvent('file-1', 0)]);
      await appendTo(log, 'file-1', 1);
      await waitFor(() => live.length === 4, 'the live events');
      assert.deepEqual(live.map((r) => [r.position, r.event.streamversion]), [[1, 1], [2, 0], [3, 0], [4, 2]]);
      await subscription.stop();

      const replayed: StoredEvent<CloudEvent>[] = [];
      const again = await bus.subscribe('unversioned-replay', async (record) => void replayed.push(record));
      await waitFor(() => replayed.length === 4, 'the replay');
      assert.deepEqual(replayed, live);
      await again.stop();
    }));

  it('resumes a group after its last acknowledged event, delivering none of those again', () =>
    withBus(async (log, bus) => {
      const first: StoredEvent<CloudEvent>[] = [];
      const subscription = await bus.subscribe('resume', async (record) => void first.push(record));
      await appendTo(log, 'r', 4);
      await waitFor(() => first.length === 4, 'the first events');
      await subscription.stop();

      await appendTo(log, 'r', 3);
      const second: StoredEvent<CloudEvent>[] = [];
      const again = await bus.subscribe('resume', async (record) => void second.push(record));
      await waitFor(() => second.length === 3, 'the events appended while stopped');
      assert.deepEqual(positions(second), range(5, 7));
      await again.stop();
    }));

  it('reports each group\'s lag: the events after the last one it acknowledged', () =>
    withBus(async (log, bus) => {
      await appendTo(log, 'l', 5);
      // A group that has not consumed yet has the whole log ahead of it, as a new Kafka group does.
      assert.deepEqual(await bus.lag('lagging'), [{ partition: 0, lag: 5 }]);
      let release = (): void => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      let handled = 0;
      const subscription = await bus.subscribeBatches('lagging', async (batch) => {
        await gate;
        handled += batch.records.length;
      });
      // Held in its first batch: nothing acknowledged yet.
      assert.deepEqual(await bus.lag('lagging'), [{ partition: 0, lag: 5 }]);
      release();
      await waitFor(() => handled === 5, 'the batch');
      await bus.waitForGroups(5, 5_000);
      assert.deepEqual(await bus.lag('lagging'), [{ partition: 0, lag: 0 }]);
      await subscription.stop();
      await appendTo(log, 'l', 2);
      assert.deepEqual(await bus.lag('lagging'), [{ partition: 0, lag: 2 }], 'a stopped group falls behind');
    }));

  it('rejects a second subscriber of an active group until the first has stopped', () =>
    withBus(async (_log, bus) => {
      const subscription = await bus.subscribe('single', async () => {});
      await assert.rejects(bus.subscribe('single', async () => {}), /already has an active subscriber/);
      await subscription.stop();
      const next = await bus.subscribe('single', async () => {});
      await next.stop();
    }));

  it('stop cuts a redelivery backoff short and leaves the event unacknowledged', () =>
    withBus(
      async (log, bus) => {
        let attempts = 0;
        const subscription = await bus.subscribe('backoff', async () => {
          attempts++;
          throw new Error('always fails');
        });
        await appendTo(log, 'slow', 1);
        await waitFor(() => attempts === 1, 'the first attempt');

        let timer: NodeJS.Timeout | undefined;
        const stoppedInTime = await Promise.race([
          subscription.stop().then(() => true),
          new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 2000))),
        ]);
        clearTimeout(timer);
        assert.ok(stoppedInTime, 'stop waited for the backoff');

        const redelivered: StoredEvent<CloudEvent>[] = [];
        const again = await bus.subscribe('backoff', async (record) => void redelivered.push(record));
        await waitFor(() => redelivered.length === 1, 'the redelivery');
        assert.equal(redelivered[0]!.position, 1);
        await again.stop();
      },
      { baseDelayMs: 60_000, maxDelayMs: 60_000 },
    ));

  it('keeps retrying a failing onDeadLetter before moving on', () =>
    withBus(async (log, bus) => {
      let deadLetterCalls = 0;
      const handled: number[] = [];
      const subscription = await bus.subscribe(
        'dead-letter-retry',
        async (record) => {
          if (record.position === 1) throw new Error('poison');
          handled.push(record.position);
        },
        {
          maxAttempts: 2,
          onDeadLetter: () => {
            if (++deadLetterCalls < 3) throw new Error('dead-letter store down');
          },
        },
      );
      await appendTo(log, 'p', 2);
      await waitFor(() => handled.length === 1, 'the event after the poison one');
      assert.equal(deadLetterCalls, 3);
      assert.deepEqual(handled, [2]);
      await subscription.stop();
    }));

  it('warns when it drops an event because the group has no onDeadLetter', async () => {
    const warnings: string[] = [];
    await withBus(
      async (log, bus) => {
        const handled: number[] = [];
        const subscription = await bus.subscribe(
          'drop',
          async (record) => {
            if (record.position === 1) throw new Error('poison');
            handled.push(record.position);
          },
          { maxAttempts: 1 },
        );
        await appendTo(log, 'd', 2);
        await waitFor(() => handled.length === 1, 'the event after the dropped one');
        assert.equal(warnings.length, 1);
        assert.match(warnings[0]!, /dropped event at position 1/);
        await subscription.stop();
      },
      { onWarning: (message) => warnings.push(message) },
    );
  });

  describe('waitForGroups', () => {
    it('is true at once when no group is subscribed', () =>
      withBus(async (log, bus) => {
        const position = await appendTo(log, 'w', 1);
        assert.equal(await bus.waitForGroups(position, 1000), true);
      }));

    it('is true once every subscribed group has handled the position, false on timeout', () =>
      withBus(async (log, bus) => {
        let release = (): void => {};
        const gate = new Promise<void>((resolve) => (release = resolve));
        const fast = await bus.subscribe('fast', async () => {});
        const slow = await bus.subscribe('slow', () => gate);
        const position = await appendTo(log, 'w', 2);

        assert.equal(await bus.waitForGroups(position, 50), false);
        const waiting = bus.waitForGroups(position, 5000);
        release();
        assert.equal(await waiting, true);
        assert.equal(await bus.waitForGroups(position - 1, 0), true);
        await Promise.all([fast.stop(), slow.stop()]);
      }));

    it('counts a dead-lettered event as passed', () =>
      withBus(async (log, bus) => {
        const subscription = await bus.subscribe(
          'poisoned',
          async () => {
            throw new Error('poison');
          },
          { maxAttempts: 2, onDeadLetter: () => {} },
        );
        const position = await appendTo(log, 'w', 1);
        assert.equal(await bus.waitForGroups(position, 5000), true);
        await subscription.stop();
      }));

    it('stops waiting for a group once it has stopped', () =>
      withBus(
        async (log, bus) => {
          let attempts = 0;
          const stuck = await bus.subscribe('stuck', async () => {
            attempts++;
            throw new Error('down');
          });
          const position = await appendTo(log, 'w', 1);
          await waitFor(() => attempts === 1, 'the first attempt');
          const waiting = bus.waitForGroups(position, 5000);
          await stuck.stop();
          assert.equal(await waiting, true);
        },
        { baseDelayMs: 60_000, maxDelayMs: 60_000 },
      ));

    it('waits for a group subscribed later to catch up', () =>
      withBus(async (log, bus) => {
        const position = await appendTo(log, 'w', 3);
        let release = (): void => {};
        const gate = new Promise<void>((resolve) => (release = resolve));
        const late = await bus.subscribe('late', () => gate);
        assert.equal(await bus.waitForGroups(position, 30), false);
        release();
        assert.equal(await bus.waitForGroups(position, 5000), true);
        await late.stop();
      }));
  });
});
