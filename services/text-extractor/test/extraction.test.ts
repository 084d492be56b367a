// The extractor's event handler over a real blob store and the real sandbox: what it records for
// each upload, what it skips, and that only a dependency failure fails a batch.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { ExtractionReport } from '@docshare/contracts';
import { makeFsBlobStore } from '@docshare/blob-store';
import { makeExtractor, type Extractor, type ExtractOutcome } from '@docshare/extract';
import { makeHistory } from '@docshare/projection/testing';
import { makeLogger } from '@docshare/http';
import { ExtractionStopped, makeExtractionWork, type ExtractionDeps, type ExtractionRecorder } from '../src/extraction.ts';

const logger = makeLogger('test', 'silent');

/** The settling handler: resolves once every upload of the records is done. */
const settle = (deps: ExtractionDeps) => makeExtractionWork(deps).settle;

interface Recorded { fileId: number; blobKey: string; report: ExtractionReport; cause: { eventId: string; correlationId: string } }

const recorder = (status: (fileId: number) => 'pending' | 'done' | 'gone' = () => 'pending') => {
  const records: Recorded[] = [];
  const port: ExtractionRecorder = {
    status: async (fileId) => status(fileId),
    record: async (fileId, blobKey, report, cause) => { records.push({ fileId, blobKey, report, cause }); },
  };
  return { port, records };
};

describe('text extractor: event handler', () => {
  let dir: string;
  let extractor: Extractor;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'docshare-extractor-'));
    extractor = makeExtractor({ timeoutMs: 20_000, memoryMb: 256, maxChars: 1_000, maxBytes: 1_000_000 });
  });
  after(async () => {
    await extractor.close();
    await rm(dir, { recursive: true, force: true });
  });

  const store = async (files: Record<string, string>) => {
    const blobs = await makeFsBlobStore(join(dir, `b${Math.random().toString(16).slice(2)}`));
    for (const [key, text] of Object.entries(files)) await blobs.put(key, Readable.from([Buffer.from(text)]), Buffer.byteLength(text), 'text/plain');
    return blobs;
  };

  it('records the text of each pending upload, caused by its upload event; ignores every other event', async () => {
    const h = makeHistory();
    h.user(1, 'Ada');
    h.upload(10, 1, 'notes', { blobKey: 'f10', originalFileName: 'notes.txt', contentType: 'text/plain', size: 24 });
    h.view(10, 1);
    h.upload(11, 1, 'page', { blobKey: 'f11', originalFileName: 'page.html', contentType: 'text/html', size: 40 });
    const blobs = await store({ f10: 'The zeppelin landed late', f11: '<p>A <b>bold</b> paragraph here</p>' });
    const { port, records } = recorder();
    await settle({ blobs, extractor, recorder: port, logger, maxBytes: 1_000_000 })(h.records);
    assert.deepEqual(records.map((r) => [r.fileId, r.blobKey, r.report.ok, r.report.format]), [[10, 'f10', true, 'text'], [11, 'f11', true, 'html']]);
    const [first, second] = records;
    assert.equal(first?.report.ok && first.report.text, 'The zeppelin landed late');
    assert.match(second?.report.ok ? second.report.text : '', /A bold paragraph here/);
    const upload = h.records.find((r) => r.event.type === 'docs.file.uploaded.v1')!.event;
    assert.deepEqual(first?.cause, { eventId: upload.id, correlationId: upload.correlationid });
  });

  it('skips files already done or gone, and a file whose bytes are gone', async () => {
    const h = makeHistory();
    h.upload(20, 1, 'a', { blobKey: 'f20' }); h.upload(21, 1, 'b', { blobKey: 'f21' }); h.upload(22, 1, 'c', { blobKey: 'f22-missing' });
    const blobs = await store({ f20: 'done already', f21: 'deleted meanwhile' });
    const { port, records } = recorder((id) => (id === 20 ? 'done' : id === 21 ? 'gone' : 'pending'));
    await settle({ blobs, extractor, recorder: port, logger, maxBytes: 1_000_000 })(h.records);
    assert.deepEqual(records, []);
  });

  it('records too_large without reading a file over the limit, and unsupported_type for an unknown format', async () => {
    const h = makeHistory();
    h.upload(30, 1, 'big', { blobKey: 'f30', size: 5_000, originalFileName: 'big.txt' });
    h.upload(31, 1, 'bin', { blobKey: 'f31', size: 4, originalFileName: 'x.bin', contentType: 'application/octet-stream' });
    const blobs = await store({ f31: '\u0000\u0001\u0002\u0003' });
    const { port, records } = recorder();
    await settle({ blobs, extractor, recorder: port, logger, maxBytes: 1_000 })(h.records);
    assert.deepEqual(records.map((r) => [r.fileId, r.report.ok ? 'ok' : r.report.reason]), [[30, 'too_large'], [31, 'unsupported_type']]);
  });

  it('fails the batch when docs-command cannot take the record (the bus then retries it)', async () => {
    const h = makeHistory();
    h.upload(40, 1, 'x', { blobKey: 'f40', size: 5 });
    const blobs = await store({ f40: 'hello' });
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const port: ExtractionRecorder = { status: async () => 'pending', record: async () => { throw down; } };
    await assert.rejects(settle({ blobs, extractor, recorder: port, logger, maxBytes: 1_000 })(h.records), down);
  });
});

