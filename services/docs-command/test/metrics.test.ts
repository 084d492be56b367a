// docs-command's metrics: upload sizes, bytes stored, the outbox.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { makeLogger } from '@docshare/http';
import { makeStorageMetrics, registerOutboxMetrics, UPLOAD_SIZE_BUCKETS } from '../src/metrics.ts';

const logger = makeLogger('test', 'silent');

const valueOf = async (registry: Registry, name: string, sample = name, labels: Record<string, string> = {}): Promise<number | undefined> => {
  const { values } = await registry.getSingleMetric(name)!.get();
  return values.find((v) => ((v as { metricName?: string }).metricName ?? name) === sample
    && Object.entries(labels).every(([k, l]) => String((v.labels as Record<string, unknown>)[k]) === l))?.value;
};

describe('upload sizes and bytes stored', () => {
  it('buckets uploads from 1 KiB to 1 GiB', () => {
    assert.equal(UPLOAD_SIZE_BUCKETS[0], 1024);
    assert.equal(UPLOAD_SIZE_BUCKETS.at(-1), 1024 ** 3);
  });

  it('counts from the read model at start, then moves with each recorded upload and deletion', async () => {
    const registry = new Registry();
    const storage = makeStorageMetrics(registry, { totalStored: async () => 10_000, logger });
    await storage.counted();
    assert.equal(await valueOf(registry, 'docshare_stored_bytes'), 10_000);
    storage.recorded({ kind: 'upload', bytes: 5_000 });
    storage.recorded({ kind: 'upload', bytes: 2 * 1024 ** 2 });
    storage.recorded({ kind: 'delete', bytes: 3_000 });
    assert.equal(await valueOf(registry, 'docshare_stored_bytes'), 10_000 + 5_000 + 2 * 1024 ** 2 - 3_000);
    assert.equal(await valueOf(registry, 'docshare_upload_size_bytes', 'docshare_upload_size_bytes_count'), 2);
    assert.equal(await valueOf(registry, 'docshare_upload_size_bytes', 'docshare_upload_size_bytes_sum'), 5_000 + 2 * 1024 ** 2);
    assert.equal(await valueOf(registry, 'docshare_upload_size_bytes', 'docshare_upload_size_bytes_bucket', { le: '4096' }), 0);
    assert.equal(await valueOf(registry, 'docshare_upload_size_bytes', 'docshare_upload_size_bytes_bucket', { le: '16384' }), 1);
    assert.equal(await valueOf(registry, 'docshare_upload_size_bytes', 'docshare_upload_size_bytes_bucket', { le: '4194304' }), 2);
    storage.stop();
  });

  it('exposes the deprecated docshare_bytes_stored beside docshare_stored_bytes, with the same value, until 0.3.0', async () => {
    const registry = new Registry();
    const storage = makeStorageMetrics(registry, { totalStored: async () => 12_345, logger });
    await storage.counted();
    storage.recorded({ kind: 'upload', bytes: 55 });
    const text = await registry.metrics();
    assert.match(text, /^# TYPE docshare_stored_bytes gauge$/m);
    assert.match(text, /^docshare_stored_bytes 12400$/m);
    assert.match(text, /^# HELP docshare_bytes_stored DEPRECATED, removed in 0\.3\.0: use docshare_stored_bytes/m);
    assert.match(text, /^docshare_bytes_stored 12400$/m);
    storage.stop();
  });

  it('keeps what was recorded while a recount ran, and recounts on its interval', async () => {
    const registry = new Registry();
    const counts: ((total: number) => void)[] = [];
    const storage = makeStorageMetrics(registry, {
      totalStored: () => new Promise<number>((resolve) => counts.push(resolve)), logger, resyncMs: 5,
    });
    // Recorded while the first count is under way: added to its result.
    storage.recorded({ kind: 'upload', bytes: 700 });
    counts.shift()!(1_000);
    await storage.counted();
    assert.equal(await valueOf(registry, 'docshare_stored_bytes'), 1_700);
    // The next recount (the read model has caught up meanwhile) replaces the tally.
    while (counts.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    counts.shift()!(4_000);
    while ((await valueOf(registry, 'docshare_stored_bytes')) !== 4_000) await new Promise((resolve) => setTimeout(resolve, 5));
    storage.stop();
  });

  it('goes on without a count while the read model is down; the next count sets it', async () => {
    const registry = new Registry();
    let fail = true;
    const storage = makeStorageMetrics(registry, {
      totalStored: async () => {
        if (fail) throw new Error('MongoDB down');
        return 50;
      },
      logger, resyncMs: 5,
    });
    await storage.counted();
    storage.recorded({ kind: 'upload', bytes: 10 });
    assert.equal(await valueOf(registry, 'docshare_upload_size_bytes', 'docshare_upload_size_bytes_count'), 1);
    fail = false;
    while ((await valueOf(registry, 'docshare_stored_bytes')) !== 50) await new Promise((resolve) => setTimeout(resolve, 5));
    storage.stop();
  });
});

describe('outbox metrics', () => {
  it('reads the relay\'s backlog once per scrape: events, the oldest one\'s age, and whether this replica publishes', async () => {
    const registry = new Registry();
    let reads = 0;
    let backlog = { events: 0, oldestAgeMs: 0 };
    let leader = false;
    registerOutboxMetrics(registry, {
      backlog: async () => {
        reads++;
        return backlog;
      },
      isLeader: () => leader,
    });
    const scrape = async (): Promise<string> => registry.metrics();
    assert.match(await scrape(), /^docshare_outbox_backlog_events 0$/m);
    assert.equal(reads, 1);
    backlog = { events: 12, oldestAgeMs: 2_500 };
    leader = true;
    const text = await scrape();
    assert.equal(reads, 2);
    assert.match(text, /^docshare_outbox_backlog_events 12$/m);
    assert.match(text, /^docshare_outbox_oldest_unpublished_age_seconds 2\.5$/m);
    assert.match(text, /^docshare_outbox_relay_leader 1$/m);
  });

  it('keeps the last values while MongoDB does not answer', async () => {
    const registry = new Registry();
    let down = false;
    registerOutboxMetrics(registry, {
      backlog: async () => {
        if (down) throw new Error('MongoDB down');
        return { events: 3, oldestAgeMs: 1_000 };
      },
      isLeader: () => false,
    });
    await registry.metrics();
    down = true;
    const text = await registry.metrics();
    assert.match(text, /^docshare_outbox_backlog_events 3$/m);
    assert.match(text, /^docshare_outbox_oldest_unpublished_age_seconds 1$/m);
  });
});
