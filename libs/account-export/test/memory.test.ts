// Its own file (its own process), so what other tests leave on the heap does not count here.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { ExportOriginal } from '../src/index.ts';
import { writeAccountExport } from '../src/index.ts';
import { generated, iterate } from './zip-reader.ts';

const MiB = 1024 * 1024;

/** A sink that discards what it gets, a turn later (a slow consumer), noting the process's peak RSS. */
const discardingSink = (): Writable & { peakRss(): number; received(): number } => {
  let peak = process.memoryUsage().rss;
  let received = 0;
  let writes = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      if (++writes % 16 === 0) peak = Math.max(peak, process.memoryUsage().rss);
      setImmediate(callback);
    },
    final(callback) {
      peak = Math.max(peak, process.memoryUsage().rss);
      callback();
    },
  });
  return Object.assign(sink, { peakRss: () => peak, received: () => received });
};

const contents = (originals: ExportOriginal[]) => ({
  account: { id: 1 }, files: [], commentsWritten: [], purchases: [], stats: {}, daily: null, originals: iterate(originals),
});

describe('writeAccountExport memory', () => {
  it('exports 200 MiB of originals with the RSS growing by less than 100 MiB', async () => {
    // A small export first, so what loading archiver and zlib costs is in the baseline.
    await writeAccountExport(contents([{ fileId: 0, fileName: 'warm.bin', open: () => Promise.resolve(generated(MiB)) }]), discardingSink());
    const before = process.memoryUsage().rss;
    const originals = Array.from({ length: 8 }, (_, i): ExportOriginal => ({
      fileId: i + 1,
      fileName: `part-${i + 1}.bin`,
      open: () => Promise.resolve(generated(25 * MiB, 256 * 1024)),
    }));
    const sink = discardingSink();
    const result = await writeAccountExport(contents(originals), sink);
    assert.equal(result.originals.length, 8);
    assert.equal(result.originals.reduce((sum, o) => sum + o.bytes, 0), 200 * MiB);
    assert.equal(result.bytes, sink.received());
    assert.ok(result.bytes > 200 * MiB);
    const grew = sink.peakRss() - before;
    assert.ok(grew < 100 * MiB, `RSS grew by ${Math.round(grew / MiB)} MiB`);
  });
});
