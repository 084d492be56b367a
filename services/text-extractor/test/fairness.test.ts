// Fair extraction end to end, as embedded mode runs it: the extractor subscribed to the in-process
// bus, the real sandbox, hostile PDFs that run until their time budget. User A's six hostile files
// must not hold user B's text file back for more than the one file already running, and stopping
// with files unfinished must leave them to the next start (nothing acknowledged is lost).
// Everything is asserted on order and completion, never on time.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { CloudEvent, StoredEvent } from '@docshare/contracts';
import { makeFsBlobStore, type BlobStore } from '@docshare/blob-store';
import { makeLogBus, type AppendLog } from '@docshare/event-bus';
import { millionPagePdf } from '@docshare/extract/testing';
import { makeLogger } from '@docshare/http';
import { makeHistory } from '@docshare/projection/testing';
import { makeExtraction, type ExtractionRecorder, type ExtractSettings } from '../src/index.ts';

const logger = makeLogger('test', 'silent');
const A = 1;
const B = 2;
const HOSTILE = [11, 12, 13, 14, 15, 16];
const B_FILE = 20;

/** The event log in memory: what the log bus reads in embedded mode. */
const memoryLog = () => {
  const records: StoredEvent<CloudEvent>[] = [];
  const listeners = new Set<(last: number) => void>();
  const log: AppendLog = {
    readAll: async (afterPosition, limit) => records.filter((r) => r.position > afterPosition).slice(0, limit),
    onAppend: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    lastPosition: async () => records.at(-1)?.position ?? 0,
  };
  const append = (...added: StoredEvent<CloudEvent>[]): void => {
    records.push(...added);
    for (const listener of listeners) listener(records.at(-1)!.position);
  };
  return { log, append };
};

/**
 * docs-command's side, in memory: one outcome per file, in the order they were recorded, and for
 * each file how many outcomes were recorded when its status was first asked (when it was taken up).
 */
const memoryRecorder = () => {
  const recorded: { fileId: number; outcome: string }[] = [];
  const recordedWhenAsked = new Map<number, number>();
  const port: ExtractionRecorder = {
    status: async (fileId) => {
      if (!recordedWhenAsked.has(fileId)) recordedWhenAsked.set(fileId, recorded.length);
      return recorded.some((r) => r.fileId === fileId) ? 'done' : 'pending';
    },
    record: async (fileId, _blobKey, report) => {
      if (!recorded.some((r) => r.fileId === fileId)) recorded.push({ fileId, outcome: report.ok ? 'ok' : report.reason });
    },
  };
  return { port, recorded, recordedWhenAsked };
};

/** Polls `condition` until it holds (bounded by the test's timeout only); `what` names it in a failure. */
const until = async (what: string, condition: () => boolean | Promise<boolean>): Promise<void> => {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(await condition(), what);
};

// Budgets small enough for a test (the million-page PDF meets its memory or time budget within seconds), yet
// long enough for B's text file, in a freshly started child, on a loaded machine.
const settings = (concurrency: number): ExtractSettings => ({
  EXTRACT_TIMEOUT_MS: 5_000, EXTRACT_MEMORY_MB: 384, EXTRACT_MAX_CHARS: 1_000, EXTRACT_MAX_BYTES: 1_000_000,
  EXTRACT_CONCURRENCY: concurrency, EXTRACT_OWNER_BACKLOG: 100,
});

