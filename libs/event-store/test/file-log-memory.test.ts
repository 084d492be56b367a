// The embedded event log keeps offsets, not payloads (issue 17): what it holds in memory after a
// reopen, or after appends, does not grow with the size of the events it has recorded.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { testEvent } from '@docshare/contracts/testing';
import { openFileEventLog } from '../src/file-log.ts';
import type { FileEventLog } from '../src/file-log.ts';

// The test runner starts this file without --expose-gc; the flag can still be set at run time.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const tempDirs: string[] = [];
after(() => Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true }))));
const tempDir = async (): Promise<string> => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'docshare-event-log-memory-'));
  tempDirs.push(dir);
  return dir;
};

/** 64 events of 256 K characters each: 16 MiB of payload, as extracted text would be. */
const EVENTS = 64;
const CHARS = 256 * 1024;
const PAYLOAD_BYTES = EVENTS * CHARS;
/**
 * What the log may keep for them: a quarter of the payload. Offsets take a few bytes per event;
 * a log that kept the payloads would hold all 16 MiB. The margin covers the heap's own noise.
 */
const BOUND = PAYLOAD_BYTES / 4;

/** Heap in use once everything unreachable is collected. */
const settledHeap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

/** Appends the big events: one stream per 4 events, some appends carrying 2 events. */
const appendBig = async (log: FileEventLog): Promise<void> => {
  for (let i = 0; i < EVENTS;) {
    const stream = `big-${Math.floor(i / 4)}`;
    const version = i % 4;
    const count = version % 2 === 0 ? 2 : 1;
    const events = Array.from({ length: count }, (_, k) =>
      testEvent(stream, version + k + 1, { text: String.fromCharCode(97 + ((i + k) % 26)).repeat(CHARS) }));
    await log.append(stream, version, events);
    i += count;
  }
};

/** Unversioned events of as many distinct subjects (as views of many files are). */
const UNVERSIONED = 50_000;
/**
 * What a reopened log may keep per unversioned event: its record's offset, length and first
 * position (about 30 bytes); an entry per subject in the stream index (a key, a map entry, an
 * array: what a versioned event of a new stream costs) would be about 300 bytes.
 */
const PER_UNVERSIONED_BOUND = 150;

const appendUnversionedMany = async (log: FileEventLog): Promise<void> => {
  await Promise.all(Array.from({ length: UNVERSIONED }, (_, i) => log.appendUnversioned([testEvent(`file-${i}-unversioned`, 0)])));
};

describe('file event log memory', () => {
  it('a reopened log keeps no per-subject bookkeeping for unversioned events', async () => {
    const dir = await tempDir();
    const writer = await openFileEventLog(dir);
    await appendUnversionedMany(writer);
    await writer.close();

    const before = settledHeap();
    const log = await openFileEventLog(dir);
    const retained = (settledHeap() - before) / UNVERSIONED;
    assert.ok(retained < PER_UNVERSIONED_BOUND, `the reopened log retains ${retained} bytes per unversioned event (bound ${PER_UNVERSIONED_BOUND})`);
    assert.equal(await log.lastPosition(), UNVERSIONED);
    assert.deepEqual(await log.readStream('file-7-unversioned'), []);
    await log.close();
  });

  it('appending big events leaves their payloads on disk, not in memory', async () => {
    const log = await openFileEventLog(await tempDir());
    const before = settledHeap();
    await appendBig(log);
    const retained = settledHeap() - before;
    assert.ok(retained < BOUND, `the log retains ${retained} bytes after appending ${PAYLOAD_BYTES} bytes of payload (bound ${BOUND})`);
    assert.equal(await log.lastPosition(), EVENTS);
    await log.close();
  });

  it('a reopened log holds offsets only, and still reads every payload back from the file', async () => {
    const dir = await tempDir();
    const writer = await openFileEventLog(dir);
    await appendBig(writer);
    await writer.close();

    const before = settledHeap();
    const log = await openFileEventLog(dir);
    const retained = settledHeap() - before;
    assert.ok(retained < BOUND, `the reopened log retains ${retained} bytes for ${PAYLOAD_BYTES} bytes of payload (bound ${BOUND})`);

    // Reads come from the file: every event whole, in order, per stream and globally.
    assert.equal(await log.lastPosition(), EVENTS);
    let position = 0;
    while (position < EVENTS) {
      const page = await log.readAll(position, 5);
      for (const record of page) {
        assert.equal(record.position, ++position);
        assert.equal((record.event.data as { text: string }).text.length, CHARS);
        assert.equal((record.event.data as { text: string }).text[0], String.fromCharCode(97 + ((position - 1) % 26)));
      }
    }
    const stream = await log.readStream('big-3', 1);
    assert.deepEqual(stream.map((r) => [r.position, r.event.streamversion]), [[14, 2], [15, 3], [16, 4]]);
    // What a reader got is its own: dropping it frees it (the log kept no reference).
    const afterReads = settledHeap() - before;
    assert.ok(afterReads < BOUND, `reads left ${afterReads} bytes behind (bound ${BOUND})`);
    await log.close();
  });
});
