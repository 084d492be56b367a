import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { BlobStore } from '../src/port.ts';

const MiB = 1024 * 1024;

// A real collector makes the memory bound measure live data, not garbage not yet collected.
const gc = ((): (() => void) => {
  if (typeof global.gc === 'function') { const collect = global.gc; return () => void collect(); }
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();
const liveBytes = (): number => {
  gc();
  const { arrayBuffers, heapUsed } = process.memoryUsage();
  return arrayBuffers + heapUsed;
};

export interface LargePutMeasure {
  seconds: number;
  /** The most live memory (heap and array buffers) grew by while the put ran. */
  peakBytes: number;
}

/**
 * Puts a generated 256 MB body under `key` and asserts that live memory grew by less than 64 MB
 * meanwhile (`measured`, if given, hears the figures first); then checks the stored blob's stat
 * and a clamped range at its end, and removes it. `declared: false` puts it without a size (as an
 * upload being received), with `maxBytes` the most an upload may be.
 */
export async function assertLargePutBounded(
  store: BlobStore,
  key: string,
  measured?: (measure: LargePutMeasure) => void,
  { declared = true }: { declared?: boolean } = {},
): Promise<void> {
  const chunkSize = 64 * 1024;
  const total = 256 * MiB;
  const sampleEvery = 16 * MiB;
  const base = liveBytes();
  let peak = 0;
  let produced = 0;
  // Each chunk is a fresh allocation, so a store that held on to chunks would show it.
  const body = new Readable({
    read() {
      if (produced === total) {
        this.push(null);
        return;
      }
      this.push(Buffer.alloc(chunkSize, (produced / chunkSize) % 256));
      produced += chunkSize;
      if (produced % sampleEvery === 0) peak = Math.max(peak, liveBytes() - base);
    },
  });
  const started = performance.now();
  const stored = declared
    ? await store.put(key, body, total, 'application/octet-stream')
    : await store.put(key, body, undefined, 'application/octet-stream', { maxBytes: 1024 * MiB });
  assert.equal(stored, total);
  const seconds = (performance.now() - started) / 1000;
  peak = Math.max(peak, liveBytes() - base);
  measured?.({ seconds, peakBytes: peak });
  assert.ok(peak < 64 * MiB, `live memory grew by ${(peak / MiB).toFixed(1)} MB`);

  assert.deepEqual(await store.stat(key), { size: total, contentType: 'application/octet-stream' });
  const tail = await store.get(key, { start: total - 2, end: total + 100 });
  assert.ok(tail);
  assert.deepEqual(tail.range, { start: total - 2, end: total - 1 });
  assert.deepEqual(await buffer(tail.body), Buffer.from([255, 255]));
  await store.remove(key);
}