/**
 * An extractor whose files end when the test says so (`finish(name)`, the file's text being its
 * name): the two groups' handlers are checked on what they start and record, with no time involved.
 */
const heldExtractor = () => {
  const running = new Map<string, (outcome: ExtractOutcome) => void>();
  let closed = false;
  const extractor: Extractor = {
    extract: (bytes) => new Promise<ExtractOutcome>((resolve) => {
      const name = Buffer.from(bytes).toString();
      if (closed) resolve({ ok: false, format: 'text', reason: 'error', detail: 'extractor closed', durationMs: 0 });
      else running.set(name, resolve);
    }),
    close: async () => {
      closed = true;
      for (const resolve of running.values()) resolve({ ok: false, format: 'text', reason: 'error', detail: 'extractor closed', durationMs: 0 });
      running.clear();
    },
    stats: () => ({ children: running.size, busy: running.size, queued: 0, settled: 0, spawned: 0, peakChildRssBytes: 0 }),
  };
  const finish = (name: string, outcome: 'ok' | 'timeout' = 'ok'): void => {
    const resolve = running.get(name);
    assert.ok(resolve, `${name} is not being extracted (running: ${[...running.keys()].join(', ')})`);
    running.delete(name);
    resolve(outcome === 'ok'
      ? { ok: true, format: 'text', extractor: 'held@1', text: name, characters: name.length, truncated: false, language: null, durationMs: 1 }
      : { ok: false, format: 'text', reason: 'timeout', detail: 'no text within the budget', durationMs: 1 });
  };
  return { extractor, finish, running: () => [...running.keys()].sort() };
};