describe('text extractor: fair to every owner, with the real sandbox', { timeout: 180_000 }, () => {
  let dir: string;
  let blobs: BlobStore;
  const history = makeHistory();
  const hostile = HOSTILE.map((fileId) => history.upload(fileId, A, `huge${fileId}`, {
    blobKey: `f${fileId}`, originalFileName: `huge${fileId}.pdf`, contentType: 'application/pdf', size: millionPagePdf().length,
  }));
  const text = history.upload(B_FILE, B, 'notes', { blobKey: `f${B_FILE}`, originalFileName: 'notes.txt', contentType: 'text/plain', size: 20 });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'docshare-fairness-'));
    blobs = await makeFsBlobStore(dir);
    const put = (key: string, bytes: Uint8Array, type: string) => blobs.put(key, Readable.from([Buffer.from(bytes)]), bytes.length, type);
    for (const fileId of HOSTILE) await put(`f${fileId}`, millionPagePdf(), 'application/pdf');
    await put(`f${B_FILE}`, new TextEncoder().encode('B wrote these notes.'), 'text/plain');
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  it('B\'s text file, uploaded while A\'s six hostile PDFs are queued, is extracted after at most the one PDF already running', async () => {
    const { log, append } = memoryLog();
    const bus = makeLogBus(log);
    const { port, recorded, recordedWhenAsked } = memoryRecorder();
    const extraction = makeExtraction({ blobs, logger, recorder: port, settings: settings(1) });
    append(...hostile);
    const running = await extraction.start(bus, 'text-extractor', logger);
    try {
      await until('a hostile PDF is being read', () => extraction.extractor.stats().busy === 1);
      const atAppend = recorded.length;
      append(text);
      await until('B\'s file is recorded', () => recorded.some((r) => r.fileId === B_FILE));
      // B's file is taken up at once (a slow machine may let the running PDF end in between, no more) ...
      const takenUp = recordedWhenAsked.get(B_FILE) ?? Infinity;
      assert.ok(takenUp <= atAppend + 1, `B's file was taken up only after ${takenUp - atAppend} more of A's files: ${JSON.stringify(recorded)}`);
      // ... and is read next: after the one PDF running then, if any.
      const before = recorded.findIndex((r) => r.fileId === B_FILE) - takenUp;
      assert.ok(before <= 1, `B's file came after ${before} of A's files taken up before it: ${JSON.stringify(recorded)}`);
      assert.deepEqual(recorded[before], { fileId: B_FILE, outcome: 'ok' });
      assert.ok(recorded.filter((r) => r.fileId !== B_FILE).length < HOSTILE.length, 'A\'s files were still queued when B\'s was done');
    } finally {
      await running.stop();
    }
  });

  it('stopping with files unfinished acknowledges none of them: the next start extracts every one, each recorded once', async () => {
    const { log, append } = memoryLog();
    // One bus for both runs: it keeps each group's acknowledged position, as Kafka keeps offsets.
    const bus = makeLogBus(log);
    const { port, recorded } = memoryRecorder();
    append(...hostile, text);
    const first = makeExtraction({ blobs, logger, recorder: port, settings: settings(2) });
    const running = await first.start(bus, 'text-extractor', logger);
    await until('B\'s file is recorded', () => recorded.some((r) => r.fileId === B_FILE));
    await running.stop();
    const unfinished = HOSTILE.filter((fileId) => !recorded.some((r) => r.fileId === fileId));
    assert.ok(unfinished.length > 0, 'some of A\'s files were unfinished at the stop');
    const [lag] = await bus.lag('text-extractor');
    assert.ok(lag && lag.lag > 0, 'the group did not acknowledge past unfinished files');

    const second = makeExtraction({ blobs, logger, recorder: port, settings: settings(2) });
    const again = await second.start(bus, 'text-extractor', logger);
    try {
      await until('every file is recorded', () => recorded.length === HOSTILE.length + 1);
      assert.deepEqual(recorded.map((r) => r.fileId).sort((x, y) => x - y), [...HOSTILE, B_FILE]);
      assert.ok(recorded.filter((r) => r.fileId !== B_FILE).every((r) => r.outcome === 'timeout' || r.outcome === 'memory'), JSON.stringify(recorded));
      await until('the group has acknowledged everything', async () => (await bus.lag('text-extractor'))[0]?.lag === 0);
    } finally {
      await again.stop();
    }
  });
});
