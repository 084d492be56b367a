import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import type { BatchHandler, EventConsumer } from '@docshare/event-bus';
import { httpLimitsOf, makeLogger } from '@docshare/http';
import { testEvent } from '@docshare/contracts/testing';
import { makeMemoryCheckpoints } from '@docshare/consistency';
import { startProjectorService } from '../src/index.ts';

const logger = makeLogger('test', 'silent');

/** A consumer whose group join takes as long as the test says (a Kafka session to expire, Kafka down). */
const slowConsumer = () => {
  let release!: () => void;
  let fail!: (error: Error) => void;
  const joins: { group: string; handler: BatchHandler }[] = [];
  let stops = 0;
  const consumer: EventConsumer = {
    subscribe: async () => { throw new Error('projectors subscribe in batches'); },
    subscribeBatches: async (group, handler) => {
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

const start = (consumer: EventConsumer, checks: Record<string, () => Promise<void>> = { mongodb: async () => {} }, checkpoints = makeMemoryCheckpoints()) => {
  let closed = 0;
  const handled: string[] = [];
  const service = startProjectorService({
    name: 'test-projector', consumer, checkpoints, partitions: 1, queryApp: queryApp(), checks, port: 0, host: '127.0.0.1', http: httpLimitsOf({}), logger,
    handle: async (records) => { handled.push(...records.map((r) => r.event.id)); },
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
    await fake.joins[0]?.handler({ partition: 0, records: [{ position: 1, event: testEvent('file-1', 1) }], through: 1 });
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

  it('holds a query that carries a consistency token until a batch brings the group through it; others pass at once', async () => {
    const fake = slowConsumer();
    const { service: starting } = start(fake.consumer);
    const service = await starting;
    fake.release();
    await service.consuming;
    const handler = fake.joins[0]!.handler;
    await handler({ partition: 0, records: [{ position: 3, event: testEvent('file-1', 1) }], through: 3 });
    // Already reached, or no token: answered at once.
    const reached = await fetch(`http://127.0.0.1:${service.port}/q`, { headers: { 'x-docshare-consistency': '3' } });
    assert.equal(reached.status, 200);
    assert.equal((await fetch(`http://127.0.0.1:${service.port}/q`)).status, 200);
    let answered = false;
    const waiting = fetch(`http://127.0.0.1:${service.port}/q`, { headers: { 'x-docshare-consistency': '5' } }).then((res) => {
      answered = true;
      return res.status;
    });
    // A watermark-only batch (no records) moves the checkpoint too.
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(answered, false, 'answered before the read model reached its token');
    await handler({ partition: 0, records: [], through: 5 });
    assert.equal(await waiting, 200);
    await service.stop();
  });
});