/** Polls until `condition` holds (bounded by the test's timeout). */
const until = async (condition: () => boolean): Promise<void> => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('text extractor: the intake and the settling group', { timeout: 30_000 }, () => {
  let dir: string;
  let blobs: Awaited<ReturnType<typeof makeFsBlobStore>>;
  const h = makeHistory();
  // A (owner 1) uploads five files, then B (owner 2) one.
  const names: Record<number, string> = { 50: 'a1', 51: 'a2', 52: 'a3', 53: 'a4', 54: 'a5', 60: 'b1' };
  for (const [fileId, name] of Object.entries(names)) h.upload(Number(fileId), Number(fileId) < 60 ? 1 : 2, name, { blobKey: name, size: name.length });
  const records = h.records;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'docshare-intake-'));
    blobs = await makeFsBlobStore(dir);
    for (const name of Object.values(names)) await blobs.put(name, Readable.from([Buffer.from(name)]), name.length, 'text/plain');
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  const recorded = (port: { records: Recorded[] }): string[] => port.records.map((r) => (r.report.ok ? r.report.text : `${r.fileId}:${r.report.ok}`));

  it('the intake takes up at most ownerBacklog files of an owner and resolves without waiting; the rest are left for the settling group, in order', async () => {
    const held = heldExtractor();
    const done = new Set<number>();
    const port = recorder((id) => (done.has(id) ? 'done' : 'pending'));
    const record = port.port.record;
    port.port.record = async (fileId, ...rest) => {
      done.add(fileId);
      await record(fileId, ...rest);
    };
    const work = makeExtractionWork({ blobs, extractor: held.extractor, recorder: port.port, logger, maxBytes: 1_000, concurrency: 1, ownerBacklog: 2 });
    await work.takeUp(records);
    assert.equal(work.stats().taken, 3, 'two of A\'s files and B\'s');
    await until(() => held.running().length === 1);
    assert.deepEqual(held.running(), ['a1']);
    held.finish('a1');
    await until(() => held.running().length === 1);
    assert.deepEqual(held.running(), ['b1'], 'B\'s file comes before A\'s second');
    held.finish('b1');
    await until(() => held.running()[0] === 'a2');
    held.finish('a2');
    await until(() => work.stats().taken === 0);
    assert.deepEqual(recorded(port), ['a1', 'b1', 'a2'], 'a3..a5 were over A\'s backlog: not taken up, not failed');

    // The settling group reaches them: each is done once, the ones done before skipped by their status.
    const settling = work.settle(records);
    for (const name of ['a3', 'a4', 'a5']) {
      await until(() => held.running()[0] === name);
      held.finish(name);
    }
    await settling;
    assert.deepEqual(recorded(port), ['a1', 'b1', 'a2', 'a3', 'a4', 'a5']);
  });

  it('a file both groups see is extracted once; the settling group waits for the intake\'s work', async () => {
    const held = heldExtractor();
    const port = recorder();
    const work = makeExtractionWork({ blobs, extractor: held.extractor, recorder: port.port, logger, maxBytes: 1_000, concurrency: 2 });
    const [first] = records;
    await work.takeUp([first!]);
    await until(() => held.running().length === 1);
    let settled = false;
    const settling = work.settle([first!]).then(() => { settled = true; });
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(settled, false, 'the settling group does not acknowledge a file still being read');
    assert.deepEqual(held.running(), ['a1'], 'not started twice');
    held.finish('a1');
    await settling;
    assert.deepEqual(recorded(port), ['a1']);
  });

  it('a repeat offender is demoted: after two files over budget, another owner\'s files go first', async () => {
    const held = heldExtractor();
    const port = recorder();
    const work = makeExtractionWork({ blobs, extractor: held.extractor, recorder: port.port, logger, maxBytes: 1_000, concurrency: 1 });
    await work.takeUp(records.slice(0, 3));
    await until(() => held.running()[0] === 'a1');
    held.finish('a1', 'timeout');
    await until(() => held.running()[0] === 'a2');
    await work.takeUp(records.slice(5));
    held.finish('a2', 'timeout');
    await until(() => held.running().length === 1);
    assert.deepEqual(held.running(), ['b1']);
    assert.equal(work.stats().demoted, 1);
    held.finish('b1');
    await until(() => held.running()[0] === 'a3');
    held.finish('a3');
    await until(() => work.stats().taken === 0);
  });

  it('close abandons the files in hand: nothing is recorded for them and the settling group\'s batch fails (not acknowledged)', async () => {
    const held = heldExtractor();
    const port = recorder();
    const work = makeExtractionWork({ blobs, extractor: held.extractor, recorder: port.port, logger, maxBytes: 1_000, concurrency: 1 });
    const settling = work.settle(records);
    await until(() => held.running().length === 1);
    await work.close();
    await assert.rejects(settling, (error: Error) => error instanceof ExtractionStopped);
    assert.deepEqual(port.records, [], 'neither the file being read ("extractor closed") nor those waiting were recorded');
    await assert.rejects(work.settle(records), (error: Error) => error instanceof ExtractionStopped);
  });
});
