import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import type { EventConsumer, EventHandler } from '@docshare/event-bus';
import { makeLogger } from '@docshare/http';
import { testEvent } from '@docshare/contracts/testing';
import { startProjectorService, type Progress } from '../src/index.ts';

const logger = makeLogger('test', 'silent');
const progress: Progress = { record: async () => {}, reached: async () => true };

/** A consumer whose group join takes as long as the test says (a Kafka session to expire, Kafka down). */
const slowConsumer = () => {
  let release!: () => void;
  let fail!: (error: Error) => void;
  const joins: { group: string; handler: EventHandler }[] = [];
  let stops = 0;
  const consumer: EventConsumer = {
    subscribe: async (group, handler) => {
      joins.push({ group, handler });
      await new Promise<void>((resolve, reject) => {
        release = resolve;
        fail = reject;
      });
      return { stop: async () => { stops += 1; } };
    },
  };
  return { consumer, joins, release: () => release(), fail: (error: Error) => fail(error), stops: () => stops };
};

const queryApp = () => {
  const app = express();
  app.get('/q', (_req, res) => { res.json({ status: 'success' }); });
  return app;
};

const get = async (port: number, path: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.json() as { checks?: Record<string, string> } };
};

const start = (consumer: EventConsumer, checks: Record<string, () => Promise<void>> = { mongodb: async () => {} }) => {
  let closed = 0;
  const handled: string[] = [];
  const service = startProjectorService({
    name: 'test-projector', consumer, progress, queryApp: queryApp(), checks, port: 0, host: '127.0.0.1', logger,
    handle: async (record) => { handled.push(record.event.id); },
    close: async () => { closed += 1; },
    joinRetryMaxMs: 20, handleSignals: false,
  });
  return { service, closed: () => closed, handled };
};

describe('startProjectorService', () => {
  it('serves queries and is ready before its consumer has joined the group', async () => {
    const fake = slowConsumer();
    const { service: starting, handled } = start(fake.consumer);
    // Resolves although the group join has not finished (it would hang here with the old order).
    const service = await starting;
    assert.equal(service.consumerState(), 'joining');
    assert.deepEqual((await get(service.port, '/q')).body, { status: 'success' });
    const ready = await get(service.port, '/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body.checks, { mongodb: 'ok', consumer: 'degraded' });

    fake.release();
    await service.consuming;
    assert.equal(service.consumerState(), 'consuming');
    assert.deepEqual((await get(service.port, '/readyz')).body.checks, { mongodb: 'ok', consumer: 'ok' });
    // The handler it subscribed applies events.
    await fake.joins[0]?.handler({ position: 1, event: testEvent('file-1', 1) });
    assert.equal(handled.length, 1);
    await service.stop();
  });

  it('is not ready while its read store fails, whatever the consumer does', async () => {
    const fake = slowConsumer();
    const { service: starting } = start(fake.consumer, { mongodb: async () => { throw new Error('down'); } });
    const service = await starting;
    fake.release();
    await service.consuming;
    const ready = await get(service.port, '/readyz');
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.body.checks, { mongodb: 'unavailable', consumer: 'ok' });
    await service.stop();
  });

  it('keeps trying to join while Kafka refuses, serving queries meanwhile', async () => {
    const fake = slowConsumer();
    const { service: starting } = start(fake.consumer);
    const service = await starting;
    fake.fail(new Error('connect ECONNREFUSED'));
    // The second attempt arrives after the backoff.
    while (fake.joins.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(service.consumerState(), 'joining');
    assert.equal((await get(service.port, '/q')).status, 200);
    fake.release();
    await service.consuming;
    assert.equal(service.consumerState(), 'consuming');
    await service.stop();
    assert.equal(fake.stops(), 1);
  });

  it('stops cleanly while still joining: the late subscription is stopped, clients closed', async () => {
    const fake = slowConsumer();
    const { service: starting, closed } = start(fake.consumer);
    const service = await starting;
    const stopping = service.stop();
    fake.release();
    await stopping;
    assert.equal(service.consumerState(), 'stopped');
    assert.equal(fake.stops(), 1);
    assert.equal(closed(), 1);
    await assert.rejects(fetch(`http://127.0.0.1:${service.port}/q`));
  });
});
