// The projection side's metrics: consumer lag, dead letters, read-model generation.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { testEvents } from '@docshare/contracts/testing';
import { makeLogBus } from '@docshare/event-bus';
import { openFileEventLog, type FileEventLog } from '@docshare/event-store';
import { httpLimitsOf, makeLogger, sendError } from '@docshare/http';
import { makeMemoryCheckpoints } from '@docshare/consistency';
import { consume, deadLetterCounter, registerConsumerLag } from '@docshare/runtime';
import { generationOf, registerReadModelGenerations, runProjector, startProjectorService } from '../src/index.ts';
import type { EventConsumer } from '@docshare/event-bus';
import express from 'express';

const logger = makeLogger('test', 'silent');
const dirs: string[] = [];
after(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

const openLog = async (): Promise<FileEventLog> => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'docshare-metrics-'));
  dirs.push(dir);
  return openFileEventLog(dir);
};

/** The value of the sample of `name` with these labels, as a scrape would read it. */
const valueOf = async (registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number | undefined> => {
  const metric = registry.getSingleMetric(name);
  if (!metric) return undefined;
  const { values } = await metric.get();
  return values.find((v) => Object.entries(labels).every(([k, l]) => String((v.labels as Record<string, unknown>)[k]) === l))?.value;
};

const waitFor = async (check: () => Promise<boolean>, what: string): Promise<void> => {
  for (let i = 0; i < 2_000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`never: ${what}`);
};

describe('docshare_consumer_lag', () => {
  it('follows each group through the embedded bus: the whole log before it consumes, 0 once caught up', async () => {
    const log = await openLog();
    const bus = makeLogBus(log);
    const registry = new Registry();
    registerConsumerLag(registry, bus, ['fast', 'idle']);
    await log.append('s', 0, testEvents('s', 1, 4));
    assert.equal(await valueOf(registry, 'docshare_consumer_lag', { group: 'fast', partition: '0' }), 4);
    const running = await consume(bus, 'fast', async () => {}, logger);
    await waitFor(async () => (await valueOf(registry, 'docshare_consumer_lag', { group: 'fast', partition: '0' })) === 0, 'lag 0');
    assert.equal(await valueOf(registry, 'docshare_consumer_lag', { group: 'idle', partition: '0' }), 4, 'a group that does not consume');
    await running.stop();
    await log.close();
  });

  it('gives no sample for a group whose lag the bus cannot tell, and the others still', async () => {
    const registry = new Registry();
    registerConsumerLag(registry, {
      lag: async (group) => {
        if (group === 'down') throw new Error('connect ECONNREFUSED');
        return [{ partition: 0, lag: 3 }, { partition: 1, lag: 0 }];
      },
    }, ['down', 'up']);
    const { values } = await registry.getSingleMetric('docshare_consumer_lag')!.get();
    assert.deepEqual(values.map((v) => [v.labels.group, v.labels.partition, v.value]), [['up', '0', 3], ['up', '1', 0]]);
  });
});

describe('docshare_dead_letters_total', () => {
  it('counts each event a projector gives up on, by group', async () => {
    const log = await openLog();
    const bus = makeLogBus(log, { baseDelayMs: 1, maxDelayMs: 1 });
    const registry = new Registry();
    const deadLetters = deadLetterCounter(registry);
    assert.equal(deadLetterCounter(registry), deadLetters, 'registered once');
    await log.append('s', 0, testEvents('s', 1, 3));
    // The one runner (both modes) counts them itself.
    const running = await runProjector({
      consumer: bus, group: 'picky', checkpoints: makeMemoryCheckpoints(), logger, registry,
      apply: async (records) => {
        if (records.some((r) => r.event.streamversion === 2)) throw new TypeError('cannot apply');
      },
    });
    await bus.waitForGroups(3, 10_000);
    assert.equal(await valueOf(registry, 'docshare_dead_letters_total', { group: 'picky' }), 1);
    await running.stop();
    await log.close();
  });
});

describe('docshare_read_model_generation_timestamp_seconds', () => {
  it('reads the generation from a rebuild\'s prefix or index name; 0 for the first one', () => {
    assert.equal(generationOf('stats_'), 0);
    assert.equal(generationOf('stats_g1712345678901_'), 1712345678901);
    assert.equal(generationOf('search_g1712345678902'), 1712345678902);
    assert.equal(generationOf('files_gx_'), 0);
  });

  it('follows the generation pointer of each model, in seconds', async () => {
    const registry = new Registry();
    let stats = 'stats_';
    registerReadModelGenerations(registry, {
      stats: async () => stats,
      files: async () => { throw new Error('MongoDB down'); },
    });
    assert.equal(await valueOf(registry, 'docshare_read_model_generation_timestamp_seconds', { model: 'stats' }), 0);
    stats = 'stats_g1712345678901_';
    assert.equal(await valueOf(registry, 'docshare_read_model_generation_timestamp_seconds', { model: 'stats' }), 1712345678.901);
    assert.equal(await valueOf(registry, 'docshare_read_model_generation_timestamp_seconds', { model: 'files' }), undefined);
  });

  it('exposes the deprecated docshare_read_model_generation (ms) beside it, from one reading per scrape, until 0.3.0', async () => {
    const registry = new Registry();
    let lookups = 0;
    registerReadModelGenerations(registry, {
      search: async () => {
        lookups++;
        return 'search_g1712345678902';
      },
    });
    const text = await registry.metrics();
    assert.match(text, /^# TYPE docshare_read_model_generation_timestamp_seconds gauge$/m);
    assert.match(text, /^docshare_read_model_generation_timestamp_seconds\{model="search"\} 1712345678\.902$/m);
    assert.match(text, /^# HELP docshare_read_model_generation DEPRECATED, removed in 0\.3\.0: use docshare_read_model_generation_timestamp_seconds/m);
    assert.match(text, /^docshare_read_model_generation\{model="search"\} 1712345678902$/m);
    assert.equal(lookups, 1, 'both names come from one lookup of the pointer');
  });
});

describe('a projector service\'s /metrics', () => {
  const idle: EventConsumer = {
    subscribe: async () => ({ stop: async () => {} }),
    subscribeBatches: async () => ({ stop: async () => {} }),
  };
  /** A query app that ends, as every service's does, in the JSON 404. */
  const queryApp = express().use((_req, res) => sendError(res, 404, 'Not found'));
  const start = (metricsAt?: { port: number; host: string }) => startProjectorService({
    name: 'test-projector', consumer: idle, checkpoints: makeMemoryCheckpoints(), partitions: 1, queryApp, checks: {},
    port: 0, host: '127.0.0.1', http: httpLimitsOf({}), logger, handle: async () => {}, close: async () => {}, handleSignals: false, metricsAt,
  });

  it('is on its own port without a metrics listener', async () => {
    const service = await start();
    try {
      assert.equal(service.metricsPort, undefined);
      const res = await fetch(`http://127.0.0.1:${service.port}/metrics`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /^# HELP docshare_dead_letters_total /m);
    } finally {
      await service.stop();
    }
  });

  it('moves to the metrics listener when it has one: its own port answers 404', async () => {
    const service = await start({ port: 0, host: '127.0.0.1' });
    try {
      const own = await fetch(`http://127.0.0.1:${service.port}/metrics`);
      assert.equal(own.status, 404);
      assert.deepEqual(await own.json(), { status: 'error', message: 'Not found' });
      assert.ok(service.metricsPort !== undefined);
      const res = await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /^# HELP docshare_events_projected_total /m);
      assert.equal((await fetch(`http://127.0.0.1:${service.port}/healthz`)).status, 200);
    } finally {
      await service.stop();
    }
    await assert.rejects(fetch(`http://127.0.0.1:${service.metricsPort}/metrics`), 'closed with the service');
  });
});
